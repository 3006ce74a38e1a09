#!/usr/bin/env bash
# Builds the project's image from its Dockerfile and runs it as docker-compose wires it, without a Docker
# engine: buildah with chroot isolation (`podman run` cannot set rlimits on these machines). The curator
# starts from the image as user pobo on loopback against a PostgreSQL server that requires the password
# (scram-sha-256), with its secrets passed as files under /run/secrets, and sends its jobs to the compose file's
# Dask scheduler and worker, also from the image; then the compose file's demo runs from
# the same image against it as its two parties (curator-setup, with the admin token, writes the hand-off;
# modeler-demo, without any secret, reads it and runs GP-UCB), and the result is checked.
# Usage (root): tools/image/check_image.sh   — needs buildah, debootstrap and PostgreSQL's binaries.
set -euo pipefail
cd "$(dirname "$0")/../.."
IMAGE=localhost/pobo:latest
PY=${PY:-.venv/bin/python}
WORK=$(mktemp -d /tmp/pobo-image.XXXXXX)
chmod 0711 "$WORK"  # postgres and the image's user pobo traverse it; only root lists it
SERVICES=() PGBIN="" PGDATA="$WORK/pg"  # SERVICES: the PIDs of the long-running services, in start order
cleanup() {
  set +e  # every step runs, whatever the previous one returned
  for (( i=${#SERVICES[@]}-1; i>=0; i-- )); do kill "${SERVICES[i]}" 2>/dev/null && wait "${SERVICES[i]}" 2>/dev/null; done
  [ -f "$WORK/containers" ] && xargs -r buildah rm <"$WORK/containers" >/dev/null 2>&1
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

# Every service below runs from the image as compose wires it (tools/image/compose_service.py: its environment,
# only its own secrets, its volumes, its entrypoint and command), with service names and ports rewritten to
# loopback (chroot isolation shares the host's network).
PORT=$("$PY" -c "from curator_service.testing import free_port; print(free_port())")
DASK_PORT=$("$PY" -c "from curator_service.testing import free_port; print(free_port())")
REWRITE=(--secrets "$WORK/secrets" --volumes "$WORK/volumes" --sub "postgres:5432=127.0.0.1:$PGPORT"
         --sub "curator:8000=127.0.0.1:$PORT" --sub "dask-scheduler:8786=127.0.0.1:$DASK_PORT"
         --sub "0.0.0.0=127.0.0.1" --token "8000=$PORT" --token "8786=$DASK_PORT")
mkdir -m 0711 "$WORK/volumes"
compose_command() {  # compose_command SERVICE: sets RUN to the buildah command that runs it in a new container
  local options argv container
  mapfile -t options < <("$PY" tools/image/compose_service.py "$1" options "${REWRITE[@]}")
  mapfile -t argv < <("$PY" tools/image/compose_service.py "$1" argv "${REWRITE[@]}")
  container=$(buildah from --quiet "$IMAGE")
  echo "$container" >>"$WORK/containers"
  step "$1: ${argv[*]}"
  RUN=(buildah run --isolation chroot --user pobo "${options[@]}" "$container" -- "${argv[@]}")
}
compose_run() {  # compose_run SERVICE: runs a one-shot service to its end, its output in $WORK/SERVICE.log
  compose_command "$1"
  "${RUN[@]}" >"$WORK/$1.log" 2>&1 || { tail -n 40 "$WORK/$1.log"; return 1; }
}
compose_start() {  # compose_start SERVICE: starts a long-running service in the background
  compose_command "$1"
  "${RUN[@]}" >"$WORK/$1.log" 2>&1 &
  SERVICES+=($!)
}
wait_for() {  # wait_for SERVICE COMMAND...: until COMMAND succeeds (2 minutes), while SERVICE's process runs
  local service=$1 pid=${SERVICES[-1]}
  shift
  for _ in $(seq 120); do
    "$@" >/dev/null 2>&1 && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 1
  done
  echo "$service never became healthy"; tail -n 40 "$WORK/$service.log"; return 1
}

step "starting the Dask scheduler (127.0.0.1:$DASK_PORT) and worker from the image"
compose_start dask-scheduler
wait_for dask-scheduler "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $DASK_PORT), 2)"
compose_start dask-worker
step "starting the curator from the image on 127.0.0.1:$PORT (PostgreSQL on $PGPORT)"
compose_start curator
wait_for curator curl -fsS "http://127.0.0.1:$PORT/ready"
curl -fsS -H "Authorization: Bearer $(cat "$WORK/secrets/admin_token")" "http://127.0.0.1:$PORT/v1/datasets" >/dev/null
if curl -fsS "http://127.0.0.1:$PORT/v1/datasets" >/dev/null 2>&1; then echo "datasets answered without a token"; exit 1; fi

# The demo as its two parties: the curator's setup (with the admin token) writes the hand-off; the modeler's
# side, to which compose gives no secret at all, reads it and runs GP-UCB against the image's curator.
compose_run curator-setup
compose_run modeler-demo
"$PY" - "$WORK/volumes" "$WORK/secrets/admin_token" <<'EOF'
import json, stat, sys
from pathlib import Path
volumes, admin_token = Path(sys.argv[1]), Path(sys.argv[2]).read_text().strip()
handoff = volumes / "demo-handoff" / "demo.json"
mode = handoff.stat()
assert stat.S_IMODE(mode.st_mode) == 0o600 and mode.st_uid == 10001, f"hand-off {oct(mode.st_mode)} uid {mode.st_uid}"
assert admin_token not in handoff.read_text(), "the admin token is in the hand-off"
out = volumes / "demo-output"
runs = sorted(out.glob("run-release-*.json"))
plots = sorted(out.glob("demo-*.png"))
assert len(runs) >= 4 and len(plots) == 2, (runs, plots)
for run in runs:
    record = json.loads(run.read_text())
    answered = [query for query in record["queries"] if query["status"] == "done" and query["value"] is not None]
    assert record["finished"] and len(answered) == record["settings"]["iterations"], (run.name, len(answered))
print(f"image: curator-setup wrote a 0600 hand-off; modeler-demo (no secrets) finished {len(runs)} runs against "
      f"the image's curator on PostgreSQL, {len(plots)} plots")
EOF
# The demo's releases are jobs: they must have run on the compose file's cluster, not an embedded one. (-W ignore:
# this client's Python and pandas differ from the image's, which Dask warns about at length.)
"$PY" -W ignore - "$DASK_PORT" <<'EOF'
import sys
from distributed import Client
with Client(f"tcp://127.0.0.1:{sys.argv[1]}", timeout="20s") as client:
    workers = len(client.scheduler_info()["workers"])
    prefixes = client.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
assert workers == 2 and prefixes, f"{workers} workers, task prefixes {prefixes}"
print(f"image: the scheduler from the image ran the curator's jobs ({', '.join(prefixes)}) on {workers} workers")
EOF
