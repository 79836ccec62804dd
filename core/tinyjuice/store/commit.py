"""Commit a compaction durably — archive first, then write — and undo it.

Details: docs/store.md (`tinyjuice.store.commit`).
"""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson

from tinyjuice.atomic import (
    atomic_write,
    checkpoint,
    file_digest,
    file_mode,
    fsync_dir,
    output_target,
    sha256_hex,
    temp_path_for,
)
from tinyjuice.formats import (
    JSONL_SUFFIXES,
    WRITABLE_FORMATS,
    LoadOptions,
    conversion_losses,
    dumps,
    load,
    load_appended,
    load_bytes,
)
from tinyjuice.formats._io import (
    SQLITE_MAGIC,
    LoadError,
    SaveError,
    Source,
    check_regular,
    read_bytes,
)
from tinyjuice.live import LiveSplit, with_history
from tinyjuice.model import MediaPart, Message, Role, TextPart, ThinkingPart, Transcript
from tinyjuice.report import CompactionReport, CompactionResult, PersistenceRecommendation, Status
from tinyjuice.store import hermes_commit
from tinyjuice.store.archive import (
    Archive,
    ArchiveError,
    ChangedSinceCommit,
    CommitError,
    CommitMode,
    CommitRecord,
    CommitState,
    SourceKind,
    StaleSourceError,
    new_commit_id,
)
from tinyjuice.store.archive_lease import SqliteLease

__all__ = [
    "CommitPlan",
    "LoadedSource",
    "SourceRef",
    "archived_mode",
    "claude_code_continuation",
    "commit",
    "history",
    "load_source",
    "plan_commit",
    "recover",
    "undo",
]

Progress = Callable[[str], None]

#: Formats that are never modified in place (the agent owns them).
_NEVER_IN_PLACE = {"claude-code": "Claude Code sessions are never modified in place"}


# ------------------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True)
class SourceRef:
    """What a commit reads from: a file, or one session of a Hermes ``state.db``."""

    path: Path
    session_id: str | None = None
    is_db: bool = False

    @property
    def kind(self) -> SourceKind:
        return SourceKind.HERMES_DB if self.is_db else SourceKind.FILE

    @property
    def key(self) -> str:
        """The lease key: the real path, plus the session for a database."""
        if self.is_db:
            return f"hermes-db:{self.path}#{self.session_id}"
        return f"file:{self.path}"

    @property
    def label(self) -> str:
        return f"{self.path} (session {self.session_id})" if self.is_db else str(self.path)


@dataclass(frozen=True, slots=True)
class LoadedSource:
    """A transcript and the exact bytes it was loaded from (their sha256 and size).

    For a Hermes ``state.db`` the bytes are the session's snapshot
    (:func:`tinyjuice.store.hermes_commit.session_snapshot`), not the whole database.
    """

    ref: SourceRef
    format: str
    data: bytes
    sha256: str
    size: int
    transcript: Transcript
    #: The parsed file (``load_source(..., follow=True)``): what
    #: :func:`~tinyjuice.formats.load_appended` extends when the file grows.
    parsed: Source | None = field(default=None, compare=False, repr=False)

    @property
    def path(self) -> Path:
        return self.ref.path


def load_source(
    path: str | Path,
    format: str | None = None,
    *,
    session: str | None = None,
    lenient: bool = False,
    follow: bool = False,
) -> LoadedSource:
    """Load a transcript for committing: read once, remember what was read.

    ``follow`` keeps the parsed file (``LoadedSource.parsed``) for following it as it
    grows: the first append then parses only its own lines.

    Raises :class:`~tinyjuice.formats.LoadError` for unreadable input.
    """
    p = Path(os.path.realpath(Path(path).expanduser()))
    check_regular(Path(path).expanduser())  # a pipe or device is refused before opening
    try:
        with p.open("rb") as fh:
            head = fh.read(len(SQLITE_MAGIC))
    except OSError:
        head = b""  # read_bytes below reports the problem clearly
    if head == SQLITE_MAGIC and not _is_opencode_db(p, format):
        return _load_db(p, format, session, lenient)
    data = read_bytes(p)
    opts = LoadOptions(lenient=lenient, session=session)
    # Errors name the file as the user gave it; the resolved path is the identity.
    parsed = None
    if follow:
        transcript, parsed = load_appended(data, None, Path(path), format, options=opts)
    else:
        transcript = load_bytes(data, Path(path), format, options=opts)
    return LoadedSource(
        SourceRef(p), transcript.format, data, sha256_hex(data), len(data), transcript, parsed
    )


def _is_opencode_db(p: Path, format: str | None) -> bool:
    """An opencode.db is read like a file (read-only: never committed into)."""
    from tinyjuice.formats import opencode

    return format == "opencode" or (format is None and opencode.is_database(p))


def _load_db(p: Path, format: str | None, session: str | None, lenient: bool) -> LoadedSource:
    for _ in range(5):
        transcript = load(p, format, session=session, lenient=lenient)
        sid = transcript.session_id
        if sid is None:
            raise LoadError(p, "the database session has no id", expected="a Hermes state.db")
        before = hermes_commit.read_snapshot(p, sid)
        again = load(p, format, session=sid, lenient=lenient)
        after = hermes_commit.read_snapshot(p, sid)
        if before == after and again.messages == transcript.messages:
            ref = SourceRef(p, sid, is_db=True)
            return LoadedSource(ref, again.format, after, sha256_hex(after), len(after), again)
        time.sleep(0.05)
    raise CommitError(f"session in {p} keeps changing while it is read; try again in a moment")


# --------------------------------------------------------------------------- plans


@dataclass(frozen=True, slots=True)
class CommitPlan:
    """What a commit will do, worked out before anything is touched (the UI shows it)."""

    commit_id: str
    mode: CommitMode
    source: LoadedSource
    transcript: Transcript
    report: CompactionReport | None
    target_kind: SourceKind
    target_path: Path
    target_session: str | None
    target_format: str
    #: The bytes a file target receives (None for a database target).
    data: bytes | None
    notes: tuple[str, ...] = ()
    #: The summary's appendix (what the fallback left out), archived with the commit.
    appendix: bytes | None = None

    @property
    def tokens_before(self) -> int | None:
        return self.report.before_tokens if self.report is not None else None

    @property
    def tokens_after(self) -> int | None:
        return self.report.after_tokens if self.report is not None else None

    @property
    def summary_kind(self) -> str | None:
        return self.report.summary_kind.value if self.report is not None else None

    @property
    def target_label(self) -> str:
        if self.target_session is not None:
            return f"{self.target_path} (session {self.target_session})"
        return str(self.target_path)

    def archived_description(self) -> str:
        """One line: what goes into the archive before anything is written."""
        src = self.source
        what = "session snapshot" if src.ref.is_db else "original file"
        line = f"{what} {src.ref.label} ({src.size:,} bytes, sha256 {src.sha256[:12]}…)"
        if self.mode is CommitMode.EXPORT and self.target_path.exists():
            line += f"; and the existing {self.target_path.name}, which the export replaces"
        return line + " + the compaction report"


def _unpack(result: CompactionResult | Transcript) -> tuple[Transcript, CompactionReport | None]:
    if isinstance(result, CompactionResult):
        if result.report.status is not Status.COMPACTED:
            raise CommitError(
                f"nothing to commit: compaction {result.report.status.value}"
                f" — {result.report.reason}"
            )
        return result.transcript, result.report
    if isinstance(result, Transcript):
        return result, None
    raise TypeError(f"commit() takes a CompactionResult or a Transcript, not {type(result)}")


def _summary_message(transcript: Transcript, result: Any) -> Message | None:
    if isinstance(result, CompactionResult) and result.summary_message is not None:
        return result.summary_message
    return next((m for m in transcript.messages if m.meta.is_summary), None)


def _resolve_mode(
    mode: CommitMode | str | None, report: CompactionReport | None, source: LoadedSource
) -> tuple[CommitMode, list[str]]:
    notes: list[str] = []
    if mode is not None:
        try:
            chosen = CommitMode(mode)
        except ValueError:
            raise CommitError(
                f"unknown commit mode {mode!r}; use one of: "
                + ", ".join(m.value for m in CommitMode)
            ) from None
        if chosen is CommitMode.IN_PLACE and source.format in _NEVER_IN_PLACE:
            raise CommitError(
                f"{_NEVER_IN_PLACE[source.format]}; commit it as a child (a new session"
                " that continues it) or as an export instead"
            )
        return chosen, notes
    if report is None or report.persistence is PersistenceRecommendation.IN_PLACE_ARCHIVE:
        chosen = CommitMode.IN_PLACE
    elif report.persistence is PersistenceRecommendation.CHILD_CONTINUATION:
        chosen = CommitMode.CHILD
    else:
        raise CommitError("nothing to commit: the engine recommends no persistence change")
    if chosen is CommitMode.IN_PLACE and source.format in _NEVER_IN_PLACE:
        notes.append(f"{_NEVER_IN_PLACE[source.format]}: writing a child session instead")
        chosen = CommitMode.CHILD
    return chosen, notes


def _regular_target(path: Path) -> None:
    """A commit writes regular files only (undo must be able to put them back): a
    stream, device or pipe is refused; a symlink is fine (the file it names is written)."""
    try:
        kind = output_target(path)
    except OSError as exc:
        raise CommitError(f"{path}: {exc}") from None
    if kind is not None:
        raise CommitError(
            f"{path} is a {'standard stream' if kind == 'stream' else kind}, not a file; a"
            " commit writes a file it can undo — write to a stream with `tjui compress -o`"
            " (without --commit)"
        )


def _writable_dir(path: Path) -> None:
    parent = path.parent
    if path.is_dir():
        raise CommitError(f"{path} is a directory; give a file path")
    if not parent.is_dir():
        raise CommitError(f"cannot write {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise CommitError(f"cannot write {path}: directory {parent} is not writable")


def _trajectory_count(data: bytes) -> int:
    stripped = data.lstrip()
    if stripped.startswith(b"["):
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError:
            return 1
        return len(doc) if isinstance(doc, list) else 1
    if stripped.startswith(b"{"):
        return sum(1 for line in data.split(b"\n") if line.strip())
    return 1


def _check_in_place_format(source: LoadedSource) -> None:
    fmt = source.format
    if fmt not in WRITABLE_FORMATS:
        raise CommitError(
            f"tinyjuice cannot write {fmt} transcripts, so it cannot replace this one in"
            " place; export it instead, to a file in one of: " + ", ".join(WRITABLE_FORMATS)
        )
    kind = source.transcript.extra.get("_hermes_source")
    if fmt == "hermes" and kind == "gateway":
        raise CommitError(
            "a Hermes gateway JSONL cannot be rewritten in place (tinyjuice writes session"
            " logs); commit it as a child or as an export instead"
        )
    if fmt == "sharegpt" and _trajectory_count(source.data) > 1:
        raise CommitError(
            f"{source.path.name} holds several trajectories and only the first was compacted;"
            " replacing the file would drop the others — commit it as a child or as an export instead"
        )


def _default_child_path(source: LoadedSource, commit_id: str, session: str | None) -> Path:
    src = source.path
    if source.format == "claude-code":
        return src.with_name(f"{session}.jsonl")
    if source.format == "hermes":
        return src.with_name(f"session_{session}.json")
    suffix = src.suffix or ".json"
    return src.with_name(f"{src.stem}.child-{commit_id}{suffix}")


def _render(
    transcript: Transcript,
    fmt: str,
    source: LoadedSource,
    summary: Message | None,
    *,
    jsonl: bool | None = None,
    **kw: Any,
) -> bytes:
    try:
        if fmt == "claude-code":
            return claude_code_continuation(transcript, source, summary=summary, **kw)
        return dumps(transcript, fmt, jsonl=jsonl)
    except SaveError as exc:
        raise CommitError(str(exc)) from None


def _check_reads_back(data: bytes, path: Path, fmt: str, transcript: Transcript) -> None:
    reader = fmt
    try:
        back = load_bytes(data, path, reader)
    except LoadError as exc:
        raise CommitError(
            f"the compacted transcript would not read back as {fmt} ({exc.problem});"
            " nothing was written"
        ) from None
    if fmt == transcript.format and len(back.messages) != len(transcript.messages):
        raise CommitError(
            f"the compacted transcript reads back with {len(back.messages)} messages instead"
            f" of {len(transcript.messages)}; nothing was written"
        )


def plan_commit(
    result: CompactionResult | Transcript,
    source: LoadedSource,
    *,
    mode: CommitMode | str | None = None,
    target: str | Path | None = None,
    target_format: str | None = None,
    commit_id: str | None = None,
    split: LiveSplit | None = None,
) -> CommitPlan:
    """Work out a commit without touching anything; raises :class:`CommitError` if it
    cannot be done (and says what would work).

    ``split`` says ``result`` compacted only the live part of ``source`` (what the agent
    sends after its last compaction, :func:`tinyjuice.live.live_split`): committed in
    place, the history before it is written back as it was (nothing is lost); a child
    or an export starts from the compacted live part.
    """
    transcript, report = _unpack(result)
    chosen, notes = _resolve_mode(mode, report, source)
    if split is not None and split.start and chosen is CommitMode.IN_PLACE:
        transcript = with_history(split, transcript)
    cid = commit_id or new_commit_id()
    summary = _summary_message(transcript, result)
    if target:
        _regular_target(Path(target).expanduser())
    target_path = Path(os.path.realpath(Path(target).expanduser())) if target else None

    if source.ref.is_db and chosen is not CommitMode.EXPORT:
        if target_path is not None and target_path != source.path:
            raise CommitError(
                f"a {chosen.value} commit of a state.db session writes into the same database;"
                " a target path is only for an export"
            )
        session = source.ref.session_id if chosen is CommitMode.IN_PLACE else None
        session = session or hermes_commit.new_session_id()
        return CommitPlan(
            cid, chosen, source, transcript, report, SourceKind.HERMES_DB, source.path,
            session, "hermes", None, tuple(notes), _appendix(result),
        )  # fmt: skip

    if chosen is CommitMode.IN_PLACE:
        fmt, out_path, session, data = _plan_in_place(
            transcript, source, target_path, target_format, summary
        )
    elif chosen is CommitMode.CHILD:
        fmt, out_path, session, data, transcript = _plan_child(
            transcript, source, report, target_path, target_format, summary, cid
        )
    else:
        fmt, out_path, data = _plan_export(transcript, source, target_path, target_format, summary)
        session = None
        notes += [f"{fmt} export drops {loss}" for loss in conversion_losses(transcript, fmt)]
    _writable_dir(out_path)
    return CommitPlan(
        cid, chosen, source, transcript, report, SourceKind.FILE, out_path, session, fmt, data,
        tuple(notes), _appendix(result),
    )  # fmt: skip


def _plan_in_place(
    transcript: Transcript,
    source: LoadedSource,
    target_path: Path | None,
    target_format: str | None,
    summary: Message | None,
) -> tuple[str, Path, None, bytes]:
    """``(format, path, session, data)`` of an in-place commit of a file."""
    if target_path is not None and target_path != source.path:
        raise CommitError(
            "an in-place commit writes the source itself; a target path is only for an export"
        )
    if target_format is not None and target_format != source.format:
        raise CommitError(
            "an in-place commit keeps the source's format; another format is only for an export"
        )
    _check_in_place_format(source)
    fmt, out_path = source.format, source.path
    data = _render(transcript, fmt, source, summary)
    _check_reads_back(data, out_path, fmt, transcript)
    return fmt, out_path, None, data


def _plan_child(
    transcript: Transcript,
    source: LoadedSource,
    report: CompactionReport | None,
    target_path: Path | None,
    target_format: str | None,
    summary: Message | None,
    cid: str,
) -> tuple[str, Path, str | None, bytes, Transcript]:
    """``(format, path, session, data, child)`` of a child continuation in a file."""
    if source.format == "claude-code":
        fmt, session = "claude-code", str(uuid.uuid4())
    elif source.format == "hermes":
        fmt, session = "hermes", hermes_commit.new_session_id()
    elif source.format in WRITABLE_FORMATS:
        fmt, session = source.format, None
    else:
        raise CommitError(
            f"tinyjuice cannot write {source.format} transcripts, so it cannot write a"
            " child in that format; export it instead, to a file in one of: "
            + ", ".join(WRITABLE_FORMATS)
        )
    if target_format is not None and target_format != fmt:
        raise CommitError(
            "a child continuation keeps the source's format; another format is only for an export"
        )
    out_path = target_path or _default_child_path(source, cid, session)
    if out_path == source.path:
        raise CommitError(
            "a child continuation never writes over its source; choose another target path"
        )
    if out_path.exists():
        raise CommitError(f"{out_path} already exists; a child continuation never replaces a file")
    child = transcript
    if fmt == "hermes" and session is not None:
        extra = dict(transcript.extra)
        if source.transcript.session_id:
            extra["parent_session_id"] = source.transcript.session_id
        child = replace(transcript, session_id=session, extra=extra)
    pre = report.prompt_tokens if report is not None else None
    extra_kw: dict[str, Any] = (
        {"session_id": session, "pre_tokens": pre} if fmt == "claude-code" else {}
    )
    data = _render(child, fmt, source, summary, **extra_kw)
    _check_reads_back(data, out_path, fmt, child)
    return fmt, out_path, session, data, child


def _plan_export(
    transcript: Transcript,
    source: LoadedSource,
    target_path: Path | None,
    target_format: str | None,
    summary: Message | None,
) -> tuple[str, Path, bytes]:
    """``(format, path, data)`` of an export to another file."""
    if target_path is None:
        raise CommitError("an export needs a target path")
    if target_path == source.path:
        raise CommitError("an export never writes over its source; commit in place instead")
    fmt = target_format or source.format
    if fmt not in WRITABLE_FORMATS:
        raise CommitError(
            f"cannot write {fmt!r} transcripts; export to one of: " + ", ".join(WRITABLE_FORMATS)
        )
    # A .jsonl target gets JSON lines; what the target format cannot hold is said.
    jsonl = True if target_path.suffix.lower() in JSONL_SUFFIXES else None
    data = _render(transcript, fmt, source, summary, jsonl=jsonl)
    _check_reads_back(data, target_path, fmt, transcript)
    return fmt, target_path, data


def _appendix(result: CompactionResult | Transcript) -> bytes | None:
    """The summary appendix of an engine result, as the bytes the archive stores (its
    sha256 starts with the id the summary names)."""
    text = getattr(result, "appendix", None)
    return text.encode() if text else None


# ------------------------------------------------------------------------- commit


def _new_record(plan: CommitPlan, now: float, before: tuple[str, int] | None) -> CommitRecord:
    report = plan.report
    src = plan.source
    data = plan.data
    return CommitRecord(
        id=plan.commit_id,
        state=CommitState.PENDING,
        mode=plan.mode,
        source_kind=src.ref.kind,
        source_path=str(src.path),
        source_session=src.ref.session_id,
        format=src.format,
        target_kind=plan.target_kind,
        target_path=str(plan.target_path),
        target_session=plan.target_session,
        target_format=plan.target_format,
        source_sha256=src.sha256,
        source_size=src.size,
        before_sha256=before[0] if before else None,
        before_size=before[1] if before else None,
        after_sha256=sha256_hex(data) if data is not None else None,
        after_size=len(data) if data is not None else None,
        boundary_start=report.boundary_start if report else None,
        boundary_end=report.boundary_end if report else None,
        profile=report.profile.value if report else None,
        summary_kind=report.summary_kind.value if report else None,
        tokens_before=report.before_tokens if report else None,
        tokens_after=report.after_tokens if report else None,
        report=report.to_dict() if report else None,
        created_at=now,
        note="; ".join(plan.notes) or None,
        plan={} if src.ref.is_db else {"mode": file_mode(src.path)},
    )


def _stale(source: LoadedSource, *, during_swap: bool = False) -> StaleSourceError:
    if during_swap:
        return StaleSourceError(
            f"{source.ref.label} changed while it was being replaced (an agent wrote to it"
            " at that moment); it was put back as the agent left it and nothing was"
            " committed — reload it and compact again"
        )
    return StaleSourceError(
        f"{source.ref.label} changed since it was loaded (an agent may have appended a"
        " turn); nothing was written — reload it and compact again"
    )


def _check_source(source: LoadedSource) -> None:
    if source.ref.is_db:
        try:
            current = hermes_commit.read_snapshot(source.path, source.ref.session_id or "")
        except StaleSourceError:
            raise _stale(source) from None
        except LoadError as exc:
            if not source.path.exists():
                raise _stale(source) from None
            raise CommitError(
                f"cannot read {source.ref.label} to check it is unchanged ({exc.problem});"
                " nothing was written"
            ) from None
        if sha256_hex(current) != source.sha256:
            raise _stale(source)
        return
    now = file_digest(source.path)
    if now is None or now[0] != source.sha256:
        raise _stale(source)


def commit(
    result: CompactionResult | Transcript,
    source: LoadedSource,
    *,
    mode: CommitMode | str | None = None,
    target: str | Path | None = None,
    target_format: str | None = None,
    archive: Archive | None = None,
    lease: SqliteLease | None = None,
    progress: Progress | None = None,
    plan: CommitPlan | None = None,
    split: LiveSplit | None = None,
) -> CommitRecord:
    """Persist a compaction: archive the original first, then write; return the record.

    ``result`` is the engine's :class:`~tinyjuice.report.CompactionResult` (its report's
    persistence recommendation picks the mode unless ``mode`` is given) or a bare
    :class:`~tinyjuice.model.Transcript`. ``source`` is what :func:`load_source` gave.
    ``mode``: ``in-place`` (replace the source; Hermes: same session), ``child`` (new
    file / session with lineage; source untouched) or ``export`` (``target`` path in
    ``target_format``). ``split``: as for :func:`plan_commit`. Raises
    :class:`StaleSourceError`, :class:`LeaseBusy` or :class:`CommitError` — in each case
    nothing was changed.
    """
    say = progress or (lambda _stage: None)
    plan = plan or plan_commit(
        result, source, mode=mode, target=target, target_format=target_format, split=split
    )
    store = archive or Archive()
    leases = lease or SqliteLease(store)
    say("checking")
    recover(store, lease=leases)
    with leases.hold(source.ref.key):
        if source.ref.is_db:
            holder_label = leases.holder.replace("tjui:", "tjui-commit:", 1)
            with hermes_commit.compression_lock(
                source.path, source.ref.session_id or "", holder=holder_label
            ):
                return _commit_db(plan, store, say)
        return _commit_file(plan, store, say)


def _commit_file(plan: CommitPlan, store: Archive, say: Progress) -> CommitRecord:
    checkpoint("lease-acquired")
    source = plan.source
    _check_source(source)
    target = plan.target_path
    in_place = plan.mode is CommitMode.IN_PLACE
    before_data: bytes | None = None
    if in_place:
        before_data = source.data
    elif target.exists():
        if plan.mode is CommitMode.CHILD:
            raise CommitError(f"{target} appeared meanwhile; a child never replaces a file")
        try:
            before_data = target.read_bytes()
        except OSError as exc:
            raise CommitError(f"cannot read {target} to archive it: {exc.strerror}") from None
    before = (sha256_hex(before_data), len(before_data)) if before_data is not None else None
    record = _new_record(plan, time.time(), before)

    checkpoint("before-archive")
    say("archiving")
    with store.transaction() as conn:
        store.put_blob(conn, source.data)
        if before_data is not None:
            store.put_blob(conn, before_data)
        if plan.appendix:
            store.put_blob(conn, plan.appendix)
        store.insert_commit(conn, record)
    checkpoint("after-archive")

    say("writing")
    assert plan.data is not None

    def last_look() -> None:
        _check_source(source)
        if not in_place and before is None and target.exists():
            raise CommitError(f"{target} appeared meanwhile; nothing was written")

    def replaced_intact(old: bytes) -> None:
        # What the rename replaced, read after the swap: a write that landed between
        # the last look and the rename is caught here, and the file is put back.
        if before is not None and sha256_hex(old) != before[0]:
            raise _stale(source, during_swap=True)

    try:
        atomic_write(
            target,
            plan.data,
            tag=record.id,
            mode=file_mode(source.path),
            before_rename=last_look,
            check_replaced=replaced_intact,
        )
    except BaseException as exc:
        with store.transaction() as conn:
            store.update_commit(conn, record.id, state=CommitState.ABORTED, note=str(exc))
        if isinstance(exc, OSError):
            raise CommitError(f"could not write {target}: {exc.strerror or exc}") from None
        raise
    checkpoint("before-done")
    return _finish(store, record)


def _finish(store: Archive, record: CommitRecord, **changes: Any) -> CommitRecord:
    done = time.time()
    try:
        with store.transaction() as conn:
            store.update_commit(
                conn, record.id, state=CommitState.DONE, completed_at=done, **changes
            )
        return store.get(record.id)
    except ArchiveError as exc:
        raise _written_unrecorded(record.target_label, exc) from None


def _written_unrecorded(target: str, exc: ArchiveError) -> CommitError:
    """The target was written but the archive could not record it (its disk filled)."""
    why = str(exc).split(";")[0]
    return CommitError(
        f"{target} was written, but the archive could not record that ({why}); the"
        " original is archived, and the next tjui command settles the commit (see"
        " `tjui history`)"
    )


def _commit_db(plan: CommitPlan, store: Archive, say: Progress) -> CommitRecord:
    checkpoint("lease-acquired")
    source = plan.source
    _check_source(source)
    in_place = plan.mode is CommitMode.IN_PLACE
    before = (source.sha256, source.size) if in_place else None
    record = _new_record(plan, time.time(), before)

    checkpoint("before-archive")
    say("archiving")
    with store.transaction() as conn:
        store.put_blob(conn, source.data)
        if plan.appendix:
            store.put_blob(conn, plan.appendix)
        store.insert_commit(conn, record)
    checkpoint("after-archive")

    say("writing")

    def record_plan(write: hermes_commit.HermesWrite) -> None:
        with store.transaction() as conn:
            store.update_commit(
                conn,
                record.id,
                plan=write.plan(),
                after_sha256=sha256_hex(write.after),
                after_size=len(write.after),
                target_session=write.target_session,
            )

    session = source.ref.session_id or ""
    try:
        if in_place:
            hermes_commit.commit_in_place(
                source.path,
                session,
                plan.transcript,
                expected_sha=source.sha256,
                before_commit=record_plan,
            )
        else:
            hermes_commit.commit_child(
                source.path,
                session,
                plan.transcript,
                expected_sha=source.sha256,
                child_id=plan.target_session,
                before_commit=record_plan,
            )
    except BaseException as exc:
        with store.transaction() as conn:
            store.update_commit(conn, record.id, state=CommitState.ABORTED, note=str(exc))
        raise
    checkpoint("before-done")
    return _finish(store, record)


# --------------------------------------------------------------------------- undo


def _target_sha(record: CommitRecord) -> str | None:
    """sha256 of what the commit's target holds now (None: file or session absent)."""
    path = Path(record.target_path)
    if record.target_kind is SourceKind.FILE:
        found = file_digest(path)
        return found[0] if found else None
    session = record.target_session
    if session is None:
        return None
    try:
        return sha256_hex(hermes_commit.read_snapshot(path, session))
    except (LoadError, StaleSourceError):
        return None


def _lease_key(record: CommitRecord) -> str:
    if record.source_kind is SourceKind.HERMES_DB:
        return f"hermes-db:{record.source_path}#{record.source_session}"
    return f"file:{record.source_path}"


def recover(archive: Archive, *, lease: SqliteLease | None = None) -> list[CommitRecord]:
    """Settle commits and undos left unfinished by a process that died.

    A ``pending`` commit whose lease is free is ``done`` if its target holds the new
    version, ``aborted`` if it still holds the old one; an ``undoing`` one is
    ``undone`` or back to ``done`` the same way. Temporary files it left are removed.
    Returns the records it changed.
    """
    leases = lease or SqliteLease(archive)
    changed: list[CommitRecord] = []
    for record in archive.commits(states=(CommitState.PENDING, CommitState.UNDOING)):
        if leases.is_held(_lease_key(record)):
            continue  # still in flight in a live process
        try:
            now_sha = _target_sha(record)
        except (LoadError, CommitError):
            continue  # unreadable or locked right now: settled by a later run
        state: CommitState | None = None
        note = ""
        if record.state is CommitState.PENDING:
            if _put_back_raced_original(record, now_sha):
                state = CommitState.ABORTED
                note = "interrupted while an agent wrote to the file; its version was put back"
            elif record.after_sha256 is not None and now_sha == record.after_sha256:
                state, note = CommitState.DONE, "completed (settled after an interrupted commit)"
            elif now_sha == record.before_sha256:
                state, note = CommitState.ABORTED, "interrupted before the write; nothing changed"
            else:
                state = CommitState.ABORTED
                note = "interrupted; the target has changed since — the original is archived"
        else:
            if now_sha == record.before_sha256:
                state, note = CommitState.UNDONE, "undone (settled after an interrupted undo)"
            elif now_sha == record.after_sha256:
                state, note = CommitState.DONE, "undo was interrupted before it changed anything"
        if state is None:
            continue
        if record.target_kind is SourceKind.FILE:
            for tag in (record.id, f"{record.id}-undo"):
                temp_path_for(Path(record.target_path), tag).unlink(missing_ok=True)
        with archive.transaction() as conn:
            archive.update_commit(
                conn,
                record.id,
                state=state,
                note=note,
                **({"undone_at": time.time()} if state is CommitState.UNDONE else {}),
                **({"completed_at": time.time()} if state is CommitState.DONE else {}),
            )
        changed.append(archive.get(record.id))
    return changed


def _put_back_raced_original(record: CommitRecord, now_sha: str | None) -> bool:
    """A commit that died right after swapping its file in, before checking what it
    replaced: if that (still in the temporary file) is not the original as archived, an
    agent wrote to it in the window — put it back instead of deleting it."""
    if record.target_kind is not SourceKind.FILE or record.mode is not CommitMode.IN_PLACE:
        return False
    if record.after_sha256 is None or now_sha != record.after_sha256:
        return False
    target = Path(record.target_path)
    kept = temp_path_for(target, record.id)
    found = file_digest(kept)
    if found is None or found[0] in (record.before_sha256, record.after_sha256):
        return False
    os.replace(kept, target)
    fsync_dir(target.parent)
    return True


def archived_mode(archive: Archive, digest: str) -> int:
    """The permission bits a file written from an archived copy gets: those of the file
    a commit archived it from (0o600 — private, like the archive — when unknown)."""
    for record in archive.commits():
        if digest in (record.source_sha256, record.before_sha256, record.forced_sha256):
            mode = record.plan.get("mode")
            if isinstance(mode, int):
                return mode
    return 0o600


def _pick(archive: Archive, commit_id: str | None, source: str | Path | None) -> CommitRecord:
    if commit_id:
        return archive.get(commit_id)
    path = str(Path(os.path.realpath(Path(source).expanduser()))) if source else None
    done = archive.commits(path=path, states=(CommitState.DONE,))
    if not done:
        where = f" for {path}" if path else ""
        raise CommitError(f"nothing to undo{where}: no commit in the archive can be undone")
    return done[0]


def undo(
    commit_id: str | None = None,
    *,
    force: bool = False,
    source: str | Path | None = None,
    archive: Archive | None = None,
    lease: SqliteLease | None = None,
    progress: Progress | None = None,
) -> CommitRecord:
    """Put back what a commit replaced (the newest undoable one when no id is given).

    The original is restored byte-identically and its sha256 verified. Refused with
    :class:`ChangedSinceCommit` when the target changed after the commit, unless
    ``force``, which archives the target's current state first.
    """
    say = progress or (lambda _stage: None)
    store = archive or Archive()
    leases = lease or SqliteLease(store)
    recover(store, lease=leases)
    record = _pick(store, commit_id, source)
    if record.state is CommitState.UNDONE:
        raise CommitError(f"commit {record.id} is already undone")
    if record.state is not CommitState.DONE:
        raise CommitError(
            f"commit {record.id} is {record.state.value}; only a finished commit can be undone"
        )
    say("checking")
    with leases.hold(_lease_key(record)):
        if record.target_kind is SourceKind.HERMES_DB:
            holder_label = leases.holder.replace("tjui:", "tjui-undo:", 1)
            with hermes_commit.compression_lock(
                Path(record.target_path), record.source_session or "", holder=holder_label
            ):
                return _undo_db(store, record, force, say)
        return _undo_file(store, record, force, say)


def _mark(store: Archive, record: CommitRecord, **changes: Any) -> None:
    with store.transaction() as conn:
        store.update_commit(conn, record.id, **changes)


def _undo_file(store: Archive, record: CommitRecord, force: bool, say: Progress) -> CommitRecord:
    target = Path(record.target_path)
    current = file_digest(target)
    forced_sha: str | None = None
    if current is None or current[0] != record.after_sha256:
        if not force:
            raise ChangedSinceCommit(
                f"{target} changed after commit {record.id} (an agent may have written to it);"
                f" `tjui undo {record.id} --force` archives its current state, then restores"
            )
        if current is not None:
            say("archiving")
            forced_sha = store.store_blob(target.read_bytes())
    original = store.blob(record.before_sha256) if record.before_sha256 is not None else None
    _mark(store, record, state=CommitState.UNDOING, forced_sha256=forced_sha)
    say("restoring")
    try:
        if original is None:
            target.unlink(missing_ok=True)
            fsync_dir(target.parent)
        else:
            # A file deleted since the commit comes back with the mode it had.
            mode = record.plan.get("mode")
            mode = mode if isinstance(mode, int) else 0o600
            atomic_write(target, original, tag=f"{record.id}-undo", mode=mode)
    except OSError as exc:
        _mark(store, record, state=CommitState.DONE)
        raise CommitError(f"could not restore {target}: {exc.strerror or exc}") from None
    restored = file_digest(target)
    expected = record.before_sha256
    if (restored[0] if restored else None) != expected:
        raise CommitError(
            f"restored {target} does not match the archived sha256; the archive keeps the"
            f" original ({(expected or '')[:12]}…)"
        )
    checkpoint("before-done")
    try:
        _mark(store, record, state=CommitState.UNDONE, undone_at=time.time())
    except ArchiveError as exc:
        raise _written_unrecorded(record.target_label, exc) from None
    return store.get(record.id)


def _undo_db(store: Archive, record: CommitRecord, force: bool, say: Progress) -> CommitRecord:
    path = Path(record.target_path)
    before = store.blob(record.source_sha256)
    forced: list[str] = []

    def archive_current(snapshot: bytes) -> None:
        say("archiving")
        digest = store.store_blob(snapshot)
        forced.append(digest)
        _mark(store, record, forced_sha256=digest)

    if record.after_sha256 is None:
        raise CommitError(f"commit {record.id} has no record of what it wrote; cannot undo")
    say("restoring")
    undo_fn = (
        hermes_commit.undo_in_place
        if record.mode is CommitMode.IN_PLACE
        else hermes_commit.undo_child
    )
    restored = undo_fn(
        path,
        record.plan,
        before=before,
        after_sha=record.after_sha256,
        force=force,
        archive_current=archive_current,
    )
    note = None
    if sha256_hex(restored) != record.source_sha256:
        note = "forced: rows the agent wrote after the commit were kept"
    _mark(store, record, state=CommitState.UNDONE, undone_at=time.time(), note=note)
    return store.get(record.id)


# ------------------------------------------------------------------------ history


def history(
    source: str | Path | None = None,
    *,
    session: str | None = None,
    archive: Archive | None = None,
) -> list[CommitRecord]:
    """Commits, newest first; those that read or wrote ``source`` when given."""
    store = archive or Archive()
    recover(store)
    path = str(Path(os.path.realpath(Path(source).expanduser()))) if source else None
    return store.commits(path=path, session=session)


# ------------------------------------------------------------- Claude Code child


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%S.") + (
        f"{int(ts * 1000) % 1000:03d}Z"
    )


def _source_lines(data: bytes) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    for n, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(value, dict):
            out[n] = value
    return out


def _tool_input(arguments: str) -> Any:
    try:
        value = orjson.loads(arguments) if arguments else {}
    except orjson.JSONDecodeError:
        return {"_raw_arguments": arguments}
    return value if isinstance(value, dict) else {"_value": value}


def _blocks(m: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in m.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart):
            if part.redacted:
                blocks.append({"type": "redacted_thinking", "data": part.extra.get("data")})
            else:
                block: dict[str, Any] = {"type": "thinking", "thinking": part.text}
                if part.signature:
                    block["signature"] = part.signature
                blocks.append(block)
        elif isinstance(part, MediaPart):
            if part.source == "base64" and part.data:
                source = {"type": "base64", "media_type": part.media_type, "data": part.data}
                blocks.append({"type": "image", "source": source})
            else:
                blocks.append({"type": "text", "text": f"[{part.media_type}]"})
    return blocks


def _synth_line(m: Message, model: str | None) -> dict[str, Any]:
    """A Claude Code line for a message that has no unchanged original line."""
    if m.role is Role.ASSISTANT:
        content = _blocks(m)
        for call in m.tool_calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name,
                    "input": _tool_input(call.arguments),
                }
            )
        return {
            "type": "assistant",
            "message": {
                "id": f"msg_tjui_{uuid.uuid4().hex[:20]}",
                "type": "message",
                "role": "assistant",
                "model": m.extra.get("model") or model or "unknown",
                "content": content,
                "stop_reason": m.extra.get("stop_reason"),
            },
            "requestId": f"req_tjui_{uuid.uuid4().hex[:20]}",
        }
    if m.role is Role.TOOL:
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": m.tool_call_id or "",
            "content": m.text,
        }
        if m.meta.is_error:
            result["is_error"] = True
        return {"type": "user", "message": {"role": "user", "content": [result]}}
    blocks = _blocks(m)
    body = m.text if all(b["type"] == "text" for b in blocks) else blocks
    line: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": body}}
    if m.role in (Role.SYSTEM, Role.DEVELOPER) or m.meta.is_injected:
        line["isMeta"] = True
    return line


# Long on purpose: writes Claude Code's compaction lines in file order (boundary,
# summary, kept lines re-linked by parentUuid); the order is the format.
def claude_code_continuation(
    transcript: Transcript,
    source: LoadedSource,
    *,
    summary: Message | None,
    session_id: str | None = None,
    pre_tokens: int | None = None,
    now: float | None = None,
) -> bytes:
    """A new Claude Code session JSONL continuing ``source`` from a compaction.

    Shaped the way Claude Code records a compaction: a ``compact_boundary`` system line
    (``compactMetadata{trigger: "manual", preTokens}``, ``parentUuid: null``,
    ``logicalParentUuid`` naming the parent's last line), the summary as an
    ``isCompactSummary`` user line, then every kept message, re-linked one after the
    other by ``parentUuid``. A kept message is copied from its original line(s) when it
    is unchanged (thinking signatures, usage, ``toolUseResult`` kept); other messages
    get a line built from the message.
    """
    sid = session_id or str(uuid.uuid4())
    stamp = time.time() if now is None else now
    originals = source.transcript.messages
    raw_lines = _source_lines(source.data) if source.format == "claude-code" else {}
    uuid_line = {v["uuid"]: n for n, v in raw_lines.items() if isinstance(v.get("uuid"), str)}
    by_src: dict[str, list[Message]] = {}
    for m in originals:
        if m.meta.source_id is not None:
            by_src.setdefault(m.meta.source_id, []).append(m)
    kept_by_src: dict[str, list[Message]] = {}
    for m in transcript.messages:
        if m.meta.source_id is not None:
            kept_by_src.setdefault(m.meta.source_id, []).append(m)
    original_ids = {id(m) for m in originals}
    kept_ids = {id(m) for m in transcript.messages}

    def unchanged(m: Message) -> bool:
        """A kept message that is exactly an original one."""
        return id(m) in original_ids or m in by_src.get(m.meta.source_id or "", ())

    def line_intact(src_id: str) -> bool:
        """Every message that came from this line is kept unchanged."""
        kept = kept_by_src.get(src_id, [])
        return all(id(o) in kept_ids or o in kept for o in by_src.get(src_id, ()))

    common = {
        k: source.transcript.extra[k]
        for k in ("cwd", "version", "gitBranch")
        if isinstance(source.transcript.extra.get(k), str)
    }
    model = transcript.model or source.transcript.model
    lines: list[dict[str, Any]] = []
    logical_parent = next((m.meta.source_id for m in reversed(originals) if m.meta.source_id), None)
    boundary: dict[str, Any] = {
        "parentUuid": None,
        "logicalParentUuid": logical_parent,
        "type": "system",
        "subtype": "compact_boundary",
        "content": "Conversation compacted",
        "isMeta": False,
        "level": "info",
        "compactMetadata": {"trigger": "manual", "preTokens": pre_tokens},
    }
    lines.append(boundary)
    if summary is not None:
        lines.append(
            {
                "type": "user",
                "message": {"role": "user", "content": summary.text},
                "isCompactSummary": True,
                "isVisibleInTranscriptOnly": True,
            }
        )
    copied: set[str] = set()
    for m in transcript.messages:
        if summary is not None and m is summary:
            continue
        src_id = m.meta.source_id
        if src_id is not None and src_id in copied:
            continue
        if raw_lines and src_id is not None and unchanged(m):
            if m.role is Role.ASSISTANT and isinstance(m.extra.get("lines"), list):
                numbers = [n for n in m.extra["lines"] if n in raw_lines]
                if numbers:
                    lines.extend(dict(raw_lines[n]) for n in numbers)
                    copied.add(src_id)
                    continue
            elif src_id in uuid_line and line_intact(src_id):
                lines.append(dict(raw_lines[uuid_line[src_id]]))
                copied.add(src_id)
                continue
        lines.append(_synth_line(m, model))

    out: list[bytes] = []
    parent: str | None = None
    for i, line in enumerate(lines):
        if i:
            line.pop("logicalParentUuid", None)
        line.pop("leafUuid", None)
        new_uuid = str(uuid.uuid4())
        line["parentUuid"] = parent if i else None
        line["isSidechain"] = False
        line["sessionId"] = sid
        line["uuid"] = new_uuid
        line.setdefault("userType", "external")
        line.setdefault("timestamp", _iso(stamp))
        for key, value in common.items():
            line.setdefault(key, value)
        parent = new_uuid
        out.append(orjson.dumps(line))
    return b"\n".join(out) + b"\n"
