"""Transcript readers and writers, with format auto-detection.

``load(path)`` reads any supported transcript into a :class:`~tinyjuice.model.Transcript`;
``save(transcript, path, format)`` writes one of the writable formats. Bad input raises
:class:`LoadError` with the file, the line or JSON path, and what was expected.
"""

from __future__ import annotations

import importlib
import os
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

from tinyjuice._gc import gc_paused
from tinyjuice.formats._base import (
    FORMAT_NAMES,
    SQLITE_MAGIC,
    JsonlResult,
    LoadError,
    LoadOptions,
    SaveError,
    Source,
    decode_utf8,
    jsonl_head,
    parse_json,
    parse_jsonl,
    read_bytes,
)
from tinyjuice.model import Transcript

__all__ = [
    "FORMAT_NAMES",
    "WRITABLE_FORMATS",
    "LoadError",
    "LoadOptions",
    "SaveError",
    "detect",
    "dumps",
    "load",
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
}

#: Formats tinyjuice can write back.
WRITABLE_FORMATS: tuple[str, ...] = ("openai", "anthropic", "hermes", "sharegpt")


def _module(name: str) -> ModuleType:
    try:
        return importlib.import_module(_MODULES[name])
    except KeyError:
        raise LoadError(
            None, f"unknown format {name!r}", expected="one of " + ", ".join(FORMAT_NAMES)
        ) from None


def _parse(path: Path, data: bytes, options: LoadOptions) -> Source:
    if not data or data.isspace():  # (no copy of the blob, unlike strip())
        raise LoadError(path, "file is empty", expected="a transcript (JSON, JSONL or state.db)")
    if data.startswith(SQLITE_MAGIC):
        return Source(path=path, data=data, doc=None, kind="sqlite")
    if b"\x00" in data[:8192]:
        decode_utf8(path, data)  # raises: the file looks binary
    # orjson rejects invalid UTF-8 itself, so the blob is decoded (for the error that
    # names the byte and line) only when parsing failed or skipped lines.
    try:
        head = jsonl_head(data)
        if head is not None:
            lines = parse_jsonl(path, data, lenient=options.lenient, head=head)
            if lines.bad_lines:
                decode_utf8(path, data)
            return Source(path=path, data=data, doc=lines, kind="jsonl")
        return Source(path=path, data=data, doc=parse_json(path, data), kind="json")
    except LoadError:
        decode_utf8(path, data)  # invalid UTF-8 is reported before any JSON problem
        raise


def _sniff(source: Source) -> tuple[str | None, int]:
    best: tuple[str | None, int] = (None, 0)
    for name in FORMAT_NAMES:
        try:
            score = _module(name).sniff(source)
        except (KeyError, TypeError, ValueError, AttributeError, IndexError):
            # A sniffer that trips over an odd shape is simply not a match.
            score = 0
        if score > best[1]:
            best = (name, score)
    return best


def _as_single_line_jsonl(source: Source) -> Source | None:
    if source.kind != "json" or not isinstance(source.doc, dict):
        return None
    from tinyjuice.formats._base import JsonLine

    return Source(
        path=source.path,
        data=source.data,
        doc=JsonlResult(lines=[JsonLine(1, source.doc)]),
        kind="jsonl",
    )


def _resolve(source: Source, format: str | None) -> tuple[str, Source]:
    if format is not None:
        _module(format)  # validates the name
        return format, source
    name, _ = _sniff(source)
    if name is not None:
        return name, source
    single = _as_single_line_jsonl(source)
    if single is not None:
        name, _ = _sniff(single)
        if name is not None:
            return name, single
    what = {"sqlite": "SQLite database", "jsonl": "JSON lines", "json": "JSON document"}[
        source.kind
    ]
    raise LoadError(
        source.path,
        f"unrecognised transcript ({what}); tried formats: " + ", ".join(FORMAT_NAMES),
        expected="a transcript in one of those formats, or pass --format",
    )


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
        source = _parse(p, data, opts)
        name, source = _resolve(source, format)
        try:
            return _module(name).read(source, opts)
        except LoadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # A reader met a shape it did not expect: report it, never a traceback.
            raise LoadError(
                p, f"not a valid {name} transcript: {type(exc).__name__}: {exc}"
            ) from exc


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
    p = Path(path)
    return load_bytes(read_bytes(p), p, format, options=opts)


def dumps(transcript: Transcript, format: str) -> bytes:
    """Render ``transcript`` in ``format`` (one of :data:`WRITABLE_FORMATS`)."""
    if format not in WRITABLE_FORMATS:
        raise SaveError(
            f"cannot write format {format!r}; writable formats: " + ", ".join(WRITABLE_FORMATS)
        )
    module: Any = _module(format)
    return module.write(transcript)


def save(transcript: Transcript, path: str | Path, format: str) -> None:
    """Write ``transcript`` to ``path`` in ``format``, atomically (temp file + rename)."""
    data = dumps(transcript, format)
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
