# One image for both parties: `pobo-curator` (the service and its admin commands) and `pobo-modeler`.
# Layers from the least to the most often changed: the locked dependencies are installed before any of the
# project's code is copied, so a code change rebuilds only the last layers.
# The base image pinned by digest (a tag can be moved); BASE_IMAGE is overridden only where base images cannot be
# pulled (tools/image/check_image.sh builds on a stand-in, tools/image/standin_base.sh).
ARG BASE_IMAGE=python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7
FROM ${BASE_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    NUMBA_CACHE_DIR=/tmp/numba \
    MPLCONFIGDIR=/tmp/matplotlib

# /data: the embedded database; /out: the demo's hand-off; /tls: the job cluster's certificates (compose's volumes).
RUN useradd --create-home --uid 10001 pobo && mkdir -p /data /out /tls && chown pobo:pobo /data /out /tls \
    && chmod 0700 /tls

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

# Run as an unprivileged user; the curator's embedded database (when no POBO_DATABASE_URL) lives in /data. The
# compiled-code and plot caches go to /tmp: compose runs every container with a read-only root and /tmp on tmpfs.
USER pobo
ENV POBO_DATA_DIR=/data
VOLUME ["/data"]
EXPOSE 8000

HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=5 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/ready', timeout=2)"]
CMD ["pobo-curator", "serve", "--host", "0.0.0.0", "--port", "8000"]
