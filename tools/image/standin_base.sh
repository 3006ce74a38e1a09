#!/usr/bin/env bash
# A stand-in for docker.io/library/python:3.11-slim where base images cannot be pulled: Debian bookworm
# from the mirror apt is configured with (debootstrap), with Debian's python3 (3.11) and pip, tagged under
# the official name so the project's Dockerfile builds unchanged. Debian's pip refuses to install into the
# system Python unless PIP_BREAK_SYSTEM_PACKAGES=1 (PEP 668), which the official image does not need.
# Usage: tools/image/standin_base.sh   (root; needs debootstrap and buildah; idempotent)
set -euo pipefail
IMAGE=docker.io/library/python:3.11-slim
if buildah inspect --type image "$IMAGE" >/dev/null 2>&1; then
  echo "standin_base: $IMAGE already present"; exit 0
fi
MIRROR=${POBO_DEBIAN_MIRROR:-$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -n 1)}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
ROOTFS=$(mktemp -d /tmp/pobo-standin.XXXXXX)
trap 'rm -rf "$ROOTFS"' EXIT
debootstrap --variant=minbase --include=python3,python3-pip,python-is-python3,ca-certificates \
  bookworm "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 || { tail -n 30 "$ROOTFS.log"; exit 1; }
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/*
container=$(buildah from scratch)
buildah copy --quiet "$container" "$ROOTFS" / >/dev/null
buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env PIP_BREAK_SYSTEM_PACKAGES=1 --env LANG=C.UTF-8 --cmd python3 "$container"
buildah commit --quiet "$container" "$IMAGE" >/dev/null
buildah rm "$container" >/dev/null
rm -f "$ROOTFS.log"
echo "standin_base: built $IMAGE from Debian bookworm ($MIRROR)"
