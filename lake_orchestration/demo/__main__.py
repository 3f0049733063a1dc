"""``python -m lake_orchestration.demo``: the demo end to end through Dagster (:func:`.run.main`)."""

import sys

from lake_orchestration.demo.run import main

if __name__ == "__main__":
    sys.exit(main())
