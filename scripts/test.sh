#!/usr/bin/env bash
# README command 2: set up, then run every test tier (unit, property, integration, Spark, Dagster, browser).
#
# Without test paths the suite runs as two pytest processes at once (tests/conftest.py, LAKE_ORCH_SHARD): shard A the
# tests of the run's one SparkSession and one Java JVM (and folders put there for balance), shard B the rest. Much of
# the suite waits (JVMs, subprocesses, lock and heartbeat expiries), so two processes fit two cores. Each shard's output
# goes to a log, printed A then B once both ended; the exit status is non-zero if either failed. Arguments go to both
# (-q, -x, --durations=20, -k ...). With a test path among them (or LAKE_ORCH_TEST_SHARDS=1): one process, as pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
. "$ROOT/scripts/setup-env.sh"
bash "$ROOT/scripts/ensure-chromium.sh"  # headless Chromium for tests/browser (apt, first run only)
cd "$ROOT"

one_process=0
[ "${LAKE_ORCH_TEST_SHARDS:-2}" = 1 ] && one_process=1
for arg in "$@"; do  # a test path (tests/x.py, tests/x.py::test_y, a folder): run just that, in one process
  case "$arg" in -*) continue ;; esac
  [ -e "${arg%%::*}" ] && one_process=1
done
if [ "$one_process" = 1 ]; then
  exec python -m pytest -p no:cacheprovider "$@"
fi

LOGS="$(mktemp -d "${TMPDIR:-/tmp}/lake-orch-tests.XXXXXX")"
echo "Running the suite as two pytest processes: shard A (the SparkSession and the Java JVM) and shard B" \
  "(the rest); logs in $LOGS (LAKE_ORCH_TEST_SHARDS=1: one process)"
set -m  # each shard in its own process group: an interrupt stops it with its JVMs and subprocesses
pids=()
for shard in A B; do
  (
    start=$SECONDS
    set +e
    LAKE_ORCH_SHARD=$shard python -m pytest -p no:cacheprovider "$@" >"$LOGS/$shard.log" 2>&1
    rc=$?
    echo "$rc $((SECONDS - start))" >"$LOGS/$shard.status"
    echo "shard $shard ended: exit $rc after $((SECONDS - start)) s (its log follows once both ended)"
  ) &
  pids+=($!)
done
set +m
stop() {
  for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
  wait
  exit 130
}
trap stop INT TERM
wait "${pids[@]}" || true
trap - INT TERM

failed=0
for shard in A B; do
  read -r rc secs <"$LOGS/$shard.status" || { rc=1; secs=?; }
  echo
  echo "======================== shard $shard: exit $rc after ${secs} s ($LOGS/$shard.log) ========================"
  cat "$LOGS/$shard.log"
  # 5: no test selected in this shard (e.g. a -k matching only the other's), not a failure
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then failed=1; fi
done
read -r rc_a secs_a <"$LOGS/A.status" || { rc_a=1; secs_a=?; }
read -r rc_b secs_b <"$LOGS/B.status" || { rc_b=1; secs_b=?; }
echo "shards: A exit $rc_a after ${secs_a} s, B exit $rc_b after ${secs_b} s"
[ "$rc_a" = 5 ] && [ "$rc_b" = 5 ] && exit 5
exit "$failed"
