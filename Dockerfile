FROM python:3.11-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends git \
 && rm -rf /var/lib/apt/lists/*
COPY . /app
RUN pip install --no-cache-dir /app
# Exec form: a shell in between would drop INPUT_* variables whose names contain hyphens.
ENTRYPOINT ["python", "/app/entrypoint.py"]
