"""The PNG reader and the blob counter on pictures made here: a small encoder that filters each
row with the filter type it is told (the reader must undo all five), and images drawn pixel by
pixel so that the right count is known."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest

from tests.browser import png as reader


def _paeth(left: int, up: int, up_left: int) -> int:
    estimate = left + up - up_left
    distances = [abs(estimate - left), abs(estimate - up), abs(estimate - up_left)]
    return (left, up, up_left)[distances.index(min(distances))]


def _filtered(kind: int, row: bytes, prior: bytes, bpp: int) -> bytes:
    """One row as an encoder writes it with filter ``kind`` (PNG spec 9.2, the forward direction)."""
    out = bytearray()
    for i, value in enumerate(row):
        left = row[i - bpp] if i >= bpp else 0
        up_left = prior[i - bpp] if i >= bpp else 0
        predictor = (0, left, prior[i], (left + prior[i]) // 2, _paeth(left, prior[i], up_left))[kind]
        out.append((value - predictor) % 256)
    return bytes(out)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def encode(image: np.ndarray, filters: list[int] | None = None, depth: int = 8,
           colour_type: int | None = None) -> bytes:
    """``image`` (height, width, 3 or 4 uint8) as a PNG; row ``y`` filtered with
    ``filters[y % len(filters)]`` (all five in turn by default)."""
    height, width, channels = image.shape
    filters = filters or [0, 1, 2, 3, 4]
    rows, prior = bytearray(), bytes(width * channels)
    for y in range(height):
        row = image[y].astype(np.uint8).tobytes()
        kind = filters[y % len(filters)]
        rows += bytes([kind]) + _filtered(kind, row, prior, channels)
        prior = row
    colour = colour_type if colour_type is not None else {3: 2, 4: 6}[channels]
    header = struct.pack(">IIBBBBB", width, height, depth, colour, 0, 0, 0)
    data = zlib.compress(bytes(rows))
    # Two IDAT chunks: the reader must join them.
    return reader.SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", data[:7]) + _chunk(b"IDAT", data[7:]) \
        + _chunk(b"IEND", b"")


@pytest.mark.parametrize("channels", [3, 4])
@pytest.mark.parametrize("filters", [[0], [1], [2], [3], [4], [4, 3, 2, 1, 0]],
                         ids=lambda f: "filters" + "".join(map(str, f)))
def test_every_filter_type_reads_back_the_pixels_written(channels, filters):
    image = np.random.default_rng(36).integers(0, 256, size=(9, 13, channels), dtype=np.uint8)
    # Smooth stretches too, where the predictors win and wrap-around (mod 256) is exercised.
    image[4:] = np.cumsum(image[4:], axis=1, dtype=np.uint8)
    # And a few values only, where Paeth's predictors tie and its order of preference decides.
    image[:2] = image[:2] % 4 * 10
    decoded = reader.decode(encode(image, filters))
    assert decoded.shape == image.shape
    assert np.array_equal(decoded, image)


def _broken(png: bytes, at: int, replacement: bytes) -> bytes:
    return png[:at] + replacement + png[at + len(replacement):]


GOOD = encode(np.zeros((2, 2, 3), dtype=np.uint8))


@pytest.mark.parametrize(("png", "problem"), [
    (b"GIF89a" + GOOD[6:], "not a PNG"),
    (_broken(GOOD, 16, b"\x00\x00\x00\x03"), "fails its CRC"),  # IHDR's width changed, its CRC not
    (GOOD[:40], "cut short"),
    (encode(np.zeros((2, 2, 3), dtype=np.uint8), depth=16), "only 8-bit RGB and RGBA"),
    (encode(np.zeros((2, 2, 3), dtype=np.uint8), colour_type=3), "only 8-bit RGB and RGBA"),
    (reader.SIGNATURE + _chunk(b"IEND", b""), "no IHDR"),
], ids=["signature", "crc", "truncated", "16-bit", "palette", "no-header"])
def test_what_it_cannot_read_is_refused_with_the_reason(png, problem):
    with pytest.raises(reader.PNGError, match=problem):
        reader.decode(png)


def test_an_unknown_filter_type_is_refused():
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    png = reader.SIGNATURE + _chunk(b"IHDR", header) + _chunk(b"IDAT", zlib.compress(b"\x05abc")) + _chunk(b"IEND", b"")
    with pytest.raises(reader.PNGError, match="filter type 5"):
        reader.decode(png)


RED, BLUE, WHITE = (214, 39, 40), (31, 119, 180), (255, 255, 255)


def _canvas(height: int = 40, width: int = 60) -> np.ndarray:
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[:] = WHITE
    return image


def test_blobs_of_one_colour_are_counted_and_specks_and_other_colours_are_not():
    image = _canvas()
    for top, left in [(2, 2), (2, 20), (20, 40)]:
        image[top:top + 5, left:left + 5] = RED
    image[30:35, 5:10] = BLUE  # another series' colour
    image[38, 58] = RED  # a one-pixel fringe of anti-aliasing
    image[10, 30:32] = RED  # two pixels: still a fringe
    png = encode(image)
    assert reader.count_blobs(png, RED) == 3
    assert sorted(reader.blob_sizes(png, RED)) == [25, 25, 25]
    assert reader.count_blobs(png, RED, min_pixels=1) == 5
    assert reader.count_blobs(png, BLUE) == 1


def test_diagonal_neighbours_are_one_blob_with_8_connectivity_and_two_with_4():
    image = _canvas()
    image[5:10, 5:10] = RED
    image[10:15, 10:15] = RED  # touches the first at a corner only
    png = encode(image)
    assert reader.count_blobs(png, RED, connectivity=8) == 1
    assert reader.count_blobs(png, RED, connectivity=4) == 2
    with pytest.raises(ValueError, match="4 or 8"):
        reader.count_blobs(png, RED, connectivity=6)


def test_tolerance_takes_in_near_colours_per_channel():
    image = _canvas()
    image[5:10, 5:10] = RED
    image[5:10, 30:35] = (RED[0] - 6, RED[1] + 6, RED[2])  # an anti-aliased or colour-managed red
    png = encode(image)
    assert reader.count_blobs(png, RED, tolerance=0) == 1
    assert reader.count_blobs(png, RED, tolerance=5) == 1
    assert reader.count_blobs(png, RED, tolerance=6) == 2


def test_an_rgb_colour_asked_of_an_rgba_image_counts_opaque_pixels_only():
    image = np.zeros((20, 30, 4), dtype=np.uint8)
    image[2:7, 2:7] = (*RED, 255)
    image[2:7, 20:25] = (*RED, 0)  # the same RGB, but transparent
    png = encode(image)
    assert reader.count_blobs(png, RED) == 1
    assert reader.count_blobs(png, (*RED, 0)) == 1


def test_a_picture_of_one_colour_is_blank_and_one_odd_pixel_makes_it_not():
    image = _canvas()
    assert reader.is_blank(encode(image))
    image[39, 59] = (254, 255, 255)
    assert not reader.is_blank(encode(image))
    transparent = np.zeros((4, 4, 4), dtype=np.uint8)
    assert reader.is_blank(encode(transparent))
    transparent[0, 0, 3] = 1
    assert not reader.is_blank(encode(transparent))
