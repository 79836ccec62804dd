"""Summary review figures (issue #19): the artifact trail and the probes.

- **Artifact trail of the fallback summary** on the savings fixtures
  (:mod:`benchmarks.savings`, compressed as its ``hermes`` rows are, with the
  deterministic fallback): every file a tool call in the compressed span touched
  (:func:`tinyjuice.facts.file_actions`) is counted as kept when the summary names it
  with all its actions (the artifact probe's grading), or when the appendix the summary
  names lists it. Goal: 100%, nothing silently lost.
- **Probes, fallback vs the agents' own summaries** on the bundled ``sessions/``: each
  compaction an agent wrote (Claude Code, Codex, Hermes) is probed
  (:func:`tinyjuice.probes.make_probes` over the turns it replaced) and answered from the
  agent's summary and from the fallback summary of the same turns (the pipeline's
  budget for them), per probe kind. Also the probes of the fallback on the savings
  fixtures.

Deterministic: no timings, the same numbers on every run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import REPO_ROOT, RunContext, target_row

TITLE = "Summary review"

SESSIONS_DIR = REPO_ROOT / "sessions"
#: Sessions with compactions the agents wrote.
SESSION_FILES = ("claude-code.jsonl", "codex-rollout.jsonl", "demo.json", "hermes-state.db")
KINDS = ("recall", "artifact", "continuation", "decision")

__all__ = ["TITLE", "measure", "run"]


def _tally(reports: Iterable[Any]) -> dict[str, list[int]]:
    """``{kind: [answered, asked]}`` over probe reports."""
    out = {k: [0, 0] for k in KINDS}
    for rep in reports:
        for p in rep.probes:
            out[p.kind.value][0] += int(p.answered)
            out[p.kind.value][1] += 1
    return out


def _share(t: dict[str, list[int]]) -> tuple[int, int]:
    return sum(v[0] for v in t.values()), sum(v[1] for v in t.values())


def _trail_row(name: str, middle: Sequence[Any], result: Any) -> dict[str, Any]:
    from tinyjuice.facts import file_actions
    from tinyjuice.probes import Probe, ProbeKind, grade
    from tinyjuice.summary import strip_summary_wrappers

    summary = strip_summary_wrappers(result.summary_message.text)
    appendix = result.appendix or ""
    in_summary = in_appendix = 0
    trail = file_actions(middle)
    for a in trail:
        probe = Probe(ProbeKind.ARTIFACT, "", a.index, (a.path, *a.actions))
        if grade(probe, summary)[0]:
            in_summary += 1
        elif f"- {a.line()}\n" in appendix:
            in_appendix += 1
    return {
        "fixture": name,
        "touched": len(trail),
        "in_summary": in_summary,
        "in_appendix": in_appendix,
        "appendix": result.report.summary_appendix,
    }


def _fixtures(scale: float, directory: Path) -> tuple[list[dict[str, Any]], dict[str, list[int]]]:
    """The artifact-trail rows and the fallback's probe tally on the savings fixtures
    (written to ``directory``)."""
    from benchmarks.savings import CONTEXT_WINDOW, NOW, build_fixtures, write_fixtures
    from tinyjuice.formats import load
    from tinyjuice.pipeline import compress
    from tinyjuice.probes import answer_from_summary, make_probes
    from tinyjuice.report import CompactionOptions
    from tinyjuice.tokens import default_counter

    counter = default_counter()
    fixtures = [f for f in build_fixtures(scale) if not (f.failure or f.thrash)]
    paths = write_fixtures(fixtures, directory)
    rows: list[dict[str, Any]] = []
    reports = []
    for fx in fixtures:
        t = load(paths[fx.name])
        options = CompactionOptions(
            context_window=CONTEXT_WINDOW, keep_last=fx.keep_last, force=fx.keep_last is None
        )
        result = compress(t, options, counter=counter, now=NOW)
        rep = result.report
        if result.summary_message is None or rep.boundary_start is None:
            continue
        middle = t.messages[rep.boundary_start : rep.boundary_end]
        rows.append(_trail_row(fx.name, middle, result))
        probes = make_probes(middle, start_index=rep.boundary_start)
        reports.append(answer_from_summary(probes, result.summary_message.text))
    return rows, _tally(reports)


def _sessions() -> dict[str, Any]:
    """Probe tallies of the agents' own summaries and of the fallback on the same turns."""
    from tinyjuice.budget import summary_token_budget
    from tinyjuice.formats import load
    from tinyjuice.probes import answer_from_summary, make_probes
    from tinyjuice.redact import redact_message
    from tinyjuice.review import review_past_compactions
    from tinyjuice.summary import fallback_summary
    from tinyjuice.tokens import default_counter, message_tokens

    counter = default_counter()
    agents, ours = [], []
    compactions = 0
    for name in SESSION_FILES:
        t = load(SESSIONS_DIR / name)
        for past in review_past_compactions(t, counter=counter):
            middle = t.messages[past.start : past.index]
            if not middle:
                continue
            compactions += 1
            agents.append(past.review.probes)
            red = [redact_message(m) for m in middle]
            budget = summary_token_budget(200_000, sum(message_tokens(m, counter) for m in red))
            fb = fallback_summary(red, budget_tokens=budget, counter=counter)
            ours.append(answer_from_summary(make_probes(middle, start_index=past.start), fb.text))
    return {"compactions": compactions, "agents": _tally(agents), "fallback": _tally(ours)}


def measure(directory: Path, scale: float = 1.0) -> dict[str, Any]:
    """The section's figures; the fixtures are written to ``directory``."""
    rows, fixture_probes = _fixtures(scale, directory)
    return {"trail": rows, "fixture_probes": fixture_probes, "sessions": _sessions()}


def _per_kind(t: dict[str, list[int]]) -> str:
    return ", ".join(f"{k} {a}/{n}" for k, (a, n) in t.items() if n)


def _pct(a: int, n: int) -> str:
    return f"{a / n:.0%}" if n else "—"


def _targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    trail = report["trail"]
    touched = sum(r["touched"] for r in trail)
    summ = sum(r["in_summary"] for r in trail)
    appx = sum(r["in_appendix"] for r in trail)
    kept = summ + appx
    fx_a, fx_n = _share(report["fixture_probes"])
    s = report["sessions"]
    ag_a, ag_n = _share(s["agents"])
    fb_a, fb_n = _share(s["fallback"])
    return [
        target_row(
            "review.trail",
            "artifact trail of the fallback summary (savings fixtures, hermes): touched files "
            "named with their action",
            f"{kept} of {touched} ({_pct(kept, touched)}): {summ} in the summary, "
            f"{appx} in its appendix",
            "100%, in budget or in the appendix",
            kept / touched if touched else None,
            1.0,
            at_most=False,
        ),
        target_row(
            "review.probes.fixtures",
            "probes answered by the fallback summary (savings fixtures)",
            f"{fx_a} of {fx_n} ({_pct(fx_a, fx_n)}): {_per_kind(report['fixture_probes'])}",
            "reported",
            fx_a / fx_n if fx_n else None,
            0.0,
            at_most=False,
        ),
        target_row(
            "review.probes.sessions",
            f"probes answered, fallback vs the agents' own summaries ({s['compactions']} "
            "compactions in sessions/)",
            f"fallback {fb_a}/{fb_n} ({_pct(fb_a, fb_n)}: {_per_kind(s['fallback'])}) vs "
            f"agents {ag_a}/{ag_n} ({_pct(ag_a, ag_n)}: {_per_kind(s['agents'])})",
            "fallback ≥ agents",
            (fb_a / fb_n - ag_a / ag_n) if fb_n and ag_n else None,
            0.0,
            at_most=False,
        ),
    ]


def run(ctx: RunContext) -> dict[str, Any]:
    ctx.log("review: artifact trail and probes")
    from benchmarks.savings import FIXTURES_DIR

    # Quick runs use smaller fixtures: never over the committed ones.
    quick = ctx.work_dir / "review-fixtures"
    report = measure(quick, 0.25) if ctx.quick else measure(FIXTURES_DIR)
    report["title"] = TITLE
    report["targets"] = _targets(report)
    return report
