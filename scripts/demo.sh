#!/usr/bin/env bash
# README command 1: set up, then run the main job on the embedded default (local Spark, local storage, demo table).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup-env.sh"
cd "$ROOT"
exec lake-orch demo "$@"
