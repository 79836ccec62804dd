"""Where a JSON path points in the raw bytes of a JSON document, for error messages.

Readers report a damaged field by its JSON path (``$.messages[3].role``); the user's
editor wants a line. :func:`locate` walks the raw bytes — skipping whole values with a
regular expression, never building them — to the value the path names and returns its
byte offset. It runs only when an error is being reported.
"""

from __future__ import annotations

import re

import orjson

__all__ = ["locate", "locate_nearest", "path_steps"]

_STEP = re.compile(r"\.([^.\[\]]+)|\[(\d+)\]")
_SIGNIFICANT = re.compile(rb'["{}\[\]]')
_STRING_END = re.compile(rb'(?:[^"\\]|\\.)*"', re.DOTALL)
_SCALAR = re.compile(rb"[^,}\]\s]*")
_WS = b" \t\r\n"


def path_steps(json_path: str) -> list[str | int] | None:
    """``$.messages[3].role`` → ``["messages", 3, "role"]``; None if it is not that shape."""
    if not json_path.startswith("$"):
        return None
    steps: list[str | int] = []
    pos = 1
    for m in _STEP.finditer(json_path, 1):
        if m.start() != pos:
            return None
        steps.append(m.group(1) if m.group(1) is not None else int(m.group(2)))
        pos = m.end()
    return steps if pos == len(json_path) else None


def locate(data: bytes, json_path: str) -> int | None:
    """The byte offset of the value ``json_path`` names in the JSON document ``data``
    (None when the path does not lead anywhere in it)."""
    steps = path_steps(json_path)
    if steps is None:
        return None
    i = _ws(data, 0)
    try:
        for step in steps:
            found = _member(data, i, step) if isinstance(step, str) else _element(data, i, step)
            if found is None:
                return None
            i = found
    except (IndexError, ValueError, orjson.JSONDecodeError):
        return None
    return i


def locate_nearest(data: bytes, json_path: str) -> int | None:
    """:func:`locate`, or where the deepest existing part of the path is (a field that
    is missing is reported at the object that lacks it); None for the root."""
    path = json_path
    while path and path != "$":
        found = locate(data, path)
        if found is not None:
            return found
        cut = max(path.rfind("."), path.rfind("["))
        path = path[:cut] if cut > 0 else ""
    return None


def _ws(data: bytes, i: int) -> int:
    while i < len(data) and data[i] in _WS:
        i += 1
    return i


def _string_end(data: bytes, i: int) -> int:
    m = _STRING_END.match(data, i + 1)
    if m is None:
        raise ValueError("unterminated string")
    return m.end()


def _value_end(data: bytes, i: int) -> int:
    c = data[i : i + 1]
    if c == b'"':
        return _string_end(data, i)
    if c not in (b"{", b"["):
        return _SCALAR.match(data, i).end()  # type: ignore[union-attr]
    depth = 0
    j = i
    while True:
        m = _SIGNIFICANT.search(data, j)
        if m is None:
            raise ValueError("unterminated value")
        ch = m.group()
        if ch == b'"':
            j = _string_end(data, m.start())
            continue
        depth += 1 if ch in (b"{", b"[") else -1
        j = m.end()
        if depth == 0:
            return j


def _member(data: bytes, i: int, key: str) -> int | None:
    if data[i : i + 1] != b"{":
        return None
    i = _ws(data, i + 1)
    while data[i : i + 1] == b'"':
        end = _string_end(data, i)
        name = orjson.loads(data[i:end])
        i = _ws(data, end)
        if data[i : i + 1] != b":":
            return None
        i = _ws(data, i + 1)
        if name == key:
            return i
        i = _ws(data, _value_end(data, i))
        if data[i : i + 1] != b",":
            return None
        i = _ws(data, i + 1)
    return None


def _element(data: bytes, i: int, index: int) -> int | None:
    if data[i : i + 1] != b"[":
        return None
    i = _ws(data, i + 1)
    for _ in range(index):
        if data[i : i + 1] == b"]":
            return None
        i = _ws(data, _value_end(data, i))
        if data[i : i + 1] != b",":
            return None
        i = _ws(data, i + 1)
    return None if data[i : i + 1] == b"]" else i
