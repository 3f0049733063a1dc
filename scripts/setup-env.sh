#!/usr/bin/env bash
# Shared set-up for the README commands: Python >= 3.10, Java 17+, a project venv in .venv with the package and its
# dagster and test extras installed (re-installed only when pyproject.toml or this script changes).
# Source it: `. scripts/setup-env.sh`.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${LAKE_ORCH_VENV:-$ROOT/.venv}"

py_ok() { "$1" -c 'import sys, venv; sys.exit(0 if sys.version_info >= (3, 10) else 1)' >/dev/null 2>&1; }
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for c in python3 python3.13 python3.12 python3.11 python3.10; do
    if command -v "$c" >/dev/null 2>&1 && py_ok "$c"; then PY="$c"; break; fi
  done
fi
if [ -z "$PY" ] || ! py_ok "$PY"; then
  echo "error: Python 3.10 or newer (with venv) is required; found: ${PY:-none usable}. Install python3 >= 3.10 and retry." >&2
  exit 1
fi

JAVA="${JAVA_HOME:+$JAVA_HOME/bin/java}"
[ -n "$JAVA" ] && [ -x "$JAVA" ] || JAVA="$(command -v java || true)"
if [ -z "$JAVA" ]; then
  echo "error: Java 17 or newer is required by Spark and was not found (no 'java' on PATH, JAVA_HOME unset)." >&2
  echo "       Install a JDK 17, e.g. 'apt-get install openjdk-17-jdk-headless', then retry." >&2
  exit 1
fi
JMAJOR="$("$JAVA" -version 2>&1 | sed -n 's/.*version "\([0-9]*\)\.\{0,1\}\([0-9]*\).*/\1 \2/p' | head -n1 | awk '{ if ($1 == 1) print $2; else print $1 }')"
if [ -z "$JMAJOR" ] || [ "$JMAJOR" -lt 17 ]; then
  echo "error: Java 17 or newer is required by Spark; $JAVA is Java ${JMAJOR:-unknown}." >&2
  echo "       Install a JDK 17 and put it first on PATH or set JAVA_HOME." >&2
  exit 1
fi

if [ ! -x "$VENV/bin/python" ]; then
  echo "Creating virtual environment in $VENV" >&2
  "$PY" -m venv "$VENV"
fi
STAMP="$VENV/.lake-orch-installed"
HASH="$(cat "$ROOT/pyproject.toml" "${BASH_SOURCE[0]}" | sha256sum | cut -d' ' -f1)"
if [ ! -f "$STAMP" ] || [ "$(cat "$STAMP")" != "$HASH" ]; then
  echo "Installing lake-orchestration and its dependencies into $VENV (first run takes a few minutes)" >&2
  "$VENV/bin/python" -m pip install --quiet --upgrade pip >&2
  # dagster: the Dagster shell (the demo, tests/dagster); test: the test tools. Airflow has its own venv (tests/airflow)
  "$VENV/bin/python" -m pip install --quiet -e "$ROOT[dagster,test]" >&2
  echo "$HASH" > "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
export PYSPARK_PYTHON="$VENV/bin/python"
export PYSPARK_DRIVER_PYTHON="$VENV/bin/python"
