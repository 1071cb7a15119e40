#!/bin/sh
# Smoke test of a running docker compose stack (deploy/README.md, "Smoke test").
# Needs curl and jq on the host. Creates an organization and an API key with kbctl inside the
# gateway container, checks /readyz, uploads a document through its presigned URL (MinIO),
# processes it, waits for `completed`, then asks a question and verifies a requirement.
#
#   sh deploy/compose/smoke-test.sh [FILE [CONTENT_TYPE]]
#
# Without FILE a small Markdown document is generated. Environment: KB_URL (default
# http://localhost:${KB_HTTP_PORT:-8080}), COMPOSE (default: `docker compose`, else `docker-compose`),
# COMPOSE_ARGS (extra arguments, e.g. "-p myproject --env-file my.env"), SMOKE_TIMEOUT (seconds
# to wait for processing, default 300). Exit 0 only when every step passed.
set -eu

KB_URL="${KB_URL:-http://localhost:${KB_HTTP_PORT:-8080}}"
TIMEOUT="${SMOKE_TIMEOUT:-300}"
if [ -z "${COMPOSE:-}" ]; then
  if docker compose version >/dev/null 2>&1; then COMPOSE="docker compose"; else COMPOSE="docker-compose"; fi
fi
for tool in curl jq; do command -v "$tool" >/dev/null || { echo "smoke-test: $tool is required" >&2; exit 2; }; done

step() { printf '\n== %s\n' "$*"; }
fail() { echo "smoke-test: FAILED: $*" >&2; exit 1; }
# shellcheck disable=SC2086
kbctl() { $COMPOSE ${COMPOSE_ARGS:-} exec -T gateway node dist/apps/gateway/src/cli/kbctl.js "$@"; }
api() { # METHOD PATH [JSON]
  if [ $# -ge 3 ]; then
    curl -sS -X "$1" -H "Authorization: Bearer $KEY" -H 'Content-Type: application/json' -d "$3" "$KB_URL$2"
  else
    curl -sS -X "$1" -H "Authorization: Bearer $KEY" "$KB_URL$2"
  fi
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
if [ $# -ge 1 ]; then
  FILE="$1"
  CONTENT_TYPE="${2:-application/pdf}"
else
  FILE="$tmp/smoke-handbook.md"
  CONTENT_TYPE="text/markdown"
  cat >"$FILE" <<'EOF'
# Site safety handbook

## Protective equipment

Every worker on the construction site must wear a hard hat and safety boots at all times.
Visitors must be accompanied by a supervisor and sign the visitor log at the gate.

## Incidents

Every injury must be reported to the site manager within 24 hours.
EOF
fi
[ -f "$FILE" ] || fail "no such file: $FILE"

step "readiness: $KB_URL/readyz"
curl -sS -f "$KB_URL/readyz" | jq -c . || fail "/readyz is not 200"

step "kbctl: organization and API key"
ORG_ID="$(kbctl org create --name "Smoke test $(date -u +%Y%m%dT%H%M%SZ)" --json | jq -er '.id')" || fail "kbctl org create"
KEY="$(kbctl key create --org "$ORG_ID" --name smoke-test --json | jq -er '.key')" || fail "kbctl key create"
echo "org $ORG_ID, key ${KEY%"${KEY#????????}"}..."
api GET /api/v2/organization | jq -e '.data' >/dev/null || fail "GET /api/v2/organization with the new key"

step "project"
PROJECT_ID="$(api POST /api/v2/projects '{"name":"Smoke test"}' | jq -er '.data.id')" || fail "create project"

step "upload $(basename "$FILE") ($CONTENT_TYPE)"
SIZE="$(wc -c <"$FILE" | tr -d ' ')"
body="$(jq -cn --arg n "$(basename "$FILE")" --arg t "$CONTENT_TYPE" --argjson s "$SIZE" --arg p "$PROJECT_ID" '{file_name:$n,content_type:$t,size_bytes:$s,project_id:$p}')"
reserved="$(api POST /api/v2/documents "$body")"
DOC_ID="$(echo "$reserved" | jq -er '.data.id')" || fail "reserve upload slot: $reserved"
URL="$(echo "$reserved" | jq -er '.data.upload.url')"
METHOD="$(echo "$reserved" | jq -er '.data.upload.method')"
echo "presigned URL: ${URL%%\?*}?..."
curl -sS -f -X "$METHOD" -H "Content-Type: $CONTENT_TYPE" --data-binary "@$FILE" "$URL" >/dev/null || fail "upload to the presigned URL (is S3_PUBLIC_ENDPOINT reachable from here?)"

step "process"
api POST /api/v2/documents/process "{\"document_ids\":[\"$DOC_ID\"]}" | jq -c '.data'
waited=0
while :; do
  doc="$(api GET "/api/v2/documents/$DOC_ID")"
  status="$(echo "$doc" | jq -r '.data.status')"
  case "$status" in
    completed) echo "completed: $(echo "$doc" | jq -c '{chunk_count: .data.chunk_count, size_bytes: .data.size_bytes}')"; break ;;
    failed) fail "document failed: $(echo "$doc" | jq -r '.data.error_message')" ;;
  esac
  [ "$waited" -lt "$TIMEOUT" ] || fail "document still $status after ${TIMEOUT}s"
  sleep 2
  waited=$((waited + 2))
done

if [ $# -eq 0 ]; then
  step "agent query"
  answer="$(api POST /api/v2/agent/query "{\"question\":\"What must every worker on the construction site wear?\",\"project_id\":\"$PROJECT_ID\"}")"
  echo "$answer" | jq -c '.data | {answer, citations: ((.citations // .sources // []) | length)}'
  echo "$answer" | jq -e '.data.answer | test("hard hat"; "i")' >/dev/null || fail "the answer does not quote the handbook: $answer"

  step "check verify"
  verdict="$(api POST /api/v2/check/verify "{\"project_id\":\"$PROJECT_ID\",\"requirement\":\"Injuries must be reported within 24 hours.\"}")"
  echo "$verdict" | jq -c '.data | {verdict, confidence, evidence}'
  echo "$verdict" | jq -e '.data.verdict == "COMPLIANT"' >/dev/null || fail "expected COMPLIANT: $verdict"
fi

step "revoke the smoke-test key"
KEY_ID="$(kbctl key list --org "$ORG_ID" --json | jq -er '.keys[0].id')"
kbctl key revoke "$KEY_ID" --json | jq -c '{id, revoked_at}'
code="$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" "$KB_URL/api/v2/organization")"
[ "$code" = 401 ] || fail "a revoked key still answers $code"

printf '\nsmoke-test: OK\n'
