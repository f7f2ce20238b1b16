"""Render rich renderables to plain text (for __str__, files and tests)."""
from __future__ import annotations

import io

from rich.console import Console


def render_text(renderable, width: int = 110) -> str:
    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(renderable)
    return buf.getvalue()
