# One image for both parties: `pobo-curator` (the service and its admin commands) and `pobo-modeler`.
# Layers from the least to the most often changed: the locked dependencies are installed before any of the
# project's code is copied, so a code change rebuilds only the last layers.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN useradd --create-home --uid 10001 pobo && mkdir -p /data /out && chown pobo:pobo /data /out

WORKDIR /app
# Every dependency (and the build backend) pinned with its hashes: `make lock` regenerates the file.
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock

COPY pyproject.toml README.md ./
COPY shared ./shared
COPY curator_service ./curator_service
COPY modeler_client ./modeler_client
COPY examples ./examples
# The project itself only: its dependencies are the locked ones above.
RUN pip install --no-deps --no-build-isolation .

# Run as an unprivileged user; the curator's embedded database (when no POBO_DATABASE_URL) lives in /data.
USER pobo
ENV POBO_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=5 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=2)"]
CMD ["pobo-curator", "serve", "--host", "0.0.0.0", "--port", "8000"]
