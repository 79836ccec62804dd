"""JSON string escapes decoded for reading, with the way back to the original.

Text as it is stored often holds JSON string escapes: a tool result that is itself JSON
(``{"output": "...\\n..."}``), JSON nested in a string of it. :func:`unescape` decodes
one level and keeps where each escape was, so a span found in the decoded text maps
back to whole escapes of the original; :func:`unescaped_text` is the same text without
the map (plain replacements, for filters), :func:`decoded_views` every level.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass

__all__ = ["ESCAPE_LEVELS", "Unescaped", "decoded_views", "unescape", "unescaped_text"]

_ESCAPE = re.compile(r"\\(?:u([0-9a-fA-F]{4})|([\"\\/bfnrt]))")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
#: Levels of escaping read: a JSON string, JSON in it, JSON in that.
ESCAPE_LEVELS = 3


@dataclass(frozen=True, slots=True)
class Unescaped:
    """One level of escapes decoded: ``text``, and where each escape was."""

    text: str
    #: Position in ``text`` of each decoded escape, ascending.
    at: list[int]
    #: Position in the source of that escape, and its length there.
    src: list[int]
    size: list[int]

    def start(self, x: int) -> int:
        """Source position of the character at ``x``."""
        k = bisect_right(self.at, x) - 1
        if k < 0:
            return x
        if self.at[k] == x:
            return self.src[k]
        return self.src[k] + self.size[k] + (x - self.at[k] - 1)

    def end(self, x: int) -> int:
        """Source position just past the character at ``x - 1``."""
        if x <= 0:
            return 0
        k = bisect_right(self.at, x - 1) - 1
        if k >= 0 and self.at[k] == x - 1:
            return self.src[k] + self.size[k]
        return self.start(x - 1) + 1


def unescape(text: str) -> Unescaped | None:
    pieces: list[str] = []
    at: list[int] = []
    src: list[int] = []
    size: list[int] = []
    pos = 0
    out_len = 0
    for m in _ESCAPE.finditer(text):
        chunk = text[pos : m.start()]
        pieces.append(chunk)
        out_len += len(chunk)
        code = m.group(1)
        ch = chr(int(code, 16)) if code is not None else _SIMPLE_ESCAPES[m.group(2)]
        pieces.append(ch)
        at.append(out_len)
        src.append(m.start())
        size.append(m.end() - m.start())
        out_len += 1
        pos = m.end()
    if not at:
        return None
    pieces.append(text[pos:])
    return Unescaped("".join(pieces), at, src, size)


#: Escapes other than ``\\\\`` and ``\\u``, decoded by plain replacement.
_REPLACED = (
    ('\\"', '"'),
    ("\\/", "/"),
    ("\\n", "\n"),
    ("\\r", "\r"),
    ("\\t", "\t"),
    ("\\b", "\b"),
    ("\\f", "\f"),
)


def unescaped_text(text: str) -> str | None:
    """``unescape(text).text`` (None when there is no escape), without the position map.

    Replacing ``\\\\`` first (left to right, as a JSON reader pairs them) leaves every
    other backslash at the start of an escape, so plain replacements decode the rest.
    """
    if "\\u" in text or "\x00" in text:
        u = unescape(text)
        return None if u is None else u.text
    out = text.replace("\\\\", "\x00")
    for esc, ch in _REPLACED:
        out = out.replace(esc, ch)
    if out == text:
        return None
    return out.replace("\x00", "\\")


def decoded_views(text: str) -> list[str]:
    """``text`` with one, two, three levels of JSON escapes decoded (as many as change it)."""
    views: list[str] = []
    view: str | None = text
    for _ in range(ESCAPE_LEVELS):
        if view is None or "\\" not in view:
            break
        view = unescaped_text(view)
        if view is not None:
            views.append(view)
    return views
