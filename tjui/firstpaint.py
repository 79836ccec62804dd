"""The inspector's first screen of a large file, remembered in the analysis cache.

Reopening a 100k-message file means reading, parsing and planning ~170 MB again before
anything exact can be drawn. What the first screen shows — the header, the context
bar's breakdown, plan and trigger, the boundary status, how many messages there are and
the first rows of the list with their exact counts — is core's result for the file's
exact bytes, so it is stored beside the file's token counts once a full load has
computed it (:func:`remember`) and drawn at once on the next open (:func:`lookup`)
while the full load goes on in the background. It is used only when the file's bytes
hash to the same sha256 (and have the same size) as the bytes it was computed from,
and when the reading is the same (format, session, model, window, ``--whole-file``,
the counter, the subagent files beside a Claude Code session): any other file shows
nothing from it. Nothing here computes a figure; every figure is core's, stored and
restored as it was.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import stat
import threading
import types
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Union, get_args, get_origin, get_type_hints

from tinyjuice.breakdown import ContextBreakdown
from tinyjuice.cache import AnalysisCache, SourceIdentity, counter_spec, default_cache
from tinyjuice.model import Role
from tinyjuice.pipeline import BoundaryPlan
from tinyjuice.policies import Threshold
from tinyjuice.redact import redact_text
from tinyjuice.subagents import folder_fingerprint
from tjui.widgets.context_bar import ContextBar
from tjui.widgets.message_list import FirstRows, MessageList, RowFace, Zones, row_face

if TYPE_CHECKING:
    from tjui.screens.main import LoadRequest, MainScreen
    from tjui.session import InspectorSession

__all__ = [
    "KIND",
    "MIN_BYTES",
    "FirstPaint",
    "Prefetch",
    "lookup",
    "paint",
    "remember",
    "wanted",
]

#: What the status line adds while the whole transcript loads.
LOADING = "loading the whole transcript…"

#: The cache's result kind; bump the schema when what is stored changes.
KIND = "inspector-first-paint"
SCHEMA = 1
#: Smaller files load in well under a second: not worth an entry.
MIN_BYTES = 4 * 1024 * 1024
#: Rows of each kind stored (more than a terminal shows).
ROWS = 200
_CHUNK = 1 << 20


@dataclass(frozen=True, slots=True)
class FirstPaint:
    """What the first screen shows of a file, as a full load computed it."""

    header: str
    status: str
    rule: str
    #: Whether the bar says the "after" figure is being computed (small transcripts).
    computing: bool
    breakdown: ContextBreakdown
    plan: BoundaryPlan
    trigger: Threshold | None
    rows: FirstRows


# --------------------------------------------------------------------------- lookup


def _params(request: LoadRequest) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "fmt": request.fmt,
        "session": request.session,
        "model": request.model,
        "context_window": request.context_window,
        "whole_file": request.whole_file,
        "counter": counter_spec(),
    }


def _usable(request: LoadRequest) -> AnalysisCache | None:
    if request.subagent is not None:
        return None  # a sidechain is no file of its own
    return default_cache()


def _hash(path: str) -> tuple[int, bytes, int] | None:
    """(size, sha256, mtime_ns) of the file's bytes, read in chunks (None: unreadable,
    or not a regular file). The hashing releases the GIL: the UI keeps running."""
    h = hashlib.sha256()
    size = 0
    buf = bytearray(_CHUNK)
    view = memoryview(buf)
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            while n := fh.readinto(buf):
                h.update(view[:n])
                size += n
    except OSError:
        return None
    return size, h.digest(), st.st_mtime_ns


def lookup(request: LoadRequest) -> FirstPaint | None:
    """The first screen stored for the file's current bytes read this way, or None."""
    cache = _usable(request)
    if cache is None:
        return None
    path = os.path.realpath(Path(request.path).expanduser())  # as the store resolves it
    params = _params(request)
    try:
        size = os.stat(path).st_size
    except OSError:
        return None
    if size < MIN_BYTES or cache.result_size(path, KIND, params) != size:
        return None  # nothing stored, or other bytes: no need to hash them
    hashed = _hash(path)
    if hashed is None:
        return None
    identity = SourceIdentity(path, hashed[0], hashed[2], hashed[1])
    value = cache.get_result(identity, KIND, params)
    if not isinstance(value, dict):
        return None
    try:
        first = _decode_first(value)
    except (KeyError, TypeError, ValueError):
        return None  # written by other code: ignored, rebuilt by the full load
    if value.get("subagents") != _subagent_files(request.path, value.get("format")):
        return None  # subagent files came or went: their count is in the breakdown
    return first


class Prefetch:
    """A :func:`lookup` started as soon as the app is made, in a daemon thread, so the
    file is hashed while Textual starts up; :meth:`result` answers it once."""

    def __init__(self, request: LoadRequest) -> None:
        self.request = request
        self._result: FirstPaint | None = None
        self._done = threading.Event()
        self._used = False
        threading.Thread(target=self._run, name="tjui-first-paint", daemon=True).start()

    def _run(self) -> None:
        try:
            self._result = lookup(self.request)
        except Exception:  # a miss, as every failure to use the cache is
            self._result = None
        finally:
            self._done.set()

    def result(self, request: LoadRequest) -> FirstPaint | None:
        """The lookup for ``request``: the prefetched one the first time it is asked
        for the request it was started for, else a fresh one."""
        if self._used or request != self.request:
            return lookup(request)
        self._used = True
        self._done.wait()
        return self._result


def _subagent_files(path: Path, fmt: object) -> list[str]:
    """The subagent files a Claude Code session's breakdown counts (names only)."""
    if fmt != "claude-code":
        return []
    return [name for name, _, _ in folder_fingerprint(Path(path))]


def paint(screen: MainScreen, first: FirstPaint) -> None:
    """Draw ``first`` on the inspector's main screen; its session replaces it."""
    from textual.widgets import Static

    screen.query_one("#loading").add_class("-hidden")
    lst = screen.query_one(MessageList)
    lst.show_first_rows(first.rows)
    lst.set_zones(Zones(first.plan.start, first.plan.end), first.rule)
    screen.query_one("#file-header", Static).update(first.header)
    screen.query_one(ContextBar).update_data(
        first.breakdown, first.plan, first.trigger, computing=first.computing
    )
    screen._show_status(f"{first.status} · {LOADING}")


# --------------------------------------------------------------------------- remember


def wanted(request: LoadRequest, identity: SourceIdentity | None) -> bool:
    """Whether a first screen of these bytes would be stored (worth computing)."""
    return (
        identity is not None
        and identity.size >= MIN_BYTES
        and request.subagent is None
        and default_cache() is not None
    )


def remember(
    request: LoadRequest,
    identity: SourceIdentity | None,
    session: InspectorSession,
    history_tokens: tuple[int, ...],
) -> None:
    """Store the first screen of ``session`` — a full load of ``request`` with exact
    counts, its boundary as first planned — for the bytes ``identity`` names."""
    from tjui.screens.main import AUTO_PROJECT_MAX, boundary_status, header_text, rule_label

    cache = _usable(request)
    if cache is None or identity is None or not wanted(request, identity):
        return
    if session.tokens.counter == "rough":
        return
    t, plan = session.transcript, session.plan
    history = session.split.history if session.split is not None else ()
    value = {
        "format": t.format,
        "subagents": _subagent_files(request.path, t.format),
        "header": header_text(session, request.path),
        "status": boundary_status(session),
        "rule": rule_label(plan, session.live_from),
        "computing": not plan.no_op and len(t.messages) <= AUTO_PROJECT_MAX,
        "breakdown": _encode(session.breakdown),
        "plan": _encode(plan),
        "trigger": _encode(session.trigger),
        "count": len(t.messages),
        "history": len(history),
        "history_faces": [_face_row(row_face(m)) for m in history[:ROWS]],
        "history_tokens": list(history_tokens[:ROWS]),
        "faces": [_face_row(row_face(m)) for m in t.messages[:ROWS]],
        "tokens": list(session.tokens.per_message[:ROWS]),
    }
    cache.put_result(identity, KIND, _params(request), value)


def _face_row(face: RowFace) -> list[str]:
    # The cache is a file outside the original: a preview is stored redacted (the full
    # load then shows the row as it is).
    return [face.role.value, face.style, face.marker, redact_text(face.preview)]


def _decode_first(value: dict[str, Any]) -> FirstPaint:
    def faces(rows: list[list[str]]) -> tuple[RowFace, ...]:
        return tuple(RowFace(Role(r), str(s), str(m), str(p)) for r, s, m, p in rows)

    def ints(values: list[Any]) -> tuple[int, ...]:
        if not all(type(v) is int for v in values):
            raise ValueError("not a count")
        return tuple(values)

    rows = FirstRows(
        count=int(value["count"]),
        history=int(value["history"]),
        history_faces=faces(value["history_faces"]),
        history_tokens=ints(value["history_tokens"]),
        faces=faces(value["faces"]),
        tokens=ints(value["tokens"]),
    )
    if len(rows.faces) != len(rows.tokens) or len(rows.history_faces) > len(rows.history_tokens):
        raise ValueError("rows and counts differ")
    trigger = value["trigger"]
    return FirstPaint(
        header=str(value["header"]),
        status=str(value["status"]),
        rule=str(value["rule"]),
        computing=bool(value["computing"]),
        breakdown=_decode(ContextBreakdown, value["breakdown"]),
        plan=_decode(BoundaryPlan, value["plan"]),
        trigger=None if trigger is None else _decode(Threshold, trigger),
        rows=rows,
    )


# --------------------------------------------------------------------------- codec


def _encode(value: Any) -> Any:
    """A frozen dataclass of numbers, strings, enums and tuples, as JSON values."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [_encode(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    raise TypeError(f"cannot store {type(value).__name__}")


def _decode(tp: Any, value: Any) -> Any:
    """``value`` (from :func:`_encode`) as type ``tp``; ValueError/TypeError if it is not."""
    origin = get_origin(tp)
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        if value is None and type(None) in args:
            return None
        (inner,) = [a for a in args if a is not type(None)]
        return _decode(inner, value)
    if origin is tuple:
        args = get_args(tp)
        if len(args) != 2 or args[1] is not Ellipsis or not isinstance(value, list):
            raise TypeError(f"cannot read {tp}")
        return tuple(_decode(args[0], v) for v in value)
    if origin is Literal:
        if value not in get_args(tp):
            raise ValueError(f"{value!r} is not one of {get_args(tp)}")
        return value
    if isinstance(tp, type) and issubclass(tp, Enum):
        return tp(value)
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise TypeError(f"cannot read {tp.__name__}")
        hints = get_type_hints(tp)
        return tp(**{f.name: _decode(hints[f.name], value[f.name]) for f in dataclasses.fields(tp)})
    if tp is float and type(value) in (int, float):
        return float(value)
    if tp in (int, str, bool) and type(value) is tp:
        return value
    raise TypeError(f"cannot read {value!r} as {tp}")
