"""Text and JSON renderers for CLI output."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import click


def emit_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, default=str))


def table(rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> str:
    """A plain aligned text table."""
    cells = [[str(h) for h in headers]] + [[("" if v is None else str(v)) for v in r] for r in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
