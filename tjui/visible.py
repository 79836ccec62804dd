"""Text made safe to draw on a terminal: control characters shown, not obeyed.

Kept apart from the widgets (no Textual or Rich import), so the plain command-line
output (``tjui ls``) escapes session titles the same way the inspector does.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

#: C0 controls and DEL (terminal output carries escapes), shown as control pictures;
#: tabs are expanded first, and line breaks split lines.
_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _picture(match: re.Match[str]) -> str:
    code = ord(match.group())
    return "\u2421" if code == 0x7F else chr(0x2400 + code)


def visible(text: str, tabsize: int = 8) -> str:
    """``text`` safe to draw: tabs expanded, control characters made visible (an escape
    code shows as ``␛[2m`` instead of styling the terminal). Measure and cut the result,
    not ``text``: it is what is drawn. The one-line previews (list rows, the preview's
    columns, session titles) use it as it is."""
    if "\t" in text:
        text = text.expandtabs(tabsize)
    return _CONTROLS.sub(_picture, text)
