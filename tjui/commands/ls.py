"""``tjui ls``: the sessions found on this machine, as the browser lists them."""

from __future__ import annotations

import click

from tinyjuice.discovery import AGENTS, RowCache, SessionRow
from tjui.clikit import emit_json
from tjui.sessionlist import COLUMNS, cells, fill_rows, filter_rows, find_rows
from tjui.visible import visible

__all__ = ["ls_cmd", "rows_with_figures"]


def rows_with_figures(rows: list[SessionRow], cache: RowCache) -> list[SessionRow]:
    """``rows`` with their exact figures filled in (and cached)."""
    filled: dict[str, SessionRow] = {}
    fill_rows(rows, cache, lambda r: filled.__setitem__(r.key, r))
    return [filled.get(r.key, r) for r in rows]


@click.command("ls")
@click.option(
    "--agent",
    "agents",
    multiple=True,
    type=click.Choice(AGENTS),
    help="Only this agent (repeatable).",
)
@click.option(
    "--project", default=None, metavar="P", help="Only sessions whose project contains P."
)
@click.option(
    "--quick",
    is_flag=True,
    help="Header figures only (estimated message counts; no loading of sessions not cached).",
)
@click.option("--json", "as_json", is_flag=True, help="Print a JSON list of rows.")
def ls_cmd(agents: tuple[str, ...], project: str | None, quick: bool, as_json: bool) -> None:
    """List the agent sessions on this machine, newest first.

    Claude Code, Codex, Hermes, Gemini CLI, opencode, Cline and Roo stores (see
    `tjui config` for where each is looked for), and the bundled demo.
    """
    cache = RowCache.open()
    rows = find_rows(agents=list(agents) or None, cache=cache)
    rows = filter_rows(rows, project=project)
    if quick:
        cache.save()
    else:
        rows = rows_with_figures(rows, cache)
    if as_json:
        emit_json([r.to_dict() for r in rows])
        return
    _print_table(rows)


def _print_table(rows: list[SessionRow]) -> None:
    widths = (12, 28, 48, 10, 7, 11, 8, 11, 9)
    head = "  ".join(h.ljust(w)[:w] for (_, h), w in zip(COLUMNS, widths, strict=True))
    click.echo(head.rstrip())
    for row in rows:
        line = "  ".join(
            _fit(c, w, right=i >= 4)
            for i, (c, w) in enumerate(zip(cells(row), widths, strict=True))
        )
        click.echo(line.rstrip())
    click.echo(f"{len(rows):,} session{'s' if len(rows) != 1 else ''}")


def _fit(text: str, width: int, *, right: bool) -> str:
    # Titles come from the sessions: an escape code in one is shown, not obeyed.
    text = visible(" ".join(text.split()))
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.rjust(width) if right else text.ljust(width)
