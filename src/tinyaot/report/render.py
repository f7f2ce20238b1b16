"""Render rich renderables to plain text (for __str__, files and tests)."""
from __future__ import annotations

import io


def render_text(renderable, width: int = 110) -> str:
    from rich.console import Console

    buf = io.StringIO()
    Console(file=buf, width=width, force_terminal=False, color_system=None).print(renderable)
    return buf.getvalue()
