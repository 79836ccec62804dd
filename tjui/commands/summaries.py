"""``tjui config``, ``tjui summarize`` and ``tjui review``: providers and summary quality.

Details: docs/app.md (`tjui.commands.summaries`).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from tinyjuice.summary import SummaryProvider
from tjui.clikit import (
    boundary_options,
    check_policy,
    context_window_option,
    emit_json,
    fail,
    format_option,
    lenient_option,
    live_split_or_fail,
    load_or_fail,
    policy_option,
    provider_option,
    require_messages,
    session_option,
    whole_file_option,
)
from tjui.config import FALLBACK_NAME, ConfigError, Overrides

if TYPE_CHECKING:
    from tinyjuice.report import CompactionReport, CompactionResult
    from tinyjuice.review import SummaryReview

__all__ = [
    "config_cmd",
    "format_scorecard",
    "provider_flags",
    "provider_option",
    "resolve_provider",
    "review_cmd",
    "summarize_cmd",
]

F = TypeVar("F", bound=Callable[..., Any])

#: Missing items listed per category in the text scorecard (``--json`` lists them all).
SHOWN_MISSING = 8


def provider_flags(f: F) -> F:
    """The per-setting overrides (they win over the environment and the file)."""
    options = [
        click.option(
            "--provider-kind",
            "provider_kind",
            type=click.Choice(["openai", "anthropic"]),
            default=None,
            help="Protocol of the provider.",
        ),
        click.option("--base-url", default=None, metavar="URL", help="Provider base URL."),
        click.option("--model", "model", default=None, metavar="NAME", help="Summary model."),
        click.option(
            "--api-key-env",
            default=None,
            metavar="VAR",
            help="NAME of the environment variable holding the API key.",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0, min_open=True),
            default=None,
            metavar="SECONDS",
            help="Request timeout.",
        ),
        click.option(
            "--fallback-model",
            default=None,
            metavar="NAME",
            help="Model retried once when the model is not found.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _overrides(provider: str | None, kw: dict[str, Any]) -> Overrides:
    return Overrides(
        provider=provider,
        kind=kw.get("provider_kind"),
        base_url=kw.get("base_url"),
        model=kw.get("model"),
        api_key_env=kw.get("api_key_env"),
        timeout=kw.get("timeout"),
        fallback_model=kw.get("fallback_model"),
    )


def resolve_provider(name: str | None, **flags: Any) -> SummaryProvider | None:
    """The summary provider for ``--provider NAME`` (and optional flag overrides).

    ``None`` means the deterministic fallback (``--provider fallback``, or nothing
    configured). Configuration problems — a malformed file, an unknown name, an unset
    key variable — end the command with a one-line error (exit status 2).
    Flag keywords: ``provider_kind``, ``base_url``, ``model``, ``api_key_env``,
    ``timeout``, ``fallback_model``.
    """
    from tinyjuice.providers import make_provider
    from tjui.config import resolve_provider_config

    try:
        config = resolve_provider_config(_overrides(name, flags))
    except ConfigError as exc:
        fail(str(exc))
    return None if config is None else make_provider(config)


# ------------------------------------------------------------------------------ config


@click.command("config")
@provider_option
@provider_flags
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
def config_cmd(provider: str | None, as_json: bool, **flags: Any) -> None:
    """Show the effective summary-provider configuration and where each value came from.

    The API key is never shown: only whether its variable is set.
    """
    from tjui.config import effective_config

    try:
        cfg = effective_config(_overrides(provider, flags))
    except ConfigError as exc:
        fail(str(exc))
    data = cfg.to_dict()
    data["session_stores"] = _session_stores()
    if as_json:
        emit_json(data)
        return
    f = data["config_file"]
    state = "exists" if f["exists"] else "not found — using defaults"
    click.echo(f"config file   {f['path']}  ({f['source']}; {state})")
    chosen = data["provider"]
    shown = chosen["value"] or f"{FALLBACK_NAME} (deterministic summary, no model)"
    click.echo(f"provider      {shown}  [{chosen['source']}]")
    if not data["providers"]:
        click.echo(
            "\nNo providers configured. Add one to the config file, for example:\n"
            '\n  default_provider = "local"\n  [providers.local]\n  kind = "openai"\n'
            '  base_url = "http://127.0.0.1:8080/v1"\n  model = "qwen3-32b"\n'
            '  api_key_env = "LOCAL_LLM_KEY"\n  timeout = 60'
        )
    for name, p in data["providers"].items():
        mark = "  (selected)" if p["selected"] else ""
        click.echo(f"\n[providers.{name}]{mark}")
        for key in (
            "kind",
            "base_url",
            "model",
            "api_key_env",
            "timeout",
            "fallback_model",
            "api_key",
        ):
            value = p[key]["value"]
            text = "—" if value is None else str(value)
            click.echo(f"  {key:<15} {text:<40} [{p[key]['source']}]")
    if data["environment"]:
        click.echo("\nenvironment")
        for var, value in data["environment"].items():
            click.echo(f"  {var}={value}")
    _echo_stores(data["session_stores"])


def _session_stores() -> dict[str, Any]:
    """Where `tjui ls` and the browser look for each agent's sessions, and the row cache."""
    from tinyjuice.discovery import CACHE_ENV, ROOT_ENV, agent_roots, cache_dir

    return {
        "roots": [
            {**r.to_dict(), "exists": r.path.is_dir(), "env": ROOT_ENV[r.agent]}
            for r in agent_roots()
        ],
        "cache_dir": str(cache_dir()),
        "cache_env": CACHE_ENV,
    }


def _echo_stores(stores: dict[str, Any]) -> None:
    click.echo("\nsession stores (tjui ls, the browser)")
    for r in stores["roots"]:
        state = "" if r["exists"] else "  (not found)"
        click.echo(f"  {r['agent']:<12} {r['path']}  [{r['source']}; ${r['env']}]{state}")
    click.echo(f"  {'row cache':<12} {stores['cache_dir']}  [${stores['cache_env']}]")


# --------------------------------------------------------------------------- scorecard


def format_scorecard(review: Any, *, shown: int = SHOWN_MISSING) -> str:
    """A review as plain text: recall per category, missing items (with message
    indexes) and the checks."""
    from tinyjuice.review import CATEGORIES

    lines: list[str] = []
    overall = review.overall
    head = "nothing to keep" if overall is None else f"{overall:.0%} of {len(review.items):,}"
    lines.append(f"kept: {head}")
    for cat in CATEGORIES:
        total = review.total(cat)
        if not total:
            continue
        found = review.found(cat)
        lines.append(f"  {cat.value:<12} {found:>4}/{total:<4} {found / total:>5.0%}")
    missing = review.missing
    if missing:
        lines.append("missing:")
        for cat in CATEGORIES:
            items = missing.get(cat.value, ())
            for item in items[:shown]:
                text = " ".join(item.text.split())
                text = text if len(text) <= 100 else text[:99] + "…"
                lines.append(f"  {cat.value:<12} #{item.index:<5} {text}")
            if len(items) > shown:
                lines.append(f"  {cat.value:<12}        … {len(items) - shown:,} more")
    if review.background:
        names = ", ".join(t for t, _ in review.background[:shown])
        more = (
            f" … {len(review.background) - shown:,} more" if len(review.background) > shown else ""
        )
        lines.append(f"background (only in a listing or search result; not counted): {names}{more}")
    lines.extend(_probe_lines(review.probes, shown))
    lines.extend(_rules_lines(review.rules, shown))
    lines.append("checks:")
    for c in review.checks:
        mark = {True: "ok  ", False: "FAIL", None: "n/a "}[c.ok]
        lines.append(f"  {mark} {c.name:<17} {c.detail}")
    return "\n".join(lines)


def _probe_lines(report: Any, shown: int) -> list[str]:
    """Probe scores per kind and the unanswered probes with their evidence's index."""
    if report is None or not report.probes:
        return []
    who = f"judge {report.judge}" if report.judge else "answered from the summary"
    overall = report.overall
    lines = [f"probes ({who}): {overall:.0%} of {len(report.probes)} answered"]
    if report.judge_error:
        lines.append(f"  judge failed, answered from the summary instead: {report.judge_error}")
    for kind, score in report.scores.items():
        asked = sum(1 for p in report.probes if p.kind.value == kind)
        lines.append(f"  {kind:<12} {score:>5.0%} of {asked}")
    for p in report.unanswered[:shown]:
        lines.append(f"  unanswered   #{p.evidence:<5} {p.question}")
    if len(report.unanswered) > shown:
        lines.append(f"  unanswered          … {len(report.unanswered) - shown:,} more")
    return lines


def _rules_lines(report: Any, shown: int) -> list[str]:
    """Rules that had to survive the compaction, and the ones it lost."""
    if report is None or not report.checks:
        return []
    lost = report.lost
    state = "all kept" if not lost else f"LOST {len(lost)} of {len(report.checks)}"
    lines = [f"rules: {state}"]
    for c in lost[:shown]:
        text = " ".join(c.rule.text.split())
        text = text if len(text) <= 90 else text[:89] + "…"
        lines.append(f"  lost {c.rule.source:<13} #{c.rule.index:<5} {text}")
    if len(lost) > shown:
        lines.append(f"  lost … {len(lost) - shown:,} more")
    return lines


# --------------------------------------------------------------------------- summarize


# Long on purpose: a click command checking its option combinations in one place; the
# summary and its review are core's.
@click.command("summarize")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@boundary_options("summarise")
@provider_option
@provider_flags
@click.option("--focus", default=None, metavar="TOPIC", help="Focus topic for the summary.")
@context_window_option
@format_option
@session_option
@lenient_option
@whole_file_option
@policy_option
@click.option("--json", "as_json", is_flag=True, help="Print summary, kind and review as JSON.")
def summarize_cmd(
    file: Path,
    keep_last: int | None,
    at: int | None,
    provider: str | None,
    focus: str | None,
    context_window: int | None,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    whole_file: bool,
    policy: str | None,
    as_json: bool,
    **flags: Any,
) -> None:
    """Write the handoff summary for FILE's middle and review it. Nothing is saved.

    Only the live context is summarised (after the agent's last compaction;
    --whole-file: every message). Without --keep-last/--at the agent's policy picks
    the boundary. The provider is
    --provider, else $TJUI_PROVIDER, else default_provider; without one the
    deterministic fallback writes the summary. Nothing to summarise (the boundary
    leaves no middle) exits with status 0; a provider failure that aborts (auth,
    network) exits with status 1 and changes nothing.
    """
    from tinyjuice.budget import summary_token_budget
    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import compress
    from tinyjuice.review import review_summary
    from tinyjuice.tokens import count_transcript, default_counter, message_tokens

    if keep_last is not None and at is not None:
        fail("use either --keep-last or --at, not both")
    summarizer = resolve_provider(provider, **flags)
    transcript = load_or_fail(file, fmt, session=session, lenient=lenient)
    require_messages(transcript, file)
    check_policy(policy)
    split, at = live_split_or_fail(transcript, whole_file, at)
    transcript = split.live
    counter = default_counter()
    tokens = count_transcript(transcript, counter)
    options = CompactionOptions(
        keep_last=keep_last,
        boundary=at,
        focus_topic=focus,
        context_window=context_window,
        force=True,
        policy=policy,
    )
    result = compress(transcript, options, summarizer, counter=counter, tokens=tokens)
    report = result.report
    if result.summary_message is None:
        _no_summary(report, getattr(summarizer, "name", None), as_json)
        return
    middle = result.compacted_middle
    budget = summary_token_budget(
        report.context_window, sum(message_tokens(m, counter) for m in middle)
    )
    review = review_summary(
        middle,
        result.summary_message.text,
        start_index=report.boundary_start or 0,
        budget_tokens=budget,
        counter=counter,
        kept=[m for m in result.messages if m is not result.summary_message],
    )
    if as_json:
        emit_json(_summary_data(result, review))
    else:
        _print_summary(result, review)


def _no_summary(report: CompactionReport, provider: str | None, as_json: bool) -> None:
    """Say why no summary was written: nothing to summarise (exit 0), or a provider
    failure that aborted (exit 1)."""
    from tinyjuice.report import Status

    aborted = report.status is Status.ABORTED
    if as_json:
        emit_json(
            {
                "summary": None,
                "kind": "none",
                "provider": provider,
                "status": report.status.value,
                "failure_class": report.failure_class,
                "reason": report.reason,
                "warnings": list(report.warnings),
                "review": None,
            }
        )
    elif aborted:
        cls = f" [{report.failure_class}]" if report.failure_class else ""
        click.echo(f"no summary{cls}: {report.reason}", err=True)
        for w in report.warnings:
            click.echo(f"  {w}", err=True)
    else:
        click.echo(f"nothing to summarise ({report.status.value}): {report.reason}")
        for w in report.warnings:
            click.echo(f"note: {w}")
    # A provider failure aborts (1); nothing to summarise is not an error (0).
    if aborted:
        sys.exit(1)


def _summary_data(result: CompactionResult, review: SummaryReview) -> dict[str, Any]:
    """``summarize --json``: the summary, where it came from, and its review."""
    report = result.report
    assert result.summary_message is not None
    return {
        "summary": result.summary_message.text,
        "kind": report.summary_kind.value,
        "provider": report.summary_provider,
        "status": report.status.value,
        "failure_class": report.failure_class,
        "boundary": {"start": report.boundary_start, "end": report.boundary_end},
        "omitted": dict(report.summary_omitted),
        # What the fallback left out to fit its budget (redacted), under the id it names.
        "appendix": {"id": report.summary_appendix, "text": result.appendix}
        if result.appendix
        else None,
        "warnings": list(report.warnings),
        "review": review.to_dict(),
    }


def _print_summary(result: CompactionResult, review: SummaryReview) -> None:
    """The summary, then its review: the span it replaced, warnings, what was left out
    and the scorecard."""
    report = result.report
    assert result.summary_message is not None
    click.echo(result.summary_message.text)
    click.echo("")
    start, end = report.boundary_start or 0, report.boundary_end or 0
    source = f"{report.summary_kind.value}" + (
        f" from {report.summary_provider}" if report.summary_provider else ""
    )
    click.echo(f"── review: {source} summary of messages {start}–{end - 1} ──")
    for w in report.warnings:
        click.echo(f"warning: {w}")
    if report.summary_omitted:
        left = ", ".join(f"{v} {k}" for k, v in report.summary_omitted.items())
        click.echo(f"left out to fit the budget: {left}")
    click.echo(format_scorecard(review))


# ------------------------------------------------------------------------------ review


@click.command("review")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@format_option
@session_option
@lenient_option
@click.option(
    "--judge",
    "judge",
    default=None,
    metavar="NAME",
    help="A configured provider that answers the probe questions from the summary alone.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one object per past compaction.")
def review_cmd(
    file: Path,
    fmt: str | None,
    session: str | None,
    lenient: bool,
    judge: str | None,
    as_json: bool,
) -> None:
    """Review the summaries an agent already wrote in FILE: one scorecard per compaction.

    Each summary is measured against the turns before it (since the previous summary):
    how many paths, commands, URLs, errors, numbers, tool names, identifiers and the
    latest ask it kept, what it lost (with message indexes), the probe questions it
    answers, the rules that survived and the checks. With --judge NAME a configured
    provider answers the probes from the summary alone and its answers are graded.
    """
    from dataclasses import replace

    from tinyjuice.probes import judge_probes
    from tinyjuice.review import PastCompaction, review_past_compactions

    judge_provider = None
    if judge is not None:
        judge_provider = resolve_provider(judge)
        if judge_provider is None:
            fail(f"--judge {judge}: no model behind it; name a configured provider")
    transcript = load_or_fail(file, fmt, session=session, lenient=lenient)
    reviews = review_past_compactions(transcript)
    if judge_provider is not None:
        judged: list[PastCompaction] = []
        for r in reviews:
            report = judge_probes(
                r.review.probes.probes, transcript.messages[r.index].text, judge_provider
            )
            judged.append(replace(r, review=replace(r.review, probes=report)))
        reviews = tuple(judged)
    if as_json:
        emit_json([r.to_dict() for r in reviews])
        return
    if not reviews:
        click.echo(f"{file}: no compaction summaries found")
        return
    for k, r in enumerate(reviews):
        if k:
            click.echo("")
        pre = f", {r.pre_tokens:,} tokens before" if r.pre_tokens else ""
        click.echo(
            f"── compaction {k + 1} of {len(reviews)}: summary at message {r.index} "
            f"({r.trigger}{pre}); reviewed against messages {r.start}–{r.span_end - 1} ──"
            if r.span_end > r.start
            else f"── compaction {k + 1} of {len(reviews)}: summary at message {r.index} "
            f"({r.trigger}{pre}); no earlier turns in the file ──"
        )
        click.echo(format_scorecard(r.review))
