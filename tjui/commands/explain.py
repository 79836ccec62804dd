"""``tjui explain FILE``: why compaction fired (or did not), under an agent's policy.

Every figure says what kind it is, as ``tjui inspect`` does: ``measured`` (provider
usage), ``exact`` (counted with a tokenizer) or ``estimated`` (the chars/4 estimate, or
a count adjusted from an earlier measured reading).
"""

from __future__ import annotations

from pathlib import Path

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from tinyjuice.explain import Explanation, explain
from tinyjuice.policies import POLICY_NAMES, UsageSeries, parse_policy
from tinyjuice.tokens import CountKind, default_counter
from tjui.cached import CachedSource
from tjui.clikit import (
    context_window_option,
    emit_json,
    fail,
    format_option,
    lenient_option,
    session_option,
)
from tjui.render import PipeConsole

__all__ = ["explain_cmd", "print_explanation"]

#: How many replayed fire points the text output lists before "…".
REPLAY_SHOWN = 12


def _n(value: int | None) -> str:
    return "—" if value is None else f"{value:,}"


def _usage_counts(series: UsageSeries) -> str:
    order = (CountKind.MEASURED, CountKind.EXACT, CountKind.ESTIMATED)
    counts = {k: sum(1 for p in series.points if p.kind is k) for k in order}
    shown = [f"{counts[k]:,} {k.value}" for k in order if counts[k] or k is CountKind.MEASURED]
    return ", ".join(shown)


def print_explanation(result: Explanation, out: Console | None = None) -> None:
    """The explanation as rich tables (what ``tjui explain`` prints)."""
    out = out or PipeConsole(highlight=False, soft_wrap=False, markup=False)
    thr = result.threshold
    head = Table(box=None, show_header=False, padding=(0, 2))
    head.add_column("key", style="bold")
    head.add_column("value")
    head.add_row("policy", f"{result.policy.spec()}  ({result.policy_source})")
    head.add_row("window", f"{thr.context_window:,}  ({result.window.source})")
    if thr.output_reservation:
        head.add_row(
            "reserved",
            f"{thr.output_reservation:,} → effective window {thr.effective_window:,}",
        )
    head.add_row("threshold", Text(f"{thr.threshold_tokens:,}  rule: {thr.rule.value}", "bold"))
    head.add_row("", thr.explanation)
    series = result.series
    peak = max((p.tokens for p in series.points), default=0)
    head.add_row(
        "usage",
        f"{len(series.points):,} turns ({_usage_counts(series)}; counter "
        f"{series.counter}) · peak {peak:,}",
    )
    out.print(head)

    if result.events:
        table = Table(box=box.SIMPLE_HEAD, title="Compactions", title_justify="left")
        for col in ("#", "message", "trigger", "before", "threshold", "after", "saved", "flags"):
            table.add_column(col, justify="right" if col in ("#", "message") else "left")
        for e in result.events:
            saved = (
                "—"
                if e.saved_tokens is None or e.saved_ratio is None
                else f"{e.saved_tokens:,} ({e.saved_ratio:.0%})"
            )
            table.add_row(
                str(e.number),
                str(e.index),
                e.trigger.value,
                f"{_n(e.pre_tokens)} {e.pre_source.value}",
                f"{e.threshold_tokens:,} {e.rule.value}",
                f"{_n(e.post_tokens)} {e.post_source.value}",
                saved,
                Text(", ".join(f.value for f in e.flags) or "—", "bold red" if e.flags else ""),
            )
        out.print(table)
        for e in result.events:
            for reason in e.reasons():
                out.print(f"  #{e.number}: {reason}")
    else:
        out.print("\nNo compactions recorded in this transcript.")

    out.print()
    out.print(Text("Now: ", "bold") + Text(result.current.summary()))
    if result.current.inflation is not None:
        inf = result.current.inflation
        out.print(
            f"  the estimate at message {inf.message_index} ({inf.estimate:,}) exceeds the "
            f"measured prompt ({inf.measured:,}), mostly by tool schemas ({inf.tool_tokens:,})"
        )
    fired = result.would_fire_at
    if fired:
        shown = ", ".join(str(i) for i in fired[:REPLAY_SHOWN])
        more = f", … ({len(fired) - REPLAY_SHOWN:,} more)" if len(fired) > REPLAY_SHOWN else ""
        out.print(f"Replay: this policy would have fired at message {shown}{more}.")
    else:
        out.print("Replay: this policy would not have fired on this transcript.")


@click.command("explain")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "--policy",
    "policy_spec",
    default=None,
    metavar="P",
    help=(
        f"Trigger policy: {', '.join(POLICY_NAMES)}; settings as name:key=value,… "
        "(e.g. hermes:raise=false, claude-code:buffer=13k, custom:ratio=0.7,reserve=8000). "
        "Picked from the transcript's agent when omitted."
    ),
)
@context_window_option
@format_option
@session_option
@lenient_option
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def explain_cmd(
    file: Path,
    policy_spec: str | None,
    context_window: int | None,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    as_json: bool,
) -> None:
    """Why compaction fired: each past compaction, the threshold and its rule, and now."""
    policy = None
    if policy_spec is not None:
        try:
            policy = parse_policy(policy_spec)
        except ValueError as exc:
            fail(f"--policy {policy_spec}: {exc}")
    source = CachedSource(file, fmt, session=session, lenient=lenient)
    transcript = source.transcript
    counter = default_counter()
    tokens = source.tokens(counter)
    try:
        result = explain(
            transcript, policy, context_window=context_window, counter=counter, tokens=tokens
        )
    except ValueError as exc:
        # Only a given policy can fail to fit the window (the agent's own falls back to
        # hermes): the option is to blame, not the file.
        if policy_spec is None:
            fail(f"{file}: {exc}")
        window = f" with --context-window {context_window:,}" if context_window else ""
        fail(f"--policy {policy_spec}{window}: {exc}")
    if as_json:
        emit_json(result.to_dict())
        return
    print_explanation(result)
