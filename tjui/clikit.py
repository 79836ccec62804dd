"""Shared pieces of the command line: errors, JSON output, common options, loading.

Command modules (``tjui/commands/*.py``) import these; ``tjui.cli`` registers them.
Start-up time: this module is imported by ``tjui --help``, so it holds only click
options and light helpers; the store, summary and config code is imported inside
the functions that use it.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import click
import orjson

from tinyjuice.formats import FORMAT_NAMES, LoadError
from tinyjuice.model import Transcript

__all__ = [
    "COMMIT_MODES",
    "EXIT_USAGE",
    "FALLBACK_PROVIDER",
    "PROVIDER_ENV",
    "boundary_options",
    "check_output_path",
    "commit_options",
    "context_window_option",
    "emit_json",
    "ensure_parent_dir",
    "fail",
    "format_option",
    "lenient_option",
    "load_or_fail",
    "output_option",
    "provider_option",
    "session_option",
]

F = TypeVar("F", bound=Callable[..., Any])

EXIT_USAGE = 2

#: ``--mode`` of ``compress --commit``: the values of ``tinyjuice.store.CommitMode``
#: (copied so that ``tjui --help`` does not import the store; a test keeps them equal).
COMMIT_MODES = ("in-place", "child", "export")
#: ``--provider`` value for the deterministic summary (``tjui.config.FALLBACK_NAME``)
#: and the variable naming the default provider (``tjui.config.ENV_VARS["provider"]``);
#: copied so that ``tjui --help`` does not import the config code (a test checks).
FALLBACK_PROVIDER = "fallback"
PROVIDER_ENV = "TJUI_PROVIDER"


def fail(message: str, code: int = EXIT_USAGE) -> NoReturn:
    click.echo(f"tjui: error: {message}", err=True)
    sys.exit(code)


def emit_json(value: Any) -> None:
    click.echo(orjson.dumps(value, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS).decode())


def format_option(f: F) -> F:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(FORMAT_NAMES),
        default=None,
        help="Transcript format (auto-detected when omitted).",
    )(f)


def session_option(f: F) -> F:
    return click.option(
        "--session",
        "session",
        default=None,
        metavar="ID",
        help=(
            "Hermes state.db or opencode database/storage: the session to open (newest when"
            " omitted). ShareGPT file of several trajectories: the one to open, by id or 1-based"
            " number (first by default). Aider history: the run, by 1-based number (last by"
            " default)."
        ),
    )(f)


def lenient_option(f: F) -> F:
    return click.option(
        "--lenient", is_flag=True, help="Skip malformed JSONL lines instead of failing (counted)."
    )(f)


def load_or_fail(
    path: str | Path,
    fmt: str | None = None,
    *,
    session: str | None = None,
    lenient: bool = False,
) -> Transcript:
    from tinyjuice.formats import load

    try:
        return load(path, fmt, session=session, lenient=lenient)
    except LoadError as exc:
        fail(str(exc))


def whole_file_option(f: F) -> F:
    return click.option(
        "--whole-file",
        is_flag=True,
        help=(
            "Work on every message in the file, the history before the agent's last"
            " compaction included (default: the live context the agent sends next)."
        ),
    )(f)


def policy_option(f: F) -> F:
    return click.option(
        "--policy",
        default=None,
        metavar="P",
        help=(
            "Trigger policy: hermes, claude-code, codex, opencode, rules, custom, with"
            " settings as name:key=value (default: the transcript's own agent's)."
        ),
    )(f)


def check_policy(spec: str | None) -> None:
    """Exit with a clear error when ``spec`` is not a valid policy spec."""
    if spec is None:
        return
    from tinyjuice.policies import parse_policy

    try:
        parse_policy(spec)
    except ValueError as exc:
        fail(f"--policy: {exc}")


def require_messages(transcript: Transcript, path: str | Path) -> None:
    """Exit (status 2) when a loaded transcript holds no messages: never write an empty one."""
    if transcript.messages:
        return
    why = f" ({transcript.warnings[-1]})" if transcript.warnings else ""
    fail(f"{path}: the transcript holds no messages{why}; nothing to work on")


def live_split_or_fail(transcript: Transcript, whole_file: bool, at: int | None = None) -> Any:
    """The transcript cut at its last reset (``--whole-file``: whole) and ``--at`` made
    relative to it; exits when ``--at`` points into the history before the reset.

    Returns ``(split, at)``.
    """
    from tinyjuice.live import live_split

    split = live_split(transcript, whole_file=whole_file)
    if at is not None and split.start:
        if at < split.start:
            fail(
                f"--at {at} is before the agent's last compaction (the live context starts"
                f" at message {split.start}); that history is already compacted — pass"
                " --whole-file to work on it"
            )
        at -= split.start
    return split, at


def context_window_option(f: F) -> F:
    return click.option(
        "--context-window",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="Override the model's context window.",
    )(f)


def boundary_options(verb: str) -> Callable[[F], F]:
    """``--keep-last N`` and ``--at INDEX``: where the compressed middle ends.

    ``verb`` fills the help text ("compress", "summarise").
    """

    def decorate(f: F) -> F:
        f = click.option(
            "--at",
            "at",
            type=click.IntRange(min=0),
            default=None,
            metavar="INDEX",
            help=f"{verb.capitalize()} up to message INDEX (snapped to a legal boundary).",
        )(f)
        return click.option(
            "--keep-last",
            type=click.IntRange(min=0),
            default=None,
            metavar="N",
            help=f"Keep the last N user exchanges verbatim; {verb} what comes before.",
        )(f)

    return decorate


def check_output_path(value: str, option: str = "-o") -> Path:
    """``value`` as an output file path; exit with a clear error if it names a directory.

    A trailing separator (``-o out/``) or an existing directory is refused: the option
    takes a file name, and silently writing a file called ``out`` would surprise.
    """
    seps = tuple(s for s in (os.sep, os.altsep) if s)
    if value.endswith(seps):
        fail(
            f"{option} {value}: ends with a path separator, so it names a directory; "
            f"give a file path (e.g. {value}compacted.json)"
        )
    path = Path(value)
    if path.is_dir():
        fail(f"{option} {value}: is a directory; give a file path (e.g. {path / 'compacted.json'})")
    return path


def ensure_parent_dir(path: Path, option: str = "-o") -> None:
    """Create ``path``'s missing parent directories (exit with a clear error if we cannot)."""
    parent = path.parent
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        blocker = next((p for p in (parent, *parent.parents) if p.is_file()), None)
        if blocker is not None:
            fail(f"{option} {path}: {blocker} is a file, not a directory")
        fail(f"{option} {path}: cannot create the directory {parent}: {exc.strerror or exc}")


def output_option(help_text: str) -> Callable[[F], F]:
    """``-o/--output FILE``: a file path (checked by :func:`check_output_path`)."""

    def to_path(ctx: click.Context, param: click.Parameter, value: str | None) -> Path | None:
        return None if value is None else check_output_path(value)

    def decorate(f: F) -> F:
        return click.option(
            "-o",
            "--output",
            "output",
            type=click.Path(),
            default=None,
            metavar="OUT",
            callback=to_path,
            help=help_text,
        )(f)

    return decorate


def commit_options(f: F) -> F:
    """Add ``--commit`` and ``--mode`` to a command (``tjui compress``); the commit
    itself is :func:`tjui.commands.store.commit_from_cli`."""
    f = click.option(
        "--mode",
        "commit_mode",
        type=click.Choice(COMMIT_MODES),
        default=None,
        help="With --commit: in-place (replace FILE, original archived), child (new file or"
        " session continuing FILE) or export (to -o PATH, --to FORMAT). Default: the"
        " engine's recommendation.",
    )(f)
    return click.option(
        "--commit",
        "do_commit",
        is_flag=True,
        help="Persist the result: archive the original first, then write (undo with `tjui undo`).",
    )(f)


def provider_option(f: F) -> F:
    """``--provider NAME``: a configured provider, or ``fallback`` for no model (resolved
    by :func:`tjui.commands.summaries.resolve_provider`)."""
    return click.option(
        "--provider",
        "provider",
        default=None,
        metavar="NAME",
        help=(
            f"Summary provider from config.toml, or '{FALLBACK_PROVIDER}' for the deterministic "
            f"summary (default: ${PROVIDER_ENV}, then default_provider)."
        ),
    )(f)
