"""``tjui watch FILE``: one line per change of a live session (for a status bar or script)."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

from tinyjuice.follow import ChangeKind, FileTail, FollowedFile, LiveStatus
from tinyjuice.formats import LoadError
from tjui.clikit import context_window_option, fail, format_option

__all__ = ["parse_percent", "watch_cmd"]


def parse_percent(text: str | None) -> float | None:
    """``80%`` or ``80`` → 80.0 (None stays None); a bad value is a usage error."""
    if text is None:
        return None
    try:
        value = float(text.strip().removesuffix("%"))
    except ValueError:
        raise click.BadParameter(f"{text!r} is not a percentage (e.g. 80%)") from None
    if not 0 < value <= 100:
        raise click.BadParameter(f"{text!r} must be between 0 and 100%")
    return value


def _status(followed: FollowedFile, data: bytes, window: int | None) -> LiveStatus:
    """The status of ``data``: an append is read, counted and charted from its new lines."""
    followed.read(data)
    return followed.status(window)


def _line(status: LiveStatus, note: str | None) -> str:
    text = (
        f"{status.live_tokens:,} tokens · {status.percent:.1f}% of {status.context_window:,}"
        f" · {status.prediction()} · {status.messages:,} msgs"
    )
    return f"{text} · {note}" if note else text


def _emit(status: LiveStatus, as_json: bool, note: str | None, warned: bool) -> None:
    if as_json:
        import orjson

        data = {**status.to_dict(), "event": note, "warning": warned}
        click.echo(orjson.dumps(data).decode())
    else:
        click.echo(_line(status, note) + (" · WARNING: over the warning level" if warned else ""))
    sys.stdout.flush()


@click.command("watch")
@click.argument("file", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@format_option
@context_window_option
@click.option("--json", "as_json", is_flag=True, help="One JSON object per line.")
@click.option("--once", is_flag=True, help="Print the current state and exit.")
@click.option(
    "--timeout",
    type=click.FloatRange(min=0),
    default=None,
    metavar="S",
    help="Stop after S seconds.",
)
@click.option(
    "--interval",
    type=click.FloatRange(min=0.01),
    default=0.25,
    show_default=True,
    metavar="S",
    help="Seconds between checks of the file.",
)
@click.option(
    "--warn-at", default=None, metavar="P%", help="Flag lines at or over this % of the window."
)
def watch_cmd(
    file: Path,
    fmt: str | None,
    context_window: int | None,
    as_json: bool,
    once: bool,
    timeout: float | None,
    interval: float,
    warn_at: str | None,
) -> None:
    """Follow FILE as the agent writes it: live tokens, % of the window, turns to the next
    compaction.

    Under the agent's own policy; one line at the start and one per change.

    Reads only what was appended; a truncated or replaced file is reloaded (said on the
    line). Stops on Ctrl+C (exit status 0), after --timeout, or at once with --once.
    """
    level = parse_percent(warn_at)
    try:
        tail = FileTail(file)
        followed = FollowedFile(file, fmt)
        status = _status(followed, tail.data, context_window)
    except (LoadError, OSError) as exc:
        fail(str(exc))
    _emit(status, as_json, None, level is not None and status.percent >= level)
    if once:
        return
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        while deadline is None or time.monotonic() < deadline:
            time.sleep(interval)
            change = tail.poll()
            if change is None:
                continue
            if change.kind is ChangeKind.MISSING:
                continue  # an agent replacing the file: wait for the new one
            note = None if change.kind is ChangeKind.APPENDED else f"{change.kind.value}: reloaded"
            try:
                status = _status(followed, change.data, context_window)
            except LoadError as exc:
                click.echo(f"tjui: warning: {exc}", err=True)
                continue
            _emit(status, as_json, note, level is not None and status.percent >= level)
    except KeyboardInterrupt:
        return
