"""C and project templates shipped with the package: read one, fill its @PLACEHOLDERS@.

Templates are real files (the M33 harness's main program, the Pico 2 project), so they read as C, not as strings
inside Python; a placeholder left unfilled is caught here, before a compiler reports something stranger.
"""
from __future__ import annotations

import re
from importlib import resources

from tinyaot.errors import InternalError

_PLACEHOLDER = re.compile(r"@[A-Z_]+@")


class TemplateError(InternalError):
    """A template kept a placeholder nobody filled (a bug in tinyaot)."""


def read_template(folder: tuple[str, ...], fname: str) -> str:
    """The text of `fname` in the package folder `folder` (e.g. ("targets", "m33"))."""
    return resources.files("tinyaot").joinpath(*folder, fname).read_text()


def fill(text: str, fields: dict[str, str]) -> str:
    """Replace each key of `fields` by its value; every placeholder must be filled."""
    for key, value in fields.items():
        text = text.replace(key, value)
    left = _PLACEHOLDER.findall(text)
    if left:
        raise TemplateError(f"template placeholders left unfilled: {sorted(set(left))} (a tinyaot bug; please "
                            "report)")
    return text
