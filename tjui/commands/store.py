"""``tjui history``, ``tjui undo`` and the ``--commit`` part of ``tjui compress``.

The commands call :mod:`tinyjuice.store` and print what it returns; they hold no
persistence rule. Refusals (stale source, lease held, target changed) are one clear
line on stderr and a distinct exit status; nothing is changed in those cases.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click

from tinyjuice.formats import LoadError
from tinyjuice.live import LiveSplit
from tinyjuice.report import CompactionResult, Status
from tinyjuice.store import (
    Archive,
    ArchiveError,
    CommitError,
    CommitRecord,
    LeaseBusy,
    LoadedSource,
    SourceBusy,
    StaleSourceError,
)
from tjui.clikit import (
    commit_options,
    emit_json,
    ensure_parent_dir,
    fail,
    output_option,
    session_option,
)

__all__ = [
    "EXIT_BUSY",
    "EXIT_REFUSED",
    "EXIT_STALE",
    "commit_from_cli",
    "commit_options",
    "echo_commit",
    "history_cmd",
    "load_for_commit",
    "recover_cmd",
    "undo_cmd",
]

F = TypeVar("F", bound=Callable[..., Any])

#: A commit or undo was refused (target changed, nothing to undo, unwritable format…).
EXIT_REFUSED = 1
#: Another compactor holds the lease ("compaction already in flight"), or another
#: writer holds the state.db lock.
EXIT_BUSY = 3
#: The source changed since it was loaded.
EXIT_STALE = 4


def _refuse(exc: Exception) -> NoReturn:
    """Report a refusal from the store and exit with its status."""
    if isinstance(exc, (LeaseBusy, SourceBusy)):
        fail(str(exc), EXIT_BUSY)
    if isinstance(exc, StaleSourceError):
        fail(f"{exc} (run the command again to reload)", EXIT_STALE)
    fail(str(exc), EXIT_REFUSED)


# ------------------------------------------------------------------ compress --commit


def load_for_commit(
    file: str | Path,
    fmt: str | None = None,
    *,
    session: str | None = None,
    lenient: bool = False,
) -> LoadedSource:
    """Load FILE remembering the exact bytes read (for the stale check); exit on error."""
    from tinyjuice.store import load_source

    try:
        return load_source(file, fmt, session=session, lenient=lenient)
    except LoadError as exc:
        fail(str(exc))
    except CommitError as exc:
        _refuse(exc)
    raise AssertionError("unreachable")  # pragma: no cover


def commit_from_cli(
    result: CompactionResult,
    loaded: LoadedSource,
    *,
    mode: str | None = None,
    output: Path | None = None,
    to_format: str | None = None,
    split: LiveSplit | None = None,
) -> dict[str, Any]:
    """Commit ``result`` (from ``compress(loaded.transcript, …)``, or of its live part
    ``split.live``: a commit in place then keeps the history before it); the JSON to report.

    ``output``/``to_format`` are ``compress``'s ``-o``/``--to``: the export target, or
    the path of a child file. When the engine changed nothing there is nothing to
    commit: ``{"committed": false, "reason": …}``. Refusals exit (1, 3 lease, 4 stale).
    """
    from tinyjuice.store import commit

    if result.report.status is not Status.COMPACTED:
        return {
            "committed": False,
            "reason": f"compaction {result.report.status.value}: {result.report.reason}",
        }
    if mode == "export" and output is None:
        fail("--mode export needs -o PATH (the file to write)", EXIT_REFUSED)
    try:
        record = commit(
            result, loaded, mode=mode, target=output, target_format=to_format, split=split
        )
    except (CommitError, ArchiveError) as exc:
        _refuse(exc)
    except OSError as exc:
        fail(f"commit failed: {exc.strerror or exc}", EXIT_REFUSED)
    return commit_dict(record)


def commit_dict(record: CommitRecord) -> dict[str, Any]:
    """A commit record for JSON output (the report itself is printed beside it)."""
    data = record.to_dict()
    data.pop("report", None)
    return {"committed": True, **data, "undo_command": f"tjui undo {record.id}"}


def echo_commit(data: dict[str, Any]) -> None:
    """The human line for a ``--commit`` (after the report)."""
    if not data.get("committed"):
        click.echo(f"not committed: {data.get('reason', 'nothing to commit')}")
        return
    target = data["target_path"]
    if data.get("target_session"):
        target += f" (session {data['target_session']})"
    click.echo(
        f"committed {data['id']} · {data['mode']} → {target} · original archived"
        f" ({data['source_size']:,} bytes, sha256 {data['source_sha256'][:12]}…)"
    )
    if data.get("note"):
        click.echo(f"note: {data['note']}")
    click.echo(f"undo: tjui undo {data['id']}")


# ------------------------------------------------------------------------- history


def _when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else "-"


def _tokens(r: CommitRecord) -> str:
    if r.tokens_before is None or r.tokens_after is None:
        return "-"
    return f"{r.tokens_before:,} → {r.tokens_after:,}"


def history_rows(records: list[CommitRecord]) -> list[tuple[str, ...]]:
    return [
        (r.id, _when(r.created_at), r.mode.value, r.state.value, _tokens(r), r.target_label)
        for r in records
    ]


@click.command("history")
@click.argument("file", required=False, type=click.Path(dir_okay=False, path_type=Path))
@session_option
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def history_cmd(file: Path | None, session: str | None, as_json: bool) -> None:
    """List commits (newest first), or only those of FILE.

    Each commit archived the original before writing; undo one with `tjui undo ID`.
    """
    from tinyjuice.store import archive_path, history

    # Read-only: a missing archive means no commits yet, and is not created.
    try:
        archive = Archive.open_existing()
        records = [] if archive is None else history(file, session=session, archive=archive)
    except (ArchiveError, CommitError) as exc:
        _refuse(exc)
    path = archive.path if archive is not None else archive_path()
    if as_json:
        emit_json({"archive": str(path), "commits": [r.to_dict() for r in records]})
        return
    if archive is None:
        click.echo(f"no commits yet (no archive at {path})")
        return
    if not records:
        where = f" for {file}" if file is not None else ""
        click.echo(f"no commits{where} in the archive ({path})")
        return
    header = ("ID", "WHEN", "MODE", "STATE", "TOKENS", "TARGET")
    rows = [header, *history_rows(records)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    for row in rows:
        cells = [cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)]
        click.echo("  ".join([*cells, row[-1]]).rstrip())


# ------------------------------------------------------------------------- recover


@click.command("recover")
@click.argument("sha256")
@output_option("Write the archived copy to this file (never over an existing one unless --force).")
@click.option("--force", is_flag=True, help="Replace OUT if it exists.")
def recover_cmd(sha256: str, output: Path | None, force: bool) -> None:
    """Write an archived copy (by its sha256, or its first 8+ characters) to a file.

    Every original a commit replaced is archived, and so is the state a forced undo
    replaced (its sha256 is printed by `tjui undo --force` and shown by
    `tjui history --json` as forced_sha256). For a Hermes state.db session the copy is a
    JSON snapshot of its rows.
    """
    from tinyjuice.atomic import atomic_write, output_target
    from tinyjuice.store.commit import archived_mode

    if output is None:
        fail("recover needs -o OUT (the file to write)")
    try:
        replaces_a_file = output.exists() and output_target(output) is None
    except OSError as exc:  # a socket or block device: never written
        fail(f"{output}: {exc}")
    if replaces_a_file and not force:
        fail(f"{output} exists; pass --force to replace it", EXIT_REFUSED)
    archive = Archive.open_existing()
    if archive is None:
        fail("no archive yet: nothing has been committed", EXIT_REFUSED)
    try:
        digest = archive.find_blob(sha256)
        data = archive.blob(digest)
    except ArchiveError as exc:
        hint = _commit_hint(archive, sha256)
        if hint is not None:
            fail(hint, EXIT_REFUSED)
        _refuse(exc)
    ensure_parent_dir(output)
    try:
        atomic_write(output, data, tag="recover", mode=archived_mode(archive, digest))
    except OSError as exc:
        fail(f"could not write {output}: {exc.strerror or exc}", EXIT_REFUSED)
    click.echo(f"wrote {output} ({len(data):,} bytes, sha256 {digest[:12]}… verified)")


def _commit_hint(archive: Archive, text: str) -> str | None:
    """When ``text`` names a commit rather than a copy: what to run instead."""
    try:
        record = archive.get(text)
    except ArchiveError:
        return None
    original = record.before_sha256 or record.source_sha256
    also = f"; its original is archived as {original[:12]}…" if original else ""
    return (
        f"{text} is a commit id, not a sha256: `tjui undo {record.id}` restores what it"
        f" replaced{also}"
    )


# ---------------------------------------------------------------------------- undo


@click.command("undo")
@click.argument("commit_id", metavar="[COMMIT]", required=False)
@click.option(
    "--file",
    "file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Without COMMIT: undo the newest commit of this file.",
)
@click.option(
    "--force",
    is_flag=True,
    help="Undo even if the file changed after the commit (its current state is archived first).",
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def undo_cmd(commit_id: str | None, file: Path | None, force: bool, as_json: bool) -> None:
    """Restore what a commit replaced, byte for byte (the newest commit by default).

    Refused when the file changed after the commit, unless --force.
    """
    from tinyjuice.store import undo

    try:
        record = undo(commit_id, force=force, source=file)
    except (CommitError, ArchiveError) as exc:
        _refuse(exc)
    except OSError as exc:
        fail(f"undo failed: {exc.strerror or exc}", EXIT_REFUSED)
    if as_json:
        data = record.to_dict()
        data.pop("report", None)
        emit_json({"undone": True, **data})
        return
    restored = (
        f"restored {record.target_label} (sha256 {record.before_sha256[:12]}… verified)"
        if record.before_sha256 is not None
        else (
            f"removed session {record.target_session} from {record.target_path}"
            if record.target_session
            else f"removed {record.target_label}"
        )
    )
    click.echo(f"undone {record.id} · {record.mode.value} · {restored}")
    if record.forced_sha256:
        short = record.forced_sha256[:12]
        click.echo(
            f"its state before the undo is archived (sha256 {short}…);"
            f" `tjui recover {short} -o FILE` writes it back out"
        )
    if record.note:
        click.echo(f"note: {record.note}")
