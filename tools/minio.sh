#!/usr/bin/env bash
# Real MinIO for tests and CI (test-only tool; MinIO is never part of the product or the repo).
#
#   tools/minio.sh ensure               build MinIO once (go install), print the binary's path
#   tools/minio.sh path                 print the binary's path if present, else exit 3 (never builds)
#   tools/minio.sh start <dataDir> <port>
#                                       start MinIO on 127.0.0.1:<port> with the fixed test
#                                       credentials below, wait until /minio/health/live answers,
#                                       print its PID (stop it with `kill <pid>`). With
#                                       KB_MINIO_WATCH_PID=<pid>, MinIO is also stopped once that
#                                       process is gone (so a killed test run leaves nothing behind)
#
# The binary lives in a cache outside the repository so it survives fresh clones on one machine:
#   ${KB_TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kb-platform}/bin/minio
#   (KB_MINIO_BIN overrides the path). Go >= 1.24 must be on PATH. KB_MINIO_VERSION picks the
#   module version (default: latest; any `go install` version query works, e.g. a pseudo-version).
# First build, measured on 2 cores with empty Go caches (go1.26.8, minio v0.0.0-20260212201848-7aac2a2c5b7c):
#   ~3 min 40 s wall, ~1.5 GB peak RSS, ~1.2 GB module downloads + ~1 GB Go build cache; the
#   binary is 150 MB. With warm Go caches ~7 s; with the binary cached < 1 s. See libs/storage/README.md.
#
# Test credentials (also in libs/storage/src/s3-object-storage.spec.ts):
#   access key KB_MINIO_ACCESS_KEY (default kb-test-access), secret KB_MINIO_SECRET_KEY
#   (default kb-test-secret-key). Only ever bound to 127.0.0.1.
#
# stdout carries only the result (a path or a PID); progress and errors go to stderr.
set -euo pipefail

CACHE_DIR="${KB_TOOLS_CACHE:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/kb-platform}"
MINIO_BIN="${KB_MINIO_BIN:-$CACHE_DIR/bin/minio}"
# Pinned so CI builds the same server every time (the version measured to build with Go 1.26 here).
MINIO_VERSION="${KB_MINIO_VERSION:-v0.0.0-20260212201848-7aac2a2c5b7c}"
ACCESS_KEY="${KB_MINIO_ACCESS_KEY:-kb-test-access}"
SECRET_KEY="${KB_MINIO_SECRET_KEY:-kb-test-secret-key}"
START_TIMEOUT="${KB_MINIO_START_TIMEOUT:-30}"

log() { echo "minio.sh: $*" >&2; }
die() { log "$*"; exit 1; }

usable() { [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }

cmd_path() {
  if usable "$MINIO_BIN"; then echo "$MINIO_BIN"; return 0; fi
  log "no MinIO binary at $MINIO_BIN; run: tools/minio.sh ensure (or set KB_MINIO_BIN)"
  exit 3
}

cmd_ensure() {
  if usable "$MINIO_BIN"; then echo "$MINIO_BIN"; return 0; fi
  if [ -n "${KB_MINIO_BIN:-}" ]; then
    die "KB_MINIO_BIN=$KB_MINIO_BIN is not an executable MinIO binary (unset it to build into $CACHE_DIR/bin)"
  fi
  command -v go >/dev/null 2>&1 || die "Go is not installed (need Go >= 1.24 on PATH to build MinIO: https://go.dev/dl/)"
  local bindir; bindir="$(dirname "$MINIO_BIN")"
  mkdir -p "$bindir"
  # One build at a time per machine: a second caller waits, then finds the binary.
  exec 9>"$bindir/.minio.lock"
  flock 9
  if usable "$MINIO_BIN"; then echo "$MINIO_BIN"; return 0; fi
  BUILD_TMP="$(mktemp -d "$bindir/.build.XXXXXX")"
  trap 'rm -rf "${BUILD_TMP:-}"' EXIT
  log "building github.com/minio/minio@$MINIO_VERSION with $(go version | awk '{print $3}') (one-time, several minutes)..."
  local started=$SECONDS
  # CGO off: a static binary that does not depend on the machine's libc headers.
  if ! CGO_ENABLED=0 GOBIN="$BUILD_TMP" go install "github.com/minio/minio@$MINIO_VERSION" >&2; then
    die "go install github.com/minio/minio@$MINIO_VERSION failed; try another version with KB_MINIO_VERSION=<module version> (see `go list -m -versions github.com/minio/minio`)"
  fi
  mv -f "$BUILD_TMP/minio" "$MINIO_BIN"
  # `minio --version` says DEVELOPMENT.GOGET for go-installed builds; the module version is exact.
  go version -m "$MINIO_BIN" 2>/dev/null | awk '$1 == "mod" {print $2 "@" $3}' > "$MINIO_BIN.version" || true
  log "built $MINIO_BIN in $((SECONDS - started)) s ($(cat "$MINIO_BIN.version" 2>/dev/null))"
  echo "$MINIO_BIN"
}

cmd_start() {
  [ $# -eq 2 ] || die "usage: tools/minio.sh start <dataDir> <port>"
  local data_dir="$1" port="$2"
  [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -gt 0 ] && [ "$port" -lt 65536 ] || die "invalid port: $port"
  usable "$MINIO_BIN" || die "no MinIO binary at $MINIO_BIN; run: tools/minio.sh ensure (or set KB_MINIO_BIN)"
  # Something already listening there would answer the health check in MinIO's place.
  if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then die "port $port on 127.0.0.1 is already in use"; fi
  mkdir -p "$data_dir"
  local log_file="${KB_MINIO_LOG:-${data_dir%/}.minio.log}"
  # Detached from our stdout/stderr so callers reading our output are not held open by MinIO.
  MINIO_ROOT_USER="$ACCESS_KEY" MINIO_ROOT_PASSWORD="$SECRET_KEY" \
    MINIO_BROWSER=off MINIO_UPDATE=off MINIO_CALLHOME_ENABLE=off \
    nohup "$MINIO_BIN" server --quiet --address "127.0.0.1:$port" "$data_dir" \
    </dev/null >"$log_file" 2>&1 &
  local pid=$!
  local deadline=$((SECONDS + START_TIMEOUT))
  until curl -fsS -o /dev/null --max-time 2 "http://127.0.0.1:$port/minio/health/live" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log "MinIO exited during startup; last log lines ($log_file):"
      tail -n 20 "$log_file" >&2 || true
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill "$pid" 2>/dev/null || true
      log "MinIO did not become live on 127.0.0.1:$port within ${START_TIMEOUT}s; last log lines ($log_file):"
      tail -n 20 "$log_file" >&2 || true
      exit 1
    fi
    sleep 0.2
  done
  # Optional watchdog: stop MinIO when the process that started it (e.g. a killed test run) is gone.
  if [ -n "${KB_MINIO_WATCH_PID:-}" ]; then
    (
      while kill -0 "$KB_MINIO_WATCH_PID" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do sleep 1; done
      kill "$pid" 2>/dev/null || true
    ) </dev/null >/dev/null 2>&1 &
  fi
  echo "$pid"
}

case "${1:-}" in
  ensure) shift; cmd_ensure "$@" ;;
  path) shift; cmd_path "$@" ;;
  start) shift; cmd_start "$@" ;;
  *) die "usage: tools/minio.sh ensure | path | start <dataDir> <port>" ;;
esac
