#!/bin/sh
# Entry point of the kb-platform image (run under tini, see the Dockerfile).
# The first argument picks what runs:
#   gateway | documents | ingestion | retrieval | check | agent | webhooks   one service (its dist/ entry point)
#   kbctl ARGS...                                                 the operator CLI (needs DATABASE_URL)
#   healthcheck [SERVICE] [--ready]                               the container health check
#   anything else                                                 executed as given (e.g. `sh`, `node -v`)
set -eu

case "${1:-}" in
  gateway | documents | ingestion | retrieval | check | agent | webhooks)
    service="$1"
    shift
    exec node "/app/dist/apps/${service}/src/main.js" "$@"
    ;;
  kbctl)
    shift
    exec node /app/dist/apps/gateway/src/cli/kbctl.js "$@"
    ;;
  healthcheck)
    shift
    exec node /app/deploy/docker/healthcheck.mjs "$@"
    ;;
  "")
    echo "usage: <gateway|documents|ingestion|retrieval|check|agent|webhooks> | kbctl ARGS | healthcheck [SERVICE] | COMMAND" >&2
    exit 64
    ;;
  *)
    exec "$@"
    ;;
esac
