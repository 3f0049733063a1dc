"""The Dagster code location: wiring only (see definitions/definitions.py)."""

from definitions.definitions import defs

__all__ = ["defs"]
