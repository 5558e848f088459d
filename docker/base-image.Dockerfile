# Not built. Dependabot's docker ecosystem reads FROM lines only, never an ARG default, so the
# Dockerfile's `ARG BASE_IMAGE=` pin is copied here for it to watch. When Dependabot moves this
# digest, `tools/pin-base-image --sync` carries it into the Dockerfile (tests/shells/test_image_pins.py
# fails until the two agree); `tools/pin-base-image` writes both.
FROM python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
