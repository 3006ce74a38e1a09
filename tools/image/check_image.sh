#!/usr/bin/env bash
# Builds the project's image from its Dockerfile and runs it as docker-compose wires it, without a Docker
# engine: buildah with chroot isolation (`podman run` cannot set rlimits on these machines). The curator
# starts from the image as user pobo on loopback against a PostgreSQL server that requires the password
# (scram-sha-256), with both secrets passed as files under /run/secrets; then the compose file's modeler-demo
# entrypoint and command run from the same image against it, and the result is checked.
# Usage (root): tools/image/check_image.sh   — needs buildah, debootstrap and PostgreSQL's binaries.
set -euo pipefail
cd "$(dirname "$0")/../.."
IMAGE=localhost/pobo:latest
PY=${PY:-.venv/bin/python}
WORK=$(mktemp -d /tmp/pobo-image.XXXXXX)
chmod 0711 "$WORK"  # postgres and the image's user pobo traverse it; only root lists it
CURATOR_PID="" CONTAINER="" PGBIN="" PGDATA="$WORK/pg"
cleanup() {
  set +e  # every step runs, whatever the previous one returned
  [ -n "$CURATOR_PID" ] && kill "$CURATOR_PID" 2>/dev/null && wait "$CURATOR_PID" 2>/dev/null
  [ -n "$CONTAINER" ] && buildah rm "$CONTAINER" >/dev/null 2>&1
  [ -n "$PGBIN" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { echo "image: $*"; }

tools/image/standin_base.sh
# The machine's CA bundle is mounted for the build only (pip reaches PyPI through it); it is not in the image.
step "building $IMAGE"
buildah bud --quiet --layers --isolation chroot \
  --volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
  -t "$IMAGE" . >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log"; exit 1; }
step "built: $(buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$IMAGE")"

# Secrets as compose mounts them.
mkdir -m 0711 "$WORK/secrets"
"$PY" -c "import secrets; print(secrets.token_urlsafe(32))" >"$WORK/secrets/admin_token"
"$PY" -c "import secrets; print(secrets.token_urlsafe(32))" >"$WORK/secrets/postgres_password"
chmod 0444 "$WORK/secrets/"*  # readable by the image's uid 10001, in a directory nobody else can list

# PostgreSQL on loopback, password required over TCP, with the compose file's user and database.
PGBIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")
PGPORT=$("$PY" -c "from curator_service.testing import free_port; print(free_port())")
mkdir "$PGDATA" && chown postgres "$PGDATA"
runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" --auth-local=trust --auth-host=scram-sha-256 -U postgres >/dev/null
runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -o "-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1" -w \
  -l "$PGDATA/log" start >/dev/null
runuser -u postgres -- psql -q -h /tmp -p "$PGPORT" -U postgres \
  -c "CREATE ROLE pobo LOGIN PASSWORD '$(cat "$WORK/secrets/postgres_password")'" -c "CREATE DATABASE pobo OWNER pobo"

# The curator service from the image, as compose's `curator` (loopback instead of 0.0.0.0: chroot isolation
# shares the host's network).
PORT=$("$PY" -c "from curator_service.testing import free_port; print(free_port())")
CONTAINER=$(buildah from --quiet "$IMAGE")
step "starting the curator from the image on 127.0.0.1:$PORT (PostgreSQL on $PGPORT)"
buildah run --isolation chroot --user pobo \
  --volume "$WORK/secrets:/run/secrets:ro" \
  --env POBO_DATABASE_URL="postgresql+psycopg://pobo@127.0.0.1:$PGPORT/pobo" \
  --env POBO_DATABASE_PASSWORD_FILE=/run/secrets/postgres_password \
  --env POBO_ADMIN_TOKEN_FILE=/run/secrets/admin_token \
  --env POBO_MODE=production --env POBO_ALLOW_UNCERTIFIED_MECHANISMS=false \
  "$CONTAINER" -- pobo-curator serve --host 127.0.0.1 --port "$PORT" >"$WORK/curator.log" 2>&1 &
CURATOR_PID=$!
for _ in $(seq 120); do
  curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null 2>&1 && break
  kill -0 "$CURATOR_PID" 2>/dev/null || { tail -n 40 "$WORK/curator.log"; exit 1; }
  sleep 1
done
curl -fsS "http://127.0.0.1:$PORT/ready" >/dev/null || { echo "curator never became healthy"; tail -n 40 "$WORK/curator.log"; exit 1; }
curl -fsS -H "Authorization: Bearer $(cat "$WORK/secrets/admin_token")" "http://127.0.0.1:$PORT/v1/datasets" >/dev/null
if curl -fsS "http://127.0.0.1:$PORT/v1/datasets" >/dev/null 2>&1; then echo "datasets answered without a token"; exit 1; fi

# The compose file's modeler-demo, entrypoint and command, from the same image, against that curator.
mapfile -t DEMO < <("$PY" - "$PORT" <<'EOF'
import sys, yaml
service = yaml.safe_load(open("docker-compose.yml"))["services"]["modeler-demo"]
for token in service.get("entrypoint", []) + service["command"]:
    print(token.replace("$$", "$").replace("http://curator:8000", f"http://127.0.0.1:{sys.argv[1]}"))
EOF
)
mkdir -m 0777 "$WORK/out"
step "running the compose modeler-demo: ${DEMO[*]}"
DEMO_CONTAINER=$(buildah from --quiet "$IMAGE")
if ! buildah run --isolation chroot --user pobo --volume "$WORK/secrets:/run/secrets:ro" --volume "$WORK/out:/out" \
    "$DEMO_CONTAINER" -- "${DEMO[@]}" >"$WORK/demo.log" 2>&1; then
  buildah rm "$DEMO_CONTAINER" >/dev/null; tail -n 40 "$WORK/demo.log"; exit 1
fi
buildah rm "$DEMO_CONTAINER" >/dev/null
"$PY" - "$WORK/out" <<'EOF'
import json, sys
from pathlib import Path
out = Path(sys.argv[1])
runs = sorted(out.glob("run-release-*.json"))
plots = sorted(out.glob("demo-*.png"))
assert len(runs) >= 4 and len(plots) == 2, (runs, plots)
for run in runs:
    record = json.loads(run.read_text())
    answered = [query for query in record["queries"] if query["status"] == "done" and query["value"] is not None]
    assert record["finished"] and len(answered) == record["settings"]["iterations"], (run.name, len(answered))
print(f"image: modeler-demo finished {len(runs)} runs against the image's curator on PostgreSQL, {len(plots)} plots")
EOF
