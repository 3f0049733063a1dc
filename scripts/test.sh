#!/usr/bin/env bash
# README command 2: set up, then run every test tier (unit, property, integration, Spark, Dagster).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup-env.sh"
cd "$ROOT"
exec python -m pytest -p no:cacheprovider "$@"
