"""Shared machinery for transcript readers and writers: errors, decoding, JSON/JSONL parsing.

Every reader raises :class:`LoadError` (and nothing else) for bad input. A
``LoadError`` names the file, the line (JSONL) or JSON path, and what was expected,
so the CLI can print it as is.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable, Iterator, Mapping
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
    "check_regular",
    "clip",
    "clip_text",
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
    "gemini-cli",
    "cline",
    "opencode",
    "aider",
)

SQLITE_MAGIC = b"SQLite format 3\x00"


#: The most characters of an input value an error message echoes.
CLIP_CHARS = 60
#: The most characters of any one part of an error message (a safety net under clip).
_PART_CHARS = 400


def clip(value: Any, limit: int = CLIP_CHARS) -> str:
    """``repr(value)`` for an error message, clipped when long: a 2 MB role comes out as
    ``'AAAA…' (2,000,000 characters)``, never as the whole value."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        unit = "characters" if isinstance(value, str) else "bytes"
        return f"{value[:limit]!r}… ({len(value):,} {unit})"
    text = repr(value)
    if len(text) > limit + 2:
        return f"{text[:limit]}… ({len(text):,} characters)"
    return text


def clip_text(text: str, limit: int = CLIP_CHARS) -> str:
    """``text`` as is when short, else its start and how long it was (no quotes)."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text):,} characters)"


def _cap(text: str | None) -> str | None:
    return None if text is None else clip_text(text, _PART_CHARS)


class LoadError(ValueError):
    """A transcript could not be read. The message says where and what was expected.

    Values echoed from the input go through :func:`clip`; each part is capped anyway.
    """

    def __init__(
        self,
        path: str | Path | None,
        problem: str,
        *,
        line: int | None = None,
        json_path: str | None = None,
        expected: str | None = None,
        offset: int | None = None,
    ) -> None:
        self.path = str(path) if path is not None else None
        #: The byte offset in the file the problem is at, when known.
        self.offset = offset
        self.problem = _cap(problem) or ""
        self.line = line
        self.json_path = _cap(json_path)
        self.expected = _cap(expected)
        where = self.path or "<input>"
        if line is not None:
            where += f", line {line}"
        if offset is not None:
            where += f", byte {offset}"
        if self.json_path:
            where += f", at {self.json_path}"
        msg = f"{where}: {self.problem}"
        if self.expected:
            msg += f" (expected {self.expected})"
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
    #: What a reader kept from reading an earlier version of this file (a followed
    #: file: see ``load_appended``), by reader; None when nothing is kept.
    memo: dict[str, Any] | None = None

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


_SPECIAL_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISFIFO, "a named pipe (FIFO)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def check_regular(path: str | Path) -> None:
    """Refuse anything but a regular file (following links) before it is opened.

    Reading a pipe waits for a writer, possibly forever, and a device such as
    ``/dev/zero`` never ends: a clear :class:`LoadError` instead.
    """
    p = Path(path)
    try:
        mode = os.stat(p).st_mode
    except FileNotFoundError:
        raise LoadError(p, "no such file") from None
    except OSError:
        return  # (permission and the like: the read itself reports it)
    if stat.S_ISDIR(mode):
        raise LoadError(p, "is a directory", expected="a transcript file")
    if stat.S_ISREG(mode):
        return
    kind = next((name for test, name in _SPECIAL_KINDS if test(mode)), "a special file")
    raise LoadError(p, f"is {kind}, not a regular file", expected="a transcript file")


def read_bytes(path: str | Path) -> bytes:
    p = Path(path)
    check_regular(p)
    try:
        return p.read_bytes()
    except MemoryError:
        raise LoadError(p, "too large to load into memory") from None
    except FileNotFoundError:
        raise LoadError(p, "no such file") from None
    except IsADirectoryError:
        raise LoadError(p, "is a directory", expected="a transcript file") from None
    except PermissionError:
        raise LoadError(p, "permission denied") from None
    except OSError as exc:
        raise LoadError(p, f"cannot read file: {exc.strerror or exc}") from None


def decode_utf8(path: str | Path, data: bytes) -> str:
    nul = data.find(b"\x00", 0, 8192)
    if nul >= 0 and not data.startswith(SQLITE_MAGIC):
        raise LoadError(
            path,
            "file looks binary (a NUL byte)",
            line=data.count(b"\n", 0, nul) + 1,
            offset=nul,
            expected="UTF-8 JSON text",
        )
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


def key_state(obj: Mapping[str, Any], key: str) -> str:
    """What ``obj`` holds at ``key``, for error messages: ``missing`` when the key is
    absent, else ``a JSON <type>`` (``a JSON null`` for a present null)."""
    return f"a JSON {_json_type(obj[key])}" if key in obj else "missing"


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
