"""Reading what a screenshot shows: a PNG decoder (8-bit RGB and RGBA, every filter type; stdlib
zlib and numpy) and the questions the browser tests ask of a picture - how many separate marks of
one colour it holds (:func:`count_blobs`), and whether it holds anything at all (:func:`is_blank`).
"""

from __future__ import annotations

import struct
import zlib
from collections import deque

import numpy as np

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {2: 3, 6: 4}  # PNG colour type -> samples per pixel (RGB, RGBA)
# Components smaller than this are anti-aliasing fringes (a line's edge blended towards the
# colour), not marks.
MIN_BLOB_PIXELS = 4


class PNGError(ValueError):
    pass


def decode(png: bytes) -> np.ndarray:
    """The image as a ``(height, width, channels)`` array of uint8 (3 channels: RGB, 4: RGBA)."""
    if not png.startswith(SIGNATURE):
        raise PNGError("not a PNG (no signature)")
    width = height = channels = 0
    compressed = bytearray()
    offset = len(SIGNATURE)
    while offset < len(png):
        if offset + 8 > len(png):
            raise PNGError(f"chunk header cut short at byte {offset}")
        length, kind = struct.unpack(">I4s", png[offset:offset + 8])
        data = png[offset + 8:offset + 8 + length]
        if len(data) != length or offset + 12 + length > len(png):
            raise PNGError(f"chunk {kind!r} cut short at byte {offset}")
        crc = struct.unpack(">I", png[offset + 8 + length:offset + 12 + length])[0]
        if zlib.crc32(kind + data) != crc:
            raise PNGError(f"chunk {kind!r} at byte {offset} fails its CRC")
        offset += 12 + length
        if kind == b"IHDR":
            width, height, channels = _header(data)
        elif kind == b"IDAT":
            compressed += data
        elif kind == b"IEND":
            break
    if not channels:
        raise PNGError("no IHDR chunk")
    try:
        raw = zlib.decompress(bytes(compressed))
    except zlib.error as error:
        raise PNGError(f"image data does not inflate: {error}") from error
    stride = width * channels
    if len(raw) != height * (stride + 1):
        raise PNGError(f"image data holds {len(raw)} bytes, {height} rows of {stride + 1} expected")
    return _unfilter(raw, height, stride, channels).reshape(height, width, channels)


def _header(data: bytes) -> tuple[int, int, int]:
    if len(data) != 13:
        raise PNGError("IHDR is not 13 bytes")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(">IIBBBBB", data)
    if depth != 8 or colour not in CHANNELS:
        raise PNGError(f"only 8-bit RGB and RGBA are read (bit depth {depth}, colour type {colour})")
    if compression or filtering or interlace:
        raise PNGError("only non-interlaced PNGs with the standard compression and filtering are read")
    if not width or not height:
        raise PNGError("an empty image")
    return width, height, CHANNELS[colour]


def _unfilter(raw: bytes, height: int, stride: int, bpp: int) -> np.ndarray:
    """Undoes the per-row filters (PNG spec 9.2). None, Sub and Up are whole-row numpy operations;
    Average and Paeth depend on the byte just decoded to their left and go byte by byte."""
    rows = np.frombuffer(raw, dtype=np.uint8).reshape(height, stride + 1)
    out = np.zeros((height, stride), dtype=np.uint8)
    prior = np.zeros(stride, dtype=np.uint8)
    for y in range(height):
        kind, line = rows[y, 0], rows[y, 1:]
        if kind == 0:
            out[y] = line
        elif kind == 1:  # Sub: a running sum per channel, modulo 256
            out[y] = np.cumsum(line.reshape(-1, bpp), axis=0, dtype=np.uint8).reshape(-1)
        elif kind == 2:  # Up
            out[y] = line + prior
        elif kind in (3, 4):
            out[y] = np.frombuffer(_left_dependent(kind, line.tobytes(), prior.tobytes(), bpp), dtype=np.uint8)
        else:
            raise PNGError(f"row {y} has filter type {kind} (0-4 exist)")
        prior = out[y]
    return out


def _left_dependent(kind: int, line: bytes, prior: bytes, bpp: int) -> bytearray:
    out = bytearray(len(line))
    for i, value in enumerate(line):
        left = out[i - bpp] if i >= bpp else 0
        up = prior[i]
        if kind == 3:  # Average
            out[i] = (value + ((left + up) >> 1)) & 0xFF
            continue
        up_left = prior[i - bpp] if i >= bpp else 0  # Paeth
        estimate = left + up - up_left
        to_left, to_up, to_up_left = abs(estimate - left), abs(estimate - up), abs(estimate - up_left)
        if to_left <= to_up and to_left <= to_up_left:
            predictor = left
        elif to_up <= to_up_left:
            predictor = up
        else:
            predictor = up_left
        out[i] = (value + predictor) & 0xFF
    return out


def _matching(image: np.ndarray, colour: tuple[int, ...], tolerance: int) -> np.ndarray:
    """Pixels within ``tolerance`` of ``colour`` in every channel. An RGB colour asked of an RGBA
    image also asks for opacity (alpha within ``tolerance`` of 255)."""
    if len(colour) == 3 and image.shape[2] == 4:
        colour = (*colour, 255)
    if len(colour) != image.shape[2]:
        raise ValueError(f"a colour of {len(colour)} channels asked of an image of {image.shape[2]}")
    distance = np.abs(image.astype(np.int16) - np.array(colour, dtype=np.int16))
    mask: np.ndarray = distance.max(axis=2) <= tolerance
    return mask


def count_blobs(png: bytes, colour: tuple[int, ...], tolerance: int = 0, min_pixels: int = MIN_BLOB_PIXELS,
                connectivity: int = 8) -> int:
    """How many connected regions of ``colour`` (within ``tolerance`` per channel) the picture
    holds, regions of fewer than ``min_pixels`` pixels not counted. ``connectivity``: 4 (pixels
    that share an edge) or 8 (a corner too)."""
    return len(blob_sizes(png, colour, tolerance, min_pixels, connectivity))


def blob_sizes(png: bytes, colour: tuple[int, ...], tolerance: int = 0, min_pixels: int = MIN_BLOB_PIXELS,
               connectivity: int = 8) -> list[int]:
    """The pixel counts of the regions :func:`count_blobs` counts, in the order they are met
    (row by row from the top left)."""
    if connectivity not in (4, 8):
        raise ValueError(f"connectivity is 4 or 8, not {connectivity}")
    mask = _matching(decode(png), colour, tolerance)
    steps = [(-1, 0), (1, 0), (0, -1), (0, 1)]
    if connectivity == 8:
        steps += [(-1, -1), (-1, 1), (1, -1), (1, 1)]
    height, width = mask.shape
    unseen = mask.copy()
    sizes = []
    for start_y, start_x in np.argwhere(mask):
        if not unseen[start_y, start_x]:
            continue
        unseen[start_y, start_x] = False
        queue, size = deque([(int(start_y), int(start_x))]), 0
        while queue:
            y, x = queue.popleft()
            size += 1
            for dy, dx in steps:
                ny, nx = y + dy, x + dx
                if 0 <= ny < height and 0 <= nx < width and unseen[ny, nx]:
                    unseen[ny, nx] = False
                    queue.append((ny, nx))
        if size >= min_pixels:
            sizes.append(size)
    return sizes


def is_blank(png: bytes) -> bool:
    """The picture is one colour only (every pixel the same, alpha included)."""
    image = decode(png)
    flat = image.reshape(-1, image.shape[2])
    return bool((flat == flat[0]).all())
