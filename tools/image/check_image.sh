#!/usr/bin/env bash
# Runs the deployment's documented steps as written, without a Docker engine: the block of docs/deployment.md
# marked `check_image: compose` (tools/image/doc_steps.py takes it out) runs in a scratch copy of the compose files,
# with `docker` standing for the one command it may use, `docker compose [--profile P]... up --build`: build the
# Dockerfile with buildah (chroot isolation; `podman run` cannot set rlimits on these machines) and start the
# services `up` would start, in their depends_on order, each as the compose file wires it
# (tools/image/compose_service.py), the pobo ones from the image as user pobo. Images that cannot be pulled here run
# as the same program from the host: PostgreSQL (password required, scram-sha-256) and Caddy (deploy/Caddyfile).
# Then it checks the demo's result, the TLS front, the job cluster's TLS, and that no container wrote to its root.
# Usage (root): tools/image/check_image.sh   — needs buildah, debootstrap, caddy and PostgreSQL's binaries.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
IMAGE=localhost/pobo:latest
PY=${PY:-.venv/bin/python}
PY=$(cd "$(dirname "$PY")" && pwd)/$(basename "$PY")  # absolute: the documented steps run elsewhere
WORK=$(mktemp -d /tmp/pobo-image.XXXXXX)
chmod 0711 "$WORK"  # postgres and the image's user pobo traverse it; only root lists it
SERVICES=() CONTAINERS=() PGBIN="" PGDATA="$WORK/pg"  # SERVICES: PIDs of the long-running services, in start order
cleanup() {
  set +e  # every step runs, whatever the previous one returned
  for (( i=${#SERVICES[@]}-1; i>=0; i-- )); do kill "${SERVICES[i]}" 2>/dev/null && wait "${SERVICES[i]}" 2>/dev/null; done
  for container in "${CONTAINERS[@]}"; do buildah umount "$container" >/dev/null 2>&1; buildah rm "$container" >/dev/null 2>&1; done
  [ -n "$PGBIN" ] && runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate stop >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
step() { echo "image: $*"; }
free_port() { "$PY" -c "from curator_service.testing import free_port; print(free_port())"; }

# Chroot isolation shares the host's network: service names and ports are rewritten to free ports on loopback.
PGPORT=$(free_port) PORT=$(free_port) DASK_PORT=$(free_port) TLS_PORT=$(free_port)
REWRITE=(--volumes "$WORK/volumes" --sub "postgres:5432=127.0.0.1:$PGPORT" --sub "curator:8000=127.0.0.1:$PORT"
         --sub "127.0.0.1:8000=127.0.0.1:$PORT" --sub "dask-scheduler:8786=127.0.0.1:$DASK_PORT"
         --sub "0.0.0.0=127.0.0.1" --token "8000=$PORT" --token "8786=$DASK_PORT")
mkdir -m 0711 "$WORK/volumes" "$WORK/checkout"
STARTED="$WORK/started"  # files in a container's root newer than this were written while the stack ran

build_image() {
  "$ROOT/tools/image/standin_base.sh"
  # The machine's CA bundle is mounted for the build only (pip reaches PyPI through it); it is not in the image.
  step "building $IMAGE on the stand-in base image"
  buildah bud --quiet --layers --isolation chroot --build-arg BASE_IMAGE=docker.io/library/python:3.11-slim \
    --volume /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro \
    -t "$IMAGE" "$ROOT" >"$WORK/build.log" 2>&1 || { tail -n 40 "$WORK/build.log"; return 1; }
  step "built: $(buildah images --format '{{.Name}}:{{.Tag}} {{.Size}}' "$IMAGE")"
  touch "$STARTED"
}

compose_service() { "$PY" "$ROOT/tools/image/compose_service.py" "$@" --compose "$COMPOSE" --secrets "$SECRETS" "${REWRITE[@]}"; }
compose_command() {  # compose_command SERVICE: sets RUN to the buildah command that runs it in a new container
  local options argv container
  mapfile -t options < <(compose_service options "$1")
  mapfile -t argv < <(compose_service argv "$1")
  container=$(buildah from --quiet "$IMAGE")
  CONTAINERS+=("$container")
  step "$1: ${argv[*]}"
  RUN=(buildah run --isolation chroot --user pobo "${options[@]}" "$container" -- "${argv[@]}")
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
start_pobo() {  # start_pobo SERVICE RESTART: a one-shot runs to exit 0; any other starts and waits for its healthcheck
  local health
  compose_command "$1"
  if [ "$2" = no ]; then
    "${RUN[@]}" >"$WORK/$1.log" 2>&1 || { echo "$1 failed"; tail -n 40 "$WORK/$1.log"; return 1; }
    return 0
  fi
  "${RUN[@]}" >"$WORK/$1.log" 2>&1 &
  SERVICES+=($!)
  if mapfile -t health < <(compose_service health "$1" 2>/dev/null) && [ ${#health[@]} -gt 0 ]; then
    [ "${health[0]}" = python ] && health[0]=$PY  # the same check, from the host
    wait_for "$1" "${health[@]}"
  fi
}
start_postgres() {  # the postgres image's setup, from the host: its user, database and password file
  local env user db password
  mapfile -t env < <(compose_service options "$1" | sed -n 's/^POSTGRES_//p')
  user=$(printf '%s\n' "${env[@]}" | sed -n 's/^USER=//p') db=$(printf '%s\n' "${env[@]}" | sed -n 's/^DB=//p')
  password=$(cat "$SECRETS/$(printf '%s\n' "${env[@]}" | sed -n 's|^PASSWORD_FILE=/run/secrets/||p')")
  PGBIN=$(dirname "$(ls /usr/lib/postgresql/*/bin/pg_ctl | sort -V | tail -n 1)")
  mkdir "$PGDATA" && chown postgres "$PGDATA"
  step "$1: PostgreSQL from the host on 127.0.0.1:$PGPORT (user $user, database $db)"
  runuser -u postgres -- "$PGBIN/initdb" -D "$PGDATA" --auth-local=trust --auth-host=scram-sha-256 -U postgres >/dev/null
  runuser -u postgres -- "$PGBIN/pg_ctl" -D "$PGDATA" -o "-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1" -w \
    -l "$PGDATA/log" start >/dev/null
  runuser -u postgres -- psql -q -h /tmp -p "$PGPORT" -U postgres \
    -c "CREATE ROLE $user LOGIN PASSWORD '$password'" -c "CREATE DATABASE $db OWNER $user"
}
start_caddy() {  # the caddy image's program, from the host, with the compose file's Caddyfile rewritten to loopback
  sed -e "s/curator:8000/127.0.0.1:$PORT/" -e "s/:8443/:$TLS_PORT/" "$CHECKOUT/deploy/Caddyfile" >"$WORK/Caddyfile"
  mapfile -t argv < <(compose_service argv "$1" --sub "/etc/caddy/Caddyfile=$WORK/Caddyfile")
  step "$1: ${argv[*]} (Caddy from the host on 127.0.0.1:$TLS_PORT)"
  XDG_DATA_HOME="$WORK/caddy-data" XDG_CONFIG_HOME="$WORK/caddy-config" "${argv[@]}" >"$WORK/$1.log" 2>&1 &
  SERVICES+=($!)
  wait_for "$1" "$PY" -c "import socket; socket.create_connection(('127.0.0.1', $TLS_PORT), 2)"
}
docker() {  # what the documented steps may ask of Docker: `docker compose [--profile P]... up --build`
  local profiles=() started name image restart
  [ "${1:-}" = compose ] || { echo "image: the documented steps run 'docker $*', which this check cannot stand in for"; return 1; }
  shift
  while [ "${1:-}" = --profile ]; do profiles+=(--profile "$2"); shift 2; done
  [ "$*" = "up --build" ] || { echo "image: 'docker compose $*' is not a command this check stands in for"; return 1; }
  COMPOSE=$PWD/docker-compose.yml SECRETS=$PWD/secrets
  build_image
  mapfile -t started < <(compose_service order "${profiles[@]}")
  for line in "${started[@]}"; do
    read -r name image restart <<<"$line"
    case $image in
      pobo:latest) start_pobo "$name" "$restart" </dev/null ;;
      postgres:*) start_postgres "$name" ;;
      caddy:*) start_caddy "$name" </dev/null ;;
      *) echo "image: no stand-in for $name's image $image"; return 1 ;;
    esac
  done
}

# The documented steps, as written, from a copy of what they read (the repository's own secrets/ stays untouched).
CHECKOUT="$WORK/checkout"
cp docker-compose.yml "$CHECKOUT/" && cp -r deploy "$CHECKOUT/"
"$PY" tools/image/doc_steps.py compose >"$WORK/steps.sh"
step "the documented steps (docs/deployment.md, check_image: compose):"
sed 's/^/  | /' "$WORK/steps.sh"
cd "$CHECKOUT"
# shellcheck source=/dev/null
source "$WORK/steps.sh"
cd "$ROOT"
ADMIN_TOKEN=$(cat "$SECRETS/admin_token")

# The stack: the API through the TLS front (Caddy's local CA), the admin token required.
CA="$WORK/caddy-data/caddy/pki/authorities/local/root.crt"
curl -fsS --cacert "$CA" --resolve "localhost:$TLS_PORT:127.0.0.1" "https://localhost:$TLS_PORT/ready" >/dev/null
curl -fsS -H "Authorization: Bearer $ADMIN_TOKEN" "http://127.0.0.1:$PORT/v1/datasets" >/dev/null
if curl -fsS "http://127.0.0.1:$PORT/v1/datasets" >/dev/null 2>&1; then echo "datasets answered without a token"; exit 1; fi
step "the API answers through the TLS front (https://localhost:$TLS_PORT, a certificate of Caddy's local CA)"

# The demo's result: a 0600 hand-off without the admin token, every run finished, both plots.
"$PY" - "$WORK/volumes" "$ADMIN_TOKEN" <<'EOF'
import json, stat, sys
from pathlib import Path
volumes, admin_token = Path(sys.argv[1]), sys.argv[2]
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

# The demo's releases are jobs: they ran on the compose file's cluster, reached with the curator's certificate; a
# client without one is refused. (-W ignore: this client's Python and pandas differ from the image's.)
"$PY" -W ignore - "$DASK_PORT" "$WORK/volumes/dask-tls" <<'EOF'
import sys
from distributed import Client, Security
port, tls = sys.argv[1], sys.argv[2]
client = Security(require_encryption=True, tls_ca_file=f"{tls}/ca.pem", tls_client_cert=f"{tls}/client.pem",
                  tls_client_key=f"{tls}/client.key")
with Client(f"tls://127.0.0.1:{port}", security=client, timeout="20s") as session:
    workers = len(session.scheduler_info()["workers"])
    prefixes = session.run_on_scheduler(lambda dask_scheduler: sorted(dask_scheduler.task_prefixes))
assert workers == 2 and prefixes, f"{workers} workers, task prefixes {prefixes}"
for address, security in ((f"tcp://127.0.0.1:{port}", None), (f"tls://127.0.0.1:{port}", Security.temporary())):
    try:
        with Client(address, security=security, timeout="5s"):
            sys.exit(f"a Dask client without the cluster's certificate got in at {address}")
    except OSError:
        pass
print(f"image: the scheduler from the image ran the curator's jobs ({', '.join(prefixes)}) on {workers} workers over "
      "mutual TLS, and refused a client without the cluster's certificate")
EOF

# read_only: no pobo container wrote to its root file system (only to its tmpfs and volumes, which are mounts).
written=()
for container in "${CONTAINERS[@]}"; do
  root=$(buildah mount "$container")
  while IFS= read -r path; do written+=("${path#"$root"}"); done < <(find "$root" -xdev -type f -newer "$STARTED" \
    ! -path "$root/etc/hosts" ! -path "$root/etc/hostname" ! -path "$root/etc/resolv.conf" ! -path "$root/run/*" \
    ! -path "$root/data/*")  # /data: the image's VOLUME, a volume of its own under compose
done
if [ ${#written[@]} -gt 0 ]; then printf 'image: written outside tmpfs and volumes (read_only would refuse): %s\n' "${written[@]}" | head -n 20; exit 1; fi
step "no container wrote to its root file system; all checks passed"
