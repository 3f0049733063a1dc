#!/usr/bin/env bash
# README command 2: set up, then run every test tier (unit, property, integration, Spark, Dagster, browser).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup-env.sh"
bash "$ROOT/scripts/ensure-chromium.sh"  # headless Chromium for tests/browser (apt, first run only)
cd "$ROOT"
exec python -m pytest -p no:cacheprovider "$@"
