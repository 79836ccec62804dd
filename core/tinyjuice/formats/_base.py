"""Shared machinery for transcript readers and writers: errors, decoding, JSON/JSONL parsing.

Every reader raises :class:`LoadError` (and nothing else) for bad input. A
``LoadError`` names the file, the line (JSONL) or JSON path, and what was expected,
so the CLI can print it as is.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import orjson

from tinyjuice.model import Transcript

__all__ = [
    "FORMAT_NAMES",
    "FormatModule",
    "JsonLine",
    "LoadError",
    "LoadOptions",
    "SaveError",
    "Source",
    "decode_utf8",
    "dump_document",
    "iter_jsonl",
    "jsonl_head",
    "parse_json",
    "read_bytes",
]

#: Format names, the same on the command line and in JSON output.
FORMAT_NAMES: tuple[str, ...] = (
    "openai",
    "anthropic",
    "hermes",
    "claude-code",
    "codex",
    "sharegpt",
    "swe-agent",
)

SQLITE_MAGIC = b"SQLite format 3\x00"


class LoadError(ValueError):
    """A transcript could not be read. The message says where and what was expected."""

    def __init__(
        self,
        path: str | Path | None,
        problem: str,
        *,
        line: int | None = None,
        json_path: str | None = None,
        expected: str | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        self.problem = problem
        self.line = line
        self.json_path = json_path
        self.expected = expected
        where = self.path or "<input>"
        if line is not None:
            where += f", line {line}"
        if json_path:
            where += f", at {json_path}"
        msg = f"{where}: {problem}"
        if expected:
            msg += f" (expected {expected})"
        super().__init__(msg)


class SaveError(ValueError):
    """A transcript cannot be written in the requested format."""


@dataclass(frozen=True, slots=True)
class LoadOptions:
    #: Skip (and count) malformed JSONL lines instead of failing.
    lenient: bool = False
    #: Hermes state.db: which session to open (newest when None).
    session: str | None = None
    #: Include inactive (compacted) Hermes rows.
    include_inactive: bool = False


@dataclass(slots=True)
class JsonLine:
    number: int  # 1-based line number
    value: Any


@dataclass(slots=True)
class JsonlResult:
    lines: list[JsonLine] = field(default_factory=list)
    bad_lines: list[tuple[int, str]] = field(default_factory=list)


@dataclass(slots=True)
class Source:
    """A transcript file parsed once, handed to ``sniff`` and ``read``.

    ``kind`` is "json" (``doc`` is the parsed value), "jsonl" (``doc`` is a
    :class:`JsonlResult` with every line parsed) or "sqlite" (``doc`` is None; open
    ``path``).
    """

    path: Path
    data: bytes
    doc: Any
    kind: str

    def head_lines(self, n: int = 25) -> list[dict[str, Any]]:
        """The first ``n`` parsed JSONL objects (empty for other kinds)."""
        if self.kind != "jsonl":
            return []
        return [ln.value for ln in self.doc.lines[:n]]


class FormatModule(Protocol):
    """What each module in ``tinyjuice.formats`` provides.

    ``sniff(source)`` returns a confidence 0..100 that the source is in this format
    (0: certainly not); ``read(source, options)`` builds the transcript and raises only
    :class:`LoadError`. Writable formats also provide ``write(transcript) -> bytes``.
    """

    NAME: str

    def sniff(self, source: Source) -> int: ...

    def read(self, source: Source, options: LoadOptions) -> Transcript: ...


def read_bytes(path: str | Path) -> bytes:
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise LoadError(p, "no such file") from None
    except IsADirectoryError:
        raise LoadError(p, "is a directory", expected="a transcript file") from None
    except PermissionError:
        raise LoadError(p, "permission denied") from None
    except OSError as exc:
        raise LoadError(p, f"cannot read file: {exc.strerror or exc}") from None


def decode_utf8(path: str | Path, data: bytes) -> str:
    if b"\x00" in data[:8192] and not data.startswith(SQLITE_MAGIC):
        raise LoadError(path, "file looks binary (contains NUL bytes)", expected="UTF-8 JSON text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise LoadError(
            path,
            f"invalid UTF-8 at byte {exc.start}",
            line=line,
            expected="UTF-8 text",
        ) from None


def _line_col(text: str | bytes, pos: int) -> tuple[int, int]:
    if isinstance(text, str):
        line, start = text.count("\n", 0, pos) + 1, text.rfind("\n", 0, pos) + 1
    else:
        line, start = text.count(b"\n", 0, pos) + 1, text.rfind(b"\n", 0, pos) + 1
    return line, pos - start + 1


def parse_json(path: str | Path, data: bytes, *, line: int | None = None) -> Any:
    """Parse one JSON document with an error that names line and column."""
    if not data or data.isspace():  # (no copy of the blob, unlike strip())
        raise LoadError(path, "file is empty", line=line, expected="a JSON document")
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if line is None:
            ln, col = _line_col(exc.doc, exc.pos)
            raise LoadError(
                path, f"invalid JSON at column {col}: {exc.msg}", line=ln, expected="valid JSON"
            ) from None
        raise LoadError(
            path, f"invalid JSON: {exc.msg}", line=line, expected="one JSON object per line"
        ) from None


def iter_jsonl(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Yield (1-based line number, raw line) for the non-blank lines of a JSONL blob."""
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            yield n, raw


def parse_jsonl(
    path: str | Path, data: bytes, *, lenient: bool, head: tuple[bytes, Any] | None = None
) -> JsonlResult:
    """Parse every line; a bad line raises, or with ``lenient`` is skipped and counted.

    ``head`` is :func:`jsonl_head`'s answer for ``data``: the first line's value is
    taken from it when that line is exactly the one it parsed.
    """
    result = JsonlResult()
    lines = result.lines
    loads = orjson.loads
    for n, raw in enumerate(data.split(b"\n"), start=1):
        # Parse first: a blank line (rare) is told apart only when parsing fails.
        try:
            value = head[1] if head is not None and raw == head[0] else loads(raw)
        except orjson.JSONDecodeError as exc:
            if not raw or raw.isspace():
                continue
            if lenient:
                result.bad_lines.append((n, exc.msg))
                continue
            raise LoadError(
                path,
                f"invalid JSON: {exc.msg}",
                line=n,
                expected="one JSON object per line (use --lenient to skip bad lines)",
            ) from None
        if type(value) is not dict:
            if lenient:
                result.bad_lines.append((n, f"a JSON {_json_type(value)}, not an object"))
                continue
            raise LoadError(
                path,
                f"line holds a JSON {_json_type(value)}",
                line=n,
                expected="a JSON object",
            )
        lines.append(JsonLine(n, value))
        head = None  # only ever the first line
    if not result.lines:
        if result.bad_lines:
            raise LoadError(path, f"all {len(result.bad_lines)} lines are malformed")
        raise LoadError(path, "file is empty", expected="JSON lines")
    return result


def bad_line_warnings(result: JsonlResult) -> tuple[str, ...]:
    if not result.bad_lines:
        return ()
    shown = ", ".join(str(n) for n, _ in result.bad_lines[:10])
    more = "" if len(result.bad_lines) <= 10 else f" and {len(result.bad_lines) - 10} more"
    return (f"skipped {len(result.bad_lines)} malformed line(s): {shown}{more}",)


def _json_type(value: Any) -> str:
    if isinstance(value, JsonlResult):
        return "lines file"  # a reader handed the wrong kind of source: "a JSON lines file"
    return {
        dict: "object",
        list: "array",
        str: "string",
        int: "number",
        float: "number",
        bool: "boolean",
        type(None): "null",
    }.get(type(value), "value of an unexpected kind")


def json_type(value: Any) -> str:
    """The JSON name of a Python value's type, for error messages."""
    return _json_type(value)


def expect(
    path: str | Path, value: Any, kind: type | tuple[type, ...], json_path: str, expected: str
) -> Any:
    """Return ``value`` if it is of ``kind``, else raise a LoadError at ``json_path``."""
    if isinstance(value, bool) and kind in (int, (int,)):
        raise LoadError(
            path, f"found a JSON {_json_type(value)}", json_path=json_path, expected=expected
        )
    if not isinstance(value, kind):
        raise LoadError(
            path, f"found a JSON {_json_type(value)}", json_path=json_path, expected=expected
        )
    return value


def dump_document(doc: Any, *, jsonl: bool | None) -> bytes:
    """One JSON document: indented, or with ``jsonl`` compact on one line ending in ``\n``.

    The one-line form is a valid one-record JSONL file (``{"messages": …}`` per line is
    also OpenAI's fine-tuning layout), and reads back as the same document.
    """
    if jsonl:
        return orjson.dumps(doc) + b"\n"
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2)


def jsonl_head(data: bytes) -> tuple[bytes, Any] | None:
    """(first line, its parsed value) when the blob looks like JSON lines, else None.

    :func:`parse_jsonl` takes the pair back so that line is not parsed twice (it can be
    the whole file: a trajectory written on one line).
    """
    stripped = data.lstrip()
    if not stripped.startswith(b"{"):
        return None
    first_nl = stripped.find(b"\n")
    if first_nl < 0:
        return None
    line = stripped[:first_nl]
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return line, value


def is_jsonl_candidate(data: bytes) -> bool:
    """True when the blob looks like JSON lines rather than one JSON document."""
    return jsonl_head(data) is not None
