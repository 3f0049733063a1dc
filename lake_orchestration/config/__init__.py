"""Typed configuration and Hudi's config-key registry."""

from lake_orchestration.config.keys import HoodieKey

__all__ = ["HoodieKey"]
