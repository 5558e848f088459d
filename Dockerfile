# The gate only: a team's own retrieval runs in earlier steps (retrieval-gate plan) or, with the
# command runner, where the gate is pip-installed beside the stack.
# BASE_IMAGE: the official image by default; the container suite hands in a stand-in built
# from Debian packages where Docker Hub cannot be reached.
ARG BASE_IMAGE=python:3.11-slim
FROM ${BASE_IMAGE}
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
COPY . /app
RUN pip install --no-cache-dir /app
# Exec form, Python directly: /bin/sh would drop INPUT_* variables whose names contain hyphens.
# No USER or WORKDIR: the runner mounts the workspace and sets the working directory itself.
ENTRYPOINT ["python", "/app/entrypoint.py"]
