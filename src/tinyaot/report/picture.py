"""The memory plan as a picture: a self-contained SVG (x = op step, y = arena offset, one rectangle per
buffer, labelled with the op that writes it) and an HTML page that embeds it with the tables.

No scripts, fonts or links to anything outside the file, so it opens the same in a browser, a file
viewer or an e-mail attachment.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

# Colour-blind-safe qualitative palette (Okabe-Ito, then Tableau), one colour per producing op kind.
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#4E79A7",
           "#F28E2B", "#59A14F", "#B07AA1", "#9C755F")
INPUT_COLOUR = "#7F7F7F"


@dataclass(frozen=True)
class Box:
    """One buffer to draw."""

    name: str
    op: str  # producing op kind, or "input"
    producer: str  # node name, or "input"
    nbytes: int
    first: int
    last: int
    offset: int
    note: str = ""  # e.g. "in place over x"


def colour_of(op: str, ops: list[str]) -> str:
    if op == "input":
        return INPUT_COLOUR
    return PALETTE[ops.index(op) % len(PALETTE)]


def _nice_step(span: int, ticks: int = 6) -> int:
    raw = max(span / ticks, 1)
    mag = 10 ** (len(str(int(raw))) - 1)
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def plan_svg(boxes: list[Box], arena: int, bound: int, n_steps: int, title: str, *, y_max: int | None = None,
             width: int = 640, height: int = 440) -> str:
    """An SVG of one plan. `y_max` fixes the byte scale (to draw two plans at the same scale)."""
    left, right, top, bottom = 78, 150, 34, 46
    pw, ph = width - left - right, height - top - bottom
    steps = max(n_steps, 1)
    y_top = max(y_max or 0, arena, bound, 1)
    sx = pw / steps
    sy = ph / y_top

    def ypix(off: float) -> float:
        return top + ph - off * sy

    ops = sorted({b.op for b in boxes if b.op != "input"})
    out = [
        (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
         f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">'),
        f"<title>{html.escape(title)}</title>",
        f'<rect x="0" y="0" width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{left}" y="20" font-size="14" font-weight="bold">{html.escape(title)}</text>',
        f'<rect class="plot" x="{left}" y="{top}" width="{pw}" height="{ph}" fill="#f7f7f7" stroke="#999999"/>',
    ]
    tick = _nice_step(y_top)
    v = 0
    while v <= y_top:
        y = ypix(v)
        out.append(f'<line x1="{left - 4}" y1="{y:.1f}" x2="{left}" y2="{y:.1f}" stroke="#555555"/>')
        out.append(f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end">{v:,}</text>')
        v += tick
    for s in range(steps + 1):
        x = left + s * sx
        out.append(f'<line x1="{x:.1f}" y1="{top + ph}" x2="{x:.1f}" y2="{top + ph + 4}" stroke="#555555"/>')
    label_every = max(1, steps // 16)
    for s in range(0, steps, label_every):
        out.append(f'<text x="{left + (s + 0.5) * sx:.1f}" y="{top + ph + 16}" text-anchor="middle">{s}</text>')
    out.append(f'<text x="{left + pw / 2:.1f}" y="{height - 8}" text-anchor="middle">op step</text>')
    out.append(f'<text x="16" y="{top + ph / 2:.1f}" text-anchor="middle" '
               f'transform="rotate(-90 16 {top + ph / 2:.1f})">arena offset (bytes)</text>')
    for b in boxes:
        x0, x1 = left + b.first * sx, left + (b.last + 1) * sx
        y0, y1 = ypix(b.offset + b.nbytes), ypix(b.offset)
        h = max(y1 - y0, 1.0)
        tip = (f"{b.name}: {b.nbytes:,} B at offset {b.offset:,}, steps {b.first}-{b.last}, written by "
               f"{b.producer} ({b.op}){'; ' + b.note if b.note else ''}")
        fill = colour_of(b.op, ops)
        out.append(f'<rect class="buffer" data-name="{html.escape(b.name)}" x="{x0 + 1:.1f}" y="{y0:.1f}" '
                   f'width="{max(x1 - x0 - 2, 1):.1f}" height="{h:.1f}" fill="{fill}" fill-opacity="0.85" '
                   f'stroke="#222222" stroke-width="0.8"><title>{html.escape(tip)}</title></rect>')
        if h >= 13 and x1 - x0 >= 30:
            label = f"{b.op}: {b.name}" if b.op != b.name else b.name
            max_chars = int((x1 - x0 - 6) / 6.2)
            if len(label) > max_chars:
                label = label[: max(max_chars - 1, 1)] + "\u2026"
            out.append(f'<text x="{x0 + 4:.1f}" y="{(y0 + min(y1, y0 + h / 2 + 8)) / 2 + 4:.1f}" '
                       f'fill="#ffffff" font-weight="bold">{html.escape(label)}</text>')
    yb, ya = ypix(bound), ypix(arena)
    out.append(f'<line class="lower-bound" x1="{left}" y1="{yb:.1f}" x2="{left + pw}" y2="{yb:.1f}" '
               f'stroke="#000000" stroke-width="1.5" stroke-dasharray="6 4"/>')
    out.append(f'<text x="{left + pw + 6}" y="{yb + 12:.1f}">lower bound {bound:,} B</text>')
    out.append(f'<line class="arena" x1="{left}" y1="{ya:.1f}" x2="{left + pw}" y2="{ya:.1f}" '
               f'stroke="#C00000" stroke-width="2"/>')
    out.append(f'<text x="{left + pw + 6}" y="{ya - 3:.1f}" fill="#C00000" font-weight="bold">'
               f'arena {arena:,} B</text>')
    ly = top + 40
    for op in ["input", *ops]:
        out.append(f'<rect x="{left + pw + 8}" y="{ly}" width="12" height="12" fill="{colour_of(op, ops)}"/>')
        out.append(f'<text x="{left + pw + 24}" y="{ly + 10}">{html.escape(op)}</text>')
        ly += 17
    out.append("</svg>")
    return "\n".join(out)


_CSS = """
body { font-family: sans-serif; margin: 24px; color: #222; background: #fff; }
h1 { font-size: 20px; } h2 { font-size: 16px; margin-top: 28px; }
.pictures { display: flex; flex-wrap: wrap; gap: 16px; }
table { border-collapse: collapse; font-size: 13px; }
th, td { border: 1px solid #ccc; padding: 3px 8px; } td.n { text-align: right; }
th { background: #eee; }
li { margin: 4px 0; }
"""


def _table(headers: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(f'<td class="n">{html.escape(c)}</td>' if i in numeric else f"<td>{html.escape(c)}</td>"
                         for i, c in enumerate(r)) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def memory_html(title: str, svgs: list[str], sections: list[tuple[str, list[str], list[list[str]], set[int]]],
                notes: list[str]) -> str:
    """A self-contained page: the pictures side by side, then the notes and the tables."""
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{html.escape(title)}</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        '<div class="pictures">',
        *svgs,
        "</div>",
    ]
    if notes:
        parts.append("<h2>Why</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    for heading, headers, rows, numeric in sections:
        parts.append(f"<h2>{html.escape(heading)}</h2>")
        parts.append(_table(headers, rows, numeric))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
