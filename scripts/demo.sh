#!/usr/bin/env bash
# README command 1: set up, then run the main job through Dagster on the embedded default (the in-process engine,
# local storage, a demo MERGE_ON_READ table): the ingest job writes batches, the schedule-compaction job plans, the
# pending-compaction sensor requests a run per plan and each runs; then a summary and how to open the UI.
# Options: --rows N, --batches N, --rounds N, --engine local|spark (spark: a local Spark session, as on a
# cluster), --dir DIR (python -m lake_orchestration.demo -h)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup-env.sh"
cd "$ROOT"
# The runs go to this Dagster instance, so `dagster dev` with the same DAGSTER_HOME shows them.
export DAGSTER_HOME="${DAGSTER_HOME:-$ROOT/demo-tables/.dagster}"
mkdir -p "$DAGSTER_HOME"
exec python -m lake_orchestration.demo "$@"
