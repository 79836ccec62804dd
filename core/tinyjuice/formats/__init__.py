"""Transcript readers and writers, with format auto-detection.

``load(path)`` reads any supported transcript into a :class:`~tinyjuice.model.Transcript`;
``save(transcript, path, format)`` writes one of the writable formats (JSON lines for a
``.jsonl`` path) and ``conversion_losses(transcript, format)`` lists what that format
would drop. Bad input raises :class:`LoadError` with the file, the line or JSON path,
and what was expected.
"""

from __future__ import annotations

import importlib
import os
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, cast

from tinyjuice._gc import gc_paused
from tinyjuice.atomic import atomic_write
from tinyjuice.formats._io import (
    FORMAT_NAMES,
    SQLITE_MAGIC,
    JsonLine,
    JsonlResult,
    LoadError,
    LoadOptions,
    SaveError,
    Source,
    clip,
    clip_text,
    decode_utf8,
    jsonl_head,
    parse_json,
    parse_jsonl,
    read_bytes,
)
from tinyjuice.formats._locate import locate_nearest
from tinyjuice.formats.losses import ConversionLoss, conversion_losses
from tinyjuice.model import Transcript

__all__ = [
    "FORMAT_NAMES",
    "JSONL_SUFFIXES",
    "WRITABLE_FORMATS",
    "ConversionLoss",
    "LoadError",
    "LoadOptions",
    "SaveError",
    "Source",
    "conversion_losses",
    "detect",
    "dumps",
    "load",
    "load_appended",
    "load_bytes",
    "save",
]

_MODULES: dict[str, str] = {
    "openai": "tinyjuice.formats.openai",
    "anthropic": "tinyjuice.formats.anthropic",
    "hermes": "tinyjuice.formats.hermes",
    "claude-code": "tinyjuice.formats.claude_code",
    "codex": "tinyjuice.formats.codex",
    "sharegpt": "tinyjuice.formats.sharegpt",
    "swe-agent": "tinyjuice.formats.swe_agent",
    "gemini-cli": "tinyjuice.formats.gemini_cli",
    "cline": "tinyjuice.formats.cline",
    "opencode": "tinyjuice.formats.opencode",
    "aider": "tinyjuice.formats.aider",
}

#: Formats tinyjuice can write back.
WRITABLE_FORMATS: tuple[str, ...] = ("openai", "anthropic", "hermes", "sharegpt")


class _Reader(Protocol):
    """What every format module provides."""

    def sniff(self, source: Source) -> int: ...
    def read(self, source: Source, options: LoadOptions) -> Transcript: ...


class _Writer(Protocol):
    """What the modules of :data:`WRITABLE_FORMATS` provide besides."""

    def write(self, transcript: Transcript, *, jsonl: bool | None = None) -> bytes: ...


#: The reader modules imported so far, by format name (a dataset asks once per line).
_IMPORTED: dict[str, _Reader] = {}


def _module(name: str) -> _Reader:
    reader = _IMPORTED.get(name)
    if reader is not None:
        return reader
    try:
        # Imported on first use; the type checker holds each module to _Reader (below).
        reader = _IMPORTED[name] = cast(_Reader, importlib.import_module(_MODULES[name]))
        return reader
    except KeyError:
        raise LoadError(
            None, f"unknown format {clip(name)}", expected="one of " + ", ".join(FORMAT_NAMES)
        ) from None


def _is_markdown(path: Path, data: bytes) -> bool:
    """Markdown text (an Aider chat history), not JSON: a heading first, or a .md name."""
    head = data[:64].lstrip(b"\xef\xbb\xbf \t\r\n")
    if head[:1] in (b"{", b"["):
        return False
    return head.startswith(b"#") or path.suffix.lower() in (".md", ".markdown")


def _parse(path: Path, data: bytes, options: LoadOptions) -> Source:
    if not data or data.isspace():  # (no copy of the blob, unlike strip())
        raise LoadError(path, "file is empty", expected="a transcript (JSON, JSONL or state.db)")
    if data.startswith(SQLITE_MAGIC):
        return Source(path=path, data=data, doc=None, kind="sqlite")
    if b"\x00" in data[:8192]:
        decode_utf8(path, data)  # raises: the file looks binary
    if _is_markdown(path, data):
        return Source(path=path, data=data, doc=decode_utf8(path, data), kind="text")
    # orjson rejects invalid UTF-8 itself, so the blob is decoded (for the error that
    # names the byte and line) only when parsing failed or skipped lines.
    try:
        head = jsonl_head(data)
        if head is not None:
            lines = parse_jsonl(path, data, lenient=options.lenient, head=head)
            if lines.bad_lines:
                decode_utf8(path, data)
            return Source(path=path, data=data, doc=lines, kind="jsonl")
        try:
            doc = parse_json(path, data)
        except LoadError:
            found = _lenient_jsonl(path, data)
            if found is None:
                raise
            if not options.lenient:
                n, problem = found.bad_lines[0]
                raise LoadError(
                    path,
                    f"invalid JSON: {problem}",
                    line=n,
                    expected="one JSON object per line (use --lenient to skip bad lines)",
                ) from None
            return Source(path=path, data=data, doc=found, kind="jsonl")
        return Source(path=path, data=data, doc=doc, kind="json")
    except LoadError:
        decode_utf8(path, data)  # invalid UTF-8 is reported before any JSON problem
        raise


def _lenient_jsonl(path: Path, data: bytes) -> JsonlResult | None:
    """With ``--lenient``: JSON lines whose FIRST line is malformed (None when not JSONL).

    :func:`jsonl_head` judges a blob by its first line, so a broken first line made the
    whole file look like one (invalid) JSON document. It is JSON lines when it is no
    JSON document and most of its lines are JSON objects; bad lines are then skipped
    and counted like any other (without ``--lenient`` the first one is reported).
    """
    if data.count(b"\n") < 1:
        return None
    try:
        result = parse_jsonl(path, data, lenient=True)
    except LoadError:
        return None
    # A pretty-printed document with an error has a line or two that parse (``{}``) among
    # many that do not: JSON lines are mostly good lines.
    good = len(result.lines) >= len(result.bad_lines)
    return result if result.bad_lines and result.lines and good else None


#: The parsed kinds each format's reader takes (see :class:`Source`).
_KINDS: dict[str, tuple[str, ...]] = {
    "openai": ("json",),
    "anthropic": ("json",),
    "hermes": ("json", "jsonl", "sqlite"),
    "claude-code": ("jsonl",),
    "codex": ("jsonl",),
    "sharegpt": ("json", "jsonl"),
    "swe-agent": ("json",),
    "gemini-cli": ("json", "jsonl"),
    "cline": ("json",),
    "opencode": ("json", "sqlite"),
    "aider": ("text",),
}
_KIND_NAMES: dict[str, str] = {
    "json": "a JSON document",
    "jsonl": "JSON lines",
    "sqlite": "a SQLite database",
    "text": "Markdown text",
}


def _as_json_document(source: Source) -> Source | None:
    """A JSONL source holding one record, read as that one JSON document.

    ``json.dumps(doc) + "\n"``, ``jq -c .`` and CRLF or trailing blank lines make a
    one-document file look like one line of JSONL.
    """
    if source.kind != "jsonl" or len(source.doc.lines) != 1 or source.doc.bad_lines:
        return None
    return Source(path=source.path, data=source.data, doc=source.doc.lines[0].value, kind="json")


def _as_single_line_jsonl(source: Source) -> Source | None:
    """A JSON object read as a JSONL file of that one record (pretty-printed JSONL)."""
    if source.kind != "json" or not isinstance(source.doc, dict):
        return None
    return Source(
        path=source.path,
        data=source.data,
        doc=JsonlResult(lines=[JsonLine(1, source.doc)]),
        kind="jsonl",
    )


def _readings(source: Source) -> list[Source]:
    """The source as parsed, then its other reading when it holds exactly one record."""
    other = _as_json_document(source) or _as_single_line_jsonl(source)
    return [source] if other is None else [source, other]


def _score(name: str, source: Source) -> int:
    try:
        return _module(name).sniff(source)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError):
        # A sniffer that trips over an odd shape is simply not a match.
        return 0


def _sniff(readings: list[Source]) -> tuple[str | None, Source]:
    """The best-scoring (format, reading); a tie keeps the earlier reading (as parsed).

    A JSON document is read as one JSONL record only when no format takes it as a
    document (a pretty-printed one-line JSONL file): a document is far more often just
    that, and sniffing every format twice would slow every load.
    """
    best: tuple[str | None, Source, int] = (None, readings[0], 0)
    for reading in readings:
        if best[0] is not None and readings[0].kind == "json":
            break
        for name in FORMAT_NAMES:
            if reading.kind not in _KINDS[name]:
                continue
            score = _score(name, reading)
            if score > best[2]:
                best = (name, reading, score)
    return best[0], best[1]


def _what(source: Source) -> str:
    if source.kind == "jsonl":
        n = len(source.doc.lines)
        return "one JSON object" if n == 1 else f"JSON lines ({n} records)"
    return _KIND_NAMES[source.kind]


def _reading_for(name: str, readings: list[Source]) -> Source:
    """The reading a forced ``--format`` takes: one its reader accepts, the likelier one."""
    usable = [r for r in readings if r.kind in _KINDS[name]]
    if not usable:
        kinds = " or ".join(_KIND_NAMES[k] for k in _KINDS[name])
        raise LoadError(
            readings[0].path,
            f"the file holds {_what(readings[0])}, which is not how {name} transcripts are stored",
            expected=f"{kinds} for {name}, or another --format",
        )
    if len(usable) == 1:
        return usable[0]
    return max(usable, key=lambda r: _score(name, r))  # max keeps the first of a tie


def _resolve(source: Source, format: str | None) -> tuple[str, Source]:
    readings = _readings(source)
    if format is not None:
        _module(format)  # validates the name
        return format, _reading_for(format, readings)
    name, reading = _sniff(readings)
    if name is not None:
        return name, reading
    tried = "tried formats: " + ", ".join(FORMAT_NAMES)
    closest = _closest_failure(readings)
    if closest is not None:
        near, exc = closest
        raise LoadError(
            source.path,
            f"unrecognised transcript ({_what(source)}); closest to {near}, whose reader"
            f" stops here: {exc.problem}; {tried}",
            line=exc.line,
            json_path=exc.json_path,
            expected=f"{exc.expected or 'a valid ' + near + ' field'} — or pass --format",
        )
    raise LoadError(
        source.path,
        f"unrecognised transcript ({_what(source)}); {tried}",
        expected="a transcript in one of those formats, or pass --format",
    )


def _closest_failure(readings: list[Source]) -> tuple[str, LoadError] | None:
    """When no format recognises a file: the reader that got furthest into it before
    failing, and its error — which names the damaged field (JSON path, and line).

    Only errors inside an element (a JSON path two steps deep or more) count; a file
    that is simply not a transcript gets none.
    """
    best: tuple[int, str, LoadError] | None = None
    reading = readings[0]  # the file as parsed (not a guess at another layout)
    if reading.kind != "sqlite":
        for name in FORMAT_NAMES:
            if reading.kind not in _KINDS[name]:
                continue
            try:
                _module(name).read(reading, LoadOptions())
            except LoadError as exc:
                depth = _depth(exc)
                if depth >= 2 and (best is None or depth > best[0]):
                    best = (depth, name, exc)
            except (KeyError, TypeError, ValueError, AttributeError, IndexError):
                continue
    return None if best is None else (best[1], best[2])


def _depth(exc: LoadError) -> int:
    """How far into a record a reader's error is: the steps of its JSON path."""
    path = exc.json_path or ""
    return path.count(".") + path.count("[")


def detect(path: str | Path, *, options: LoadOptions | None = None) -> str:
    """Return the format name of the transcript at ``path``."""
    p = Path(path)
    source = _parse(p, read_bytes(p), options or LoadOptions())
    name, _ = _resolve(source, None)
    return name


def load_bytes(
    data: bytes,
    path: str | Path = "<input>",
    format: str | None = None,
    *,
    options: LoadOptions | None = None,
) -> Transcript:
    """Load a transcript from bytes. ``path`` is used for messages and relative lookups."""
    opts = options or LoadOptions()
    p = Path(path)
    # Loading builds hundreds of thousands of objects and no cycles: see gc_paused.
    with gc_paused():
        return _read(_parse(p, data, opts), data, p, format, opts)


def load_appended(
    data: bytes,
    previous: Source | None,
    path: str | Path = "<input>",
    format: str | None = None,
    *,
    options: LoadOptions | None = None,
) -> tuple[Transcript, Source]:
    """:func:`load_bytes` of a file that grew, parsing only its new lines.

    ``previous`` is what the last call returned (None: parse ``data`` whole). When
    ``data`` is JSON lines that extend ``previous``'s bytes (ending at a newline),
    only the new lines are parsed and the lines already parsed are reused; the reader
    then reads them all, so the transcript is exactly :func:`load_bytes`'s (a line that
    changes earlier state, a compaction boundary or a rewind, is read as it would be).
    A reader may keep what it made of each line in ``Source.memo`` (Claude Code keeps
    its parsed lines), so a line already read is not read again.
    Anything else (another file, a rewrite, a new line that does not parse) is parsed
    whole. Returns the transcript and the parsed source to pass next time.
    """
    opts = options or LoadOptions()
    p = Path(path)
    with gc_paused():
        source = _appended(p, data, previous, opts) or _parse(p, data, opts)
        if source.memo is None:
            source.memo = {}
        return _read(source, data, p, format, opts), source


def _appended(
    path: Path, data: bytes, previous: Source | None, options: LoadOptions
) -> Source | None:
    """``previous``'s lines and ``data``'s new ones (None: parse ``data`` whole)."""
    if previous is None or previous.kind != "jsonl" or not isinstance(previous.doc, JsonlResult):
        return None
    old = previous.data
    # (startswith compares in place: no copy of the whole file per append)
    if not old.endswith(b"\n") or len(data) < len(old) or not data.startswith(old):
        return None
    new = data[len(old) :]
    lines = list(previous.doc.lines)
    if new.strip():
        try:
            more = parse_jsonl(path, new, lenient=False)
        except LoadError:
            return None  # a bad line: parsed whole, for the error or the lenient count
        before = _newlines(previous)
        lines += [JsonLine(jl.number + before, jl.value) for jl in more.lines]
    doc = JsonlResult(lines=lines, bad_lines=list(previous.doc.bad_lines))
    return Source(path=path, data=data, doc=doc, kind="jsonl", memo=previous.memo)


#: ``Source.memo`` key of (bytes, newlines) of a source's data, so an append counts
#: only its own lines.
_NEWLINES = "\x00newlines"


def _newlines(source: Source) -> int:
    """How many newlines ``source.data`` holds (counted once per source)."""
    memo = source.memo if source.memo is not None else {}
    known = memo.get(_NEWLINES)
    if isinstance(known, tuple) and known[0] == len(source.data):
        return int(known[1])
    size, old = 0, 0
    if isinstance(known, tuple) and known[0] < len(source.data):
        size, old = known  # counted up to there before
    count = old + source.data.count(b"\n", size)
    memo[_NEWLINES] = (len(source.data), count)
    return count


def _read(
    source: Source, data: bytes, p: Path, format: str | None, opts: LoadOptions
) -> Transcript:
    name = format or "transcript"  # named in the error if resolving itself fails
    try:
        name, source = _resolve(source, format)
        return _module(name).read(source, opts)
    except LoadError as exc:
        raise _with_position(exc, data) from None
    except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
        # A reader met a shape it did not expect: report it, never a traceback.
        raise LoadError(p, f"not a valid {name} transcript: {_shape_problem(exc)}") from exc


def _with_position(exc: LoadError, data: bytes) -> LoadError:
    """A JSON document's error at a JSON path, given the line and byte it points to."""
    if exc.line is not None or not exc.json_path:
        return exc
    offset = locate_nearest(data, exc.json_path)
    if offset is None:
        return exc
    return LoadError(
        exc.path,
        exc.problem,
        line=data.count(b"\n", 0, offset) + 1,
        offset=offset,
        json_path=exc.json_path,
        expected=exc.expected,
    )


def _shape_problem(exc: Exception) -> str:
    """What a reader's unexpected exception says about the input, without Python's names."""
    if isinstance(exc, KeyError) and exc.args:
        return f"a required field {clip(exc.args[0])} is missing"
    if isinstance(exc, IndexError):
        return "a list is shorter than expected"
    if isinstance(exc, (TypeError, AttributeError)):
        return "a value has an unexpected type"
    return clip_text(str(exc), 200) if str(exc) else "an unexpected value"


def load(
    path: str | Path,
    format: str | None = None,
    *,
    lenient: bool = False,
    session: str | None = None,
    include_inactive: bool = False,
) -> Transcript:
    """Load the transcript at ``path``, detecting its format unless ``format`` is given."""
    opts = LoadOptions(lenient=lenient, session=session, include_inactive=include_inactive)
    p = entry_path(Path(path))
    return load_bytes(read_bytes(p), p, format, options=opts)


def entry_path(path: Path) -> Path:
    """The transcript file a directory stands for (a Cline/Roo task directory, an opencode
    data or ``storage`` directory, a project holding an Aider history); else ``path``."""
    if not path.is_dir():
        return path
    from tinyjuice.formats import aider, cline, opencode

    for name in (cline.HISTORY_FILE, aider.HISTORY_FILE):
        if (path / name).is_file():
            return path / name
    return opencode.entry_file(path) or path


#: File suffixes that ask for the JSON-lines layout when :func:`save` is not told.
JSONL_SUFFIXES: tuple[str, ...] = (".jsonl", ".ndjson")


def dumps(transcript: Transcript, format: str, *, jsonl: bool | None = None) -> bytes:
    """Render ``transcript`` in ``format`` (one of :data:`WRITABLE_FORMATS`).

    ``jsonl=True`` asks for the format's JSON-lines layout: every record compact on its
    own line ending in ``\n`` (OpenAI, Anthropic and ShareGPT: the transcript on one
    line; Hermes: the gateway layout, a ``session_meta`` line then one message a line).
    ``jsonl=False`` asks for a JSON document; ``None`` keeps the layout the transcript
    was read in (a ShareGPT JSONL line stays one line).
    """
    if format not in WRITABLE_FORMATS:
        raise SaveError(
            f"cannot write format {clip(format)}; writable formats: " + ", ".join(WRITABLE_FORMATS)
        )
    module = cast(_Writer, _module(format))
    return module.write(transcript, jsonl=jsonl)


def save(
    transcript: Transcript,
    path: str | Path,
    format: str,
    *,
    jsonl: bool | None = None,
    mode: int | None = None,
) -> None:
    """Write ``transcript`` to ``path`` in ``format``, atomically (:func:`~tinyjuice.atomic.
    atomic_write`: an existing file keeps its mode; a new one gets ``mode``, else what
    ``open`` would give it — pass the source's mode so a private transcript stays private).

    ``jsonl`` is as for :func:`dumps`; when not given, a ``.jsonl``/``.ndjson`` path
    gets the JSON-lines layout.
    """
    target = Path(path)
    if jsonl is None and target.suffix.lower() in JSONL_SUFFIXES:
        jsonl = True
    data = dumps(transcript, format, jsonl=jsonl)
    atomic_write(target, data, tag=f"save-{os.getpid()}", mode=mode)


if TYPE_CHECKING:  # the type checker holds every format module to the protocols above
    from tinyjuice.formats import (
        anthropic,
        claude_code,
        codex,
        hermes,
        openai,
        sharegpt,
        swe_agent,
    )

    _READERS: tuple[_Reader, ...] = (
        openai,
        anthropic,
        hermes,
        claude_code,
        codex,
        sharegpt,
        swe_agent,
    )
    _WRITERS: tuple[_Writer, ...] = (openai, anthropic, hermes, sharegpt)
