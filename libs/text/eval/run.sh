#!/usr/bin/env bash
# Evaluates the embedded judge on SciFact train and ContractNLI dev (see run-eval.ts).
# Usage, from anywhere:  bash libs/text/eval/run.sh [--dataset scifact|contractnli|all] [--limit N] [--grid] [--dump FILE]
set -euo pipefail
cd "$(dirname "$0")/../../.."
npx tsc -p libs/text/eval/tsconfig.json
node dist/text-eval/libs/text/eval/run-eval.js "$@"
