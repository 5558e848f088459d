# The gate only: a team's own retrieval runs in earlier steps (retrieval-gate plan) or, with the
# command runner, where the gate is pip-installed beside the stack.
#
# Everything the image is made of is pinned (docs/image.md):
# BASE_IMAGE: the official python:3.11-slim-bookworm by its multi-arch index digest (linux/amd64
# and linux/arm64 alike), so a rebuild never picks up a moved tag. The first digest pinned here,
# sha256:a36c24f9..., was not resolved on the machine that wrote this line (Docker Hub is out of
# its reach): it is the index digest that many public Dockerfiles and notes on GitHub pin for
# python:3.11-slim-bookworm (Python 3.11.16), one of them resolved with `docker buildx imagetools
# inspect` on 2026-09-24. `tools/pin-base-image` resolves the tag's digest anew and rewrites this
# line; Dependabot proposes new digests in docker/base-image.Dockerfile (it cannot read an ARG),
# and `tools/pin-base-image --sync` carries them here. The container suite hands in a stand-in
# built from Debian packages instead (--build-arg BASE_IMAGE), where Docker Hub cannot be reached.
ARG BASE_IMAGE=python:3.11-slim-bookworm@sha256:a36c24f9cbdf4fd0f52d67f0823eeac19c2028c637cecc392d97f980d4fec56b
FROM ${BASE_IMAGE}
# apt: git is not pinned to an exact Debian version on purpose. The bookworm archive keeps only
# the current version of a package: when a security update replaces git, `git=<old version>` no
# longer installs and every build (every job that builds from this Dockerfile) breaks, for an
# update we want. What the pin would buy, the same bytes every time, the prebuilt image of a
# release gives: it is built once and pulled by digest, so its git is frozen with it.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
# Python: every package, the build backend included, from a lock with hashes (tools/lock-image-deps
# writes it from pyproject.toml); pip refuses any file whose hash the lock does not list, and any
# package the lock does not pin. The gate itself then goes in without resolving anything.
COPY docker/requirements.lock /tmp/requirements.lock
RUN pip install --no-cache-dir --disable-pip-version-check --require-hashes -r /tmp/requirements.lock \
 && rm /tmp/requirements.lock
COPY . /app
RUN pip install --no-cache-dir --disable-pip-version-check --no-deps --no-build-isolation /app \
 && pip check
# Exec form, Python directly: /bin/sh would drop INPUT_* variables whose names contain hyphens.
# No USER or WORKDIR: the runner mounts the workspace and sets the working directory itself.
ENTRYPOINT ["python", "/app/entrypoint.py"]
