"""``python -m lake_orchestration.demo``: the demo end to end through Dagster (:func:`.run.main`)."""

import sys

try:
    from lake_orchestration.demo.run import main
except ModuleNotFoundError as missing:
    if missing.name != "dagster":
        raise
    sys.exit(
        "python -m lake_orchestration.demo runs the demo through Dagster, which is not installed here: "
        "pip install 'lake-orchestration[dagster]' (or run ./scripts/demo.sh, which sets up its own venv)"
    )

if __name__ == "__main__":
    sys.exit(main())
