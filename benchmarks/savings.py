"""The savings report: seed 000's P3 fixtures, compressed, with invariants and fact retention.

Fixtures (OpenAI chat JSON, generated deterministically into ``benchmarks/fixtures/``):

- ``long-tool-heavy``: a long coding session, mostly tool calls and their outputs;
- ``repeated-reads``: the same files read again and again;
- ``huge-terminal``: one enormous build log in the middle of a session;
- ``image-heavy``: many screenshots pasted by the user;
- ``partial-keep-last``: manual partial compression keeping the last 2 exchanges;
- ``summary-auth-failure`` / ``summary-network-failure``: a stub summary provider that
  fails with ``SummaryError(AUTH)`` / ``SummaryError(NETWORK)`` — nothing may be dropped;
- ``anti-thrash``: a session compaction cannot shrink (a huge system prompt and latest
  ask), compressed again and again with the ``CompactionState`` threaded through: it
  must back off instead of looping.

Each fixture is compressed three ways: the ``hermes`` and ``rules`` profiles of
:func:`tinyjuice.pipeline.compress` (deterministic fallback summary unless the fixture
brings its stub provider), and the offline ``batch`` strategy
(:func:`tinyjuice.fit.compress_trajectory`, target: half the tokens). Every row records
tokens before → after, % saved, the invariants (no orphan tool call or result, tail
byte-identical, latest user ask verbatim, tool arguments valid JSON, nothing dropped on
auth/network failures), the retention of facts (paths, commands, URLs, error lines) of
the compressed span anywhere in the output (:func:`tinyjuice.fit.fact_retention`), and
:mod:`tinyjuice.review`'s scorecard of the inserted summary against that span. No
timings: the same numbers on every run.
"""

from __future__ import annotations

import base64
import os
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from benchmarks import BENCH_DIR, RunContext, target_row

TITLE = "Savings"

FIXTURES_DIR = BENCH_DIR / "fixtures"
#: A fixed clock for cooldown bookkeeping (no wall time in the figures).
NOW = 1_750_000_000.0
#: The window the fixtures are compressed against (threshold 27,200 tokens).
CONTEXT_WINDOW = 32_000
#: Calls to compress() in the anti-thrash fixture, and its smallest window (the window
#: is the session's size when larger, so the 50% threshold is always crossed).
THRASH_CALLS = 5
THRASH_WINDOW = 2_000

__all__ = [
    "CONTEXT_WINDOW",
    "FIXTURES_DIR",
    "TITLE",
    "Fixture",
    "build_fixtures",
    "markdown",
    "measure",
    "run",
    "write_fixtures",
]


# ------------------------------------------------------------------------------ builder


class _Session:
    """OpenAI chat messages built step by step (deterministic call ids)."""

    def __init__(self, system: str) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
        self._calls = 0

    def user(self, text: str, images: Sequence[str] = ()) -> _Session:
        if images:
            content: Any = [{"type": "text", "text": text}] + [
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64}"}}
                for b64 in images
            ]
        else:
            content = text
        self.messages.append({"role": "user", "content": content})
        return self

    def assistant(self, text: str) -> _Session:
        self.messages.append({"role": "assistant", "content": text})
        return self

    def tool(self, name: str, args: dict[str, Any], output: str, preface: str = "") -> _Session:
        self._calls += 1
        call_id = f"call_{self._calls:04d}"
        self.messages.append(
            {
                "role": "assistant",
                "content": preface or None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                    }
                ],
            }
        )
        self.messages.append({"role": "tool", "tool_call_id": call_id, "content": output})
        return self

    def doc(self) -> dict[str, Any]:
        return {"model": "gpt-4.1", "messages": self.messages}


_WORDS = [
    "parser",
    "cache",
    "retry",
    "budget",
    "window",
    "token",
    "stream",
    "worker",
    "queue",
    "schema",
    "record",
    "offset",
    "handler",
    "session",
    "buffer",
    "config",
    "module",
    "index",
    "writer",
    "reader",
    "target",
    "metric",
    "boundary",
]
_SYSTEM = (
    "You are a coding agent in /srv/app. Read files, run commands and keep changes small. "
    "Run the tests before you report back."
)


def _sentence(rng: random.Random, lo: int = 6, hi: int = 14) -> str:
    return " ".join(rng.choices(_WORDS, k=rng.randint(lo, hi))).capitalize() + "."


def _source(rng: random.Random, path: str, lines: int) -> str:
    out = []
    for k in range(1, lines + 1):
        a, b = rng.choices(_WORDS, k=2)
        out.append(f"{k:5d}\t    {a}_{b} = load_{a}({k})  # {path}" if k % 9 == 0 else f"{k:5d}\t")
    return "\n".join(out)


def _terminal(command: str, lines: list[str], exit_code: int) -> str:
    return orjson.dumps({"output": "\n".join(lines), "exit_code": exit_code}).decode()


def _paths(rng: random.Random, n: int) -> list[str]:
    return [f"src/app/{rng.choice(_WORDS)}_{k}.py" for k in range(n)]


def _long_tool_heavy(scale: float) -> dict[str, Any]:
    rng = random.Random(1001)
    s = _Session(_SYSTEM)
    s.user("The nightly import job fails on large files; find out why and fix it.")
    files = _paths(rng, 30)
    rounds = max(6, int(40 * scale))
    for r in range(rounds):
        path = files[r % len(files)]
        kind = r % 4
        if kind == 0:
            s.tool("read_file", {"path": path}, _source(rng, path, rng.randint(40, 120)))
        elif kind == 1:
            cmd = f"python -m pytest -q tests/test_{rng.choice(_WORDS)}.py"
            failed = r % 3 == 0
            lines = [f"tests/test_x.py::case_{k} PASSED" for k in range(rng.randint(20, 60))]
            if failed:
                lines.append(f"E   ValueError: bad offset in {path} at line {r + 7}")
                lines.append("FAILED tests/test_x.py::case_big - ValueError")
            s.tool("terminal", {"command": cmd}, _terminal(cmd, lines, 1 if failed else 0))
        elif kind == 2:
            pattern = rng.choice(_WORDS)
            hits = "\n".join(f"{f}:{rng.randint(1, 300)}: {pattern}()" for f in files[:12])
            s.tool("search_files", {"pattern": pattern, "path": "src/app"}, hits)
        else:
            s.tool(
                "web_fetch",
                {"url": f"https://docs.example.com/import/{r}"},
                _sentence(rng, 40, 80) + f" See https://docs.example.com/import/{r}#limits.",
            )
        if r % 8 == 7:
            s.assistant(_sentence(rng) + f" Next I will look at {path}.")
            s.user(f"Also check {files[(r + 5) % len(files)]} while you are there.")
    s.user("Good. Now make the importer stream the file instead of reading it whole.")
    s.assistant("I will change the importer to stream rows and add a test for a 2 GB input.")
    return s.doc()


def _repeated_reads(scale: float) -> dict[str, Any]:
    rng = random.Random(1002)
    s = _Session(_SYSTEM)
    s.user("Refactor the config loader in src/app/config.py and keep the tests green.")
    config = _source(rng, "src/app/config.py", 220)
    loader = _source(rng, "src/app/loader.py", 160)
    for r in range(max(4, int(14 * scale))):
        s.tool("read_file", {"path": "src/app/config.py"}, config, preface="Reading it again.")
        s.tool("read_file", {"path": "src/app/loader.py"}, loader)
        s.tool(
            "terminal",
            {"command": "python -m pytest -q tests/test_config.py"},
            _terminal("pytest", [f"{r + 12} passed in 0.{r}s"], 0),
        )
    s.user("Now add a --strict flag that rejects unknown keys.")
    s.assistant("Adding --strict to the loader; unknown keys raise ConfigError.")
    return s.doc()


def _huge_terminal(scale: float) -> dict[str, Any]:
    rng = random.Random(1003)
    s = _Session(_SYSTEM)
    s.user("The release build is broken. Run it and tell me what fails.")
    s.tool("read_file", {"path": "Makefile"}, _source(rng, "Makefile", 60))
    lines = [
        f"[{k:05d}] compiling src/app/{rng.choice(_WORDS)}_{k % 97}.c -> build/obj/{k}.o"
        for k in range(max(300, int(4000 * scale)))
    ]
    lines.insert(len(lines) - 3, "src/app/codec_41.c:212: error: 'frame_len' undeclared")
    lines.append("make: *** [Makefile:88: build/app] Error 1")
    s.tool("terminal", {"command": "make release"}, _terminal("make release", lines, 2))
    s.assistant("The build fails in src/app/codec_41.c: frame_len is undeclared at line 212.")
    s.user("Fix it and rerun only that target.")
    s.tool(
        "terminal",
        {"command": "make build/app"},
        _terminal("make build/app", ["build ok"], 0),
    )
    s.user("Great, now bump the version to 2.4.1 in pyproject.toml.")
    s.assistant("Bumping the version in pyproject.toml to 2.4.1.")
    return s.doc()


def _image_heavy(scale: float) -> dict[str, Any]:
    rng = random.Random(1004)
    s = _Session(_SYSTEM)
    for k in range(max(4, int(12 * scale))):
        png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + rng.randbytes(1500)).decode()
        s.user(f"Screenshot {k}: the layout of /settings/page_{k} is off.", images=[png])
        s.tool(
            "read_file",
            {"path": f"web/src/pages/page_{k}.tsx"},
            _source(rng, f"page_{k}.tsx", 40),
        )
        s.assistant(f"Fixed the flex container in web/src/pages/page_{k}.tsx. " + _sentence(rng))
    s.user("Last one: does the dark theme still work? Check web/src/theme.ts.")
    s.assistant("Checking web/src/theme.ts for the dark palette.")
    return s.doc()


def _partial(scale: float) -> dict[str, Any]:
    rng = random.Random(1005)
    s = _Session(_SYSTEM)
    for k in range(max(4, int(10 * scale))):
        path = f"src/app/step_{k}.py"
        s.user(f"Step {k}: add validation to {path}.")
        s.tool("read_file", {"path": path}, _source(rng, path, 80))
        cmd = f"python -m pytest -q tests/test_step_{k}.py"
        s.tool("terminal", {"command": cmd}, _terminal(cmd, [f"{k + 3} passed"], 0))
        s.assistant(f"Step {k} done: {path} validates its input. " + _sentence(rng))
    return s.doc()


def _anti_thrash(scale: float) -> dict[str, Any]:
    rng = random.Random(1006)
    rules = "\n".join(f"- {_sentence(rng, 10, 20)}" for _ in range(max(40, int(400 * scale))))
    s = _Session(_SYSTEM + "\n\n# House rules\n" + rules)
    s.user("Hello.")
    s.assistant("Hi, what should I work on?")
    log = "\n".join(_sentence(rng, 10, 20) for _ in range(max(40, int(300 * scale))))
    s.user("Here is the full incident log; tell me what went wrong:\n" + log)
    return s.doc()


@dataclass(frozen=True, slots=True)
class Fixture:
    name: str
    doc: dict[str, Any]
    description: str
    #: The stub provider's failure class, if it fails ("auth", "network").
    failure: str | None = None
    #: Manual partial compression: keep the last N user exchanges.
    keep_last: int | None = None
    #: Repeated automatic compression with the state threaded through.
    thrash: bool = False
    extra: dict[str, Any] = field(default_factory=dict)


def build_fixtures(scale: float = 1.0) -> list[Fixture]:
    """Every fixture; ``scale`` < 1 makes them smaller (tests)."""
    long = _long_tool_heavy(scale)
    return [
        Fixture("long-tool-heavy", long, "long tool-heavy conversation"),
        Fixture("repeated-reads", _repeated_reads(scale), "repeated read-file outputs"),
        Fixture("huge-terminal", _huge_terminal(scale), "one huge terminal output"),
        Fixture("image-heavy", _image_heavy(scale), "multimodal, image-heavy session"),
        Fixture(
            "partial-keep-last",
            _partial(scale),
            "manual partial compression, keep the last 2 exchanges",
            keep_last=2,
        ),
        Fixture("summary-auth-failure", long, "summary provider fails (auth)", failure="auth"),
        Fixture(
            "summary-network-failure",
            long,
            "summary provider fails (network)",
            failure="network",
        ),
        Fixture(
            "anti-thrash",
            _anti_thrash(scale),
            "repeated no-op compression (anti-thrash)",
            thrash=True,
        ),
    ]


def write_fixtures(fixtures: Sequence[Fixture], directory: Path) -> dict[str, Path]:
    """Write each fixture as ``<name>.json`` (only when its bytes changed)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths: dict[str, Path] = {}
    for fx in fixtures:
        path = directory / f"{fx.name}.json"
        data = orjson.dumps(fx.doc, option=orjson.OPT_INDENT_2) + b"\n"
        if not path.exists() or path.read_bytes() != data:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_bytes(data)
            os.replace(tmp, path)
        paths[fx.name] = path
    return paths


# --------------------------------------------------------------------------- invariants


class _FailingProvider:
    """A stub summary provider that always fails with one failure class."""

    def __init__(self, failure: str) -> None:
        from tinyjuice.summary import FailureClass

        self.failure = FailureClass(failure)
        self.name = f"stub-{failure}-failure"
        self.calls = 0

    def summarize(self, request: Any) -> Any:
        from tinyjuice.summary import SummaryError

        self.calls += 1
        raise SummaryError(self.failure, f"stub provider: simulated {self.failure.value} failure")


def _dump(m: Any) -> bytes:
    from tinyjuice.formats.openai import message_to_dict

    return orjson.dumps(message_to_dict(m), option=orjson.OPT_SORT_KEYS)


def _pairs_ok(messages: Sequence[Any]) -> bool:
    """No tool result without an earlier call, no call left without its result."""
    from tinyjuice.model import Role

    open_calls: set[str] = set()
    answered: set[str] = set()
    for m in messages:
        if m.role is Role.TOOL:
            if m.tool_call_id not in open_calls or m.tool_call_id in answered:
                return False
            answered.add(m.tool_call_id)
        for c in m.tool_calls:
            open_calls.add(c.id)
    return open_calls == answered


def _invariants(
    before: Sequence[Any], after: Sequence[Any], tail: int, *, nothing_dropped: bool
) -> dict[str, bool]:
    from tinyjuice.boundary import latest_real_user_index

    out: dict[str, bool] = {"pairs_ok": _pairs_ok(after)}
    if tail:
        out["tail_identical"] = [_dump(m) for m in before[-tail:]] == [
            _dump(m) for m in after[-tail:]
        ]
    else:
        out["tail_identical"] = True
    u = latest_real_user_index(before)
    out["latest_ask_verbatim"] = u is None or any(
        m.role is before[u].role and m.text == before[u].text for m in after
    )
    out["args_valid_json"] = all(c.arguments_valid for m in after for c in m.tool_calls)
    if nothing_dropped:
        out["nothing_dropped"] = [_dump(m) for m in before] == [_dump(m) for m in after]
    return out


def _review(middle: Sequence[Any], summary: Any, start: int, counter: Any) -> Any:
    """tinyjuice.review's scorecard of the inserted summary against the span it replaced
    (None when there is no summary, or the review module is not available)."""
    if summary is None:
        return None
    try:
        from tinyjuice.review import review_summary
    except ImportError:  # pragma: no cover - the review module ships with tinyjuice
        return None
    rv = review_summary(middle, summary.text, start_index=start, counter=counter)
    return {
        "overall": None if rv.overall is None else round(rv.overall, 4),
        "found": {c: rv.found(c) for c in rv.recall},
        "total": {c: rv.total(c) for c in rv.recall},
        "checks_ok": rv.ok,
    }


def _row(
    fixture: Fixture,
    method: str,
    before_tokens: int,
    after_tokens: int,
    status: str,
    invariants: dict[str, bool],
    retention: Any | None,
    **extra: Any,
) -> dict[str, Any]:
    saved = before_tokens - after_tokens
    row: dict[str, Any] = {
        "fixture": fixture.name,
        "method": method,
        "status": status,
        "tokens_before": before_tokens,
        "tokens_after": after_tokens,
        "percent_saved": round(100 * saved / before_tokens, 2) if before_tokens else 0.0,
        "invariants": invariants,
        "invariants_held": all(invariants.values()),
        "fact_retention": retention.to_dict() if retention is not None else None,
    }
    row.update(extra)
    return row


def _pipeline_row(fixture: Fixture, transcript: Any, profile: str, counter: Any) -> dict[str, Any]:
    from tinyjuice.fit import fact_retention
    from tinyjuice.options import CompactionOptions, Profile
    from tinyjuice.pipeline import compress

    options = CompactionOptions(
        profile=Profile(profile),
        context_window=CONTEXT_WINDOW,
        keep_last=fixture.keep_last,
        force=fixture.keep_last is None,
        exact_counts=True,  # the savings are figures: counted, not estimated
    )
    provider = _FailingProvider(fixture.failure) if fixture.failure else None
    result = compress(transcript, options, provider, counter=counter, now=NOW)
    failed = provider is not None and provider.calls > 0
    rep = result.report
    before, after = transcript.messages, result.transcript.messages
    compacted = rep.status.value == "compacted"
    tail = len(before) - (rep.boundary_end or 0) if compacted else len(before)
    retention = review = None
    if compacted and rep.boundary_start is not None and rep.boundary_end is not None:
        span = before[rep.boundary_start : rep.boundary_end]
        retention = fact_retention(span, after)
        review = _review(span, result.summary_message, rep.boundary_start, counter)
    return _row(
        fixture,
        profile,
        rep.before_tokens,
        rep.after_tokens,
        rep.status.value,
        _invariants(before, after, tail, nothing_dropped=failed),
        retention,
        summary=rep.summary_kind.value,
        failure_class=rep.failure_class,
        provider_calls=provider.calls if provider else 0,
        review=review,
    )


def _batch_row(fixture: Fixture, transcript: Any, counter: Any) -> dict[str, Any]:
    from tinyjuice.boundary import BoundaryIndex
    from tinyjuice.fit import BatchOptions, compress_trajectory, fact_retention
    from tinyjuice.tokens import count_transcript

    tokens = count_transcript(transcript, counter)
    msgs = transcript.messages
    keep = 4
    if fixture.keep_last is not None:
        users = BoundaryIndex(msgs).user_indices
        keep = len(msgs) - users[-fixture.keep_last] if len(users) >= fixture.keep_last else 4
    options = BatchOptions(target_tokens=max(1, tokens.total // 2), keep_last=keep)
    provider = _FailingProvider(fixture.failure) if fixture.failure else None
    result = compress_trajectory(
        transcript, options, counter=counter, tokens=tokens, provider=provider
    )
    m = result.metrics
    after = result.transcript.messages
    failed = provider is not None and provider.calls > 0
    tail = len(msgs) - m.region_end if result.changed and m.region_end is not None else len(msgs)
    retention = review = None
    if result.changed and m.region_start is not None and m.region_end is not None:
        span = msgs[m.region_start : m.region_end]
        retention = fact_retention(span, after)
        review = _review(span, result.summary_message, m.region_start, counter)
    return _row(
        fixture,
        "batch",
        m.tokens_before,
        m.tokens_after,
        m.status.value,
        _invariants(msgs, after, tail, nothing_dropped=failed),
        retention,
        summary="fallback" if m.fallback_summaries else "none",
        failure_class=m.failure_class,
        provider_calls=provider.calls if provider else 0,
        target_tokens=options.target_tokens,
        review=review,
    )


def _thrash_row(fixture: Fixture, transcript: Any, profile: str, counter: Any) -> dict[str, Any]:
    """Automatic compression called again and again on its own output, state threaded."""
    from tinyjuice.options import CompactionOptions, Profile
    from tinyjuice.pipeline import compress
    from tinyjuice.tokens import count_transcript

    # A window the session fills more than half of: automatic compaction fires each time.
    window = max(THRASH_WINDOW, count_transcript(transcript, counter).total)
    options = CompactionOptions(
        profile=Profile(profile),
        context_window=window,
        threshold_floor=0,
        raise_ratio_small_windows=False,
        rules={"trigger_threshold": 0.5},
        exact_counts=True,
    )
    state = None
    current = transcript
    statuses: list[str] = []
    strikes: list[int] = []
    first_before = None
    for _ in range(THRASH_CALLS):
        result = compress(current, options, state=state, counter=counter, now=NOW)
        if first_before is None:
            first_before = result.report.before_tokens
        statuses.append(result.report.status.value)
        state = result.state
        strikes.append(state.strikes)
        current = result.transcript
    backed_off_at = next((k + 1 for k, s in enumerate(statuses) if s == "backed_off"), None)
    # After the first no-op nothing may change again: the loop must not keep rewriting.
    first_noop = next((k for k, s in enumerate(statuses) if s == "noop"), None)
    settled = first_noop is not None and all(s != "compacted" for s in statuses[first_noop:])
    inv = _invariants(transcript.messages, current.messages, 0, nothing_dropped=False)
    inv["backs_off"] = backed_off_at is not None and settled
    assert first_before is not None
    return _row(
        fixture,
        profile,
        first_before,
        result.report.after_tokens,
        statuses[-1],
        inv,
        None,
        statuses=statuses,
        strikes=strikes,
        backed_off_at_call=backed_off_at,
        auto_blocked=state.auto_blocked if state is not None else False,
    )


# ------------------------------------------------------------------------------- measure


def measure(directory: Path, scale: float = 1.0) -> dict[str, Any]:
    """Write the fixtures into ``directory``, compress each, and return the report."""
    from tinyjuice.formats import load
    from tinyjuice.tokens import count_transcript, default_counter

    counter = default_counter()
    fixtures = build_fixtures(scale)
    paths = write_fixtures(fixtures, directory)
    rows: list[dict[str, Any]] = []
    info: dict[str, Any] = {}
    for fx in fixtures:
        transcript = load(paths[fx.name])
        info[fx.name] = {
            "description": fx.description,
            "file": paths[fx.name].name,
            "messages": len(transcript.messages),
            "tokens": count_transcript(transcript, counter).total,
        }
        methods: list[Callable[[], dict[str, Any]]]
        if fx.thrash:
            methods = [
                lambda fx=fx, t=transcript: _thrash_row(fx, t, "hermes", counter),
                lambda fx=fx, t=transcript: _thrash_row(fx, t, "rules", counter),
            ]
        else:
            methods = [
                lambda fx=fx, t=transcript: _pipeline_row(fx, t, "hermes", counter),
                lambda fx=fx, t=transcript: _pipeline_row(fx, t, "rules", counter),
                lambda fx=fx, t=transcript: _batch_row(fx, t, counter),
            ]
        rows.extend(fn() for fn in methods)
    return {"counter": counter.name, "fixtures": info, "rows": rows}


def _targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    rows = report["rows"]
    broken = [r for r in rows if not r["invariants_held"]]
    failures = [r for r in rows if r["fixture"].startswith("summary-") and r["method"] != "rules"]
    dropped = [r for r in failures if not r["invariants"].get("nothing_dropped", False)]
    thrash = [r for r in rows if r["fixture"] == "anti-thrash"]
    worst_backoff = max(
        (r["backed_off_at_call"] or THRASH_CALLS + 1 for r in thrash), default=THRASH_CALLS + 1
    )
    compressing = [
        r
        for r in rows
        if r["method"] in ("hermes", "batch")
        and r["fact_retention"] is not None
        and r["summary"] == "fallback"
    ]

    def pooled(kinds: tuple[str, ...]) -> tuple[int, int]:
        facts = kept = 0
        for r in compressing:
            for kind in kinds:
                entry = r["fact_retention"]["by_kind"][kind]
                facts += entry["facts"]
                kept += entry["kept"]
        return facts, kept

    all_facts, all_kept = pooled(("paths", "commands", "urls", "errors"))
    facts, kept = pooled(("commands", "errors"))
    retention = kept / facts if facts else None
    return [
        target_row(
            "savings.invariants",
            "savings fixtures × (hermes, rules, batch): rows breaking an invariant",
            f"{len(broken)} of {len(rows)}",
            "0 (no orphan pairs, tail byte-identical, latest ask verbatim, args valid JSON)",
            len(broken),
            0,
            at_most=True,
        ),
        target_row(
            "savings.summary_failures",
            "auth/network summary failures: rows that dropped anything",
            f"{len(dropped)} of {len(failures)}",
            "0 (nothing dropped)",
            len(dropped) if failures else None,
            0,
            at_most=True,
        ),
        target_row(
            "savings.anti_thrash",
            "repeated no-op compression: calls until it backs off (hermes, rules)",
            f"call {worst_backoff}" if worst_backoff <= THRASH_CALLS else "never",
            "backs off by call 3",
            worst_backoff,
            3,
            at_most=True,
        ),
        target_row(
            "savings.fact_retention",
            "commands and error lines of the compressed span kept by the fallback summary "
            "(hermes and batch rows)",
            f"{kept:,} of {facts:,} ({100 * (retention or 0):.0f}%); all facts incl. paths "
            f"and URLs: {all_kept:,} of {all_facts:,}",
            "≥ 90%",
            None if retention is None else round(retention, 4),
            0.9,
            at_most=False,
        ),
    ]


def markdown(report: dict[str, Any]) -> str:
    """The README savings table (one row per fixture and method)."""
    lines = [
        "| fixture | method | tokens before → after | saved | invariants | facts kept "
        "| review: summary recall |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in report["rows"]:
        held = (
            "all held"
            if r["invariants_held"]
            else "**" + ", ".join(k for k, v in r["invariants"].items() if not v) + " broken**"
        )
        fr = r["fact_retention"]
        facts = "—" if fr is None else f"{fr['kept']}/{fr['facts']}"
        status = "" if r["status"] in ("compacted", "compressed") else f" ({r['status']})"
        rv = r.get("review")
        recall = "—" if not rv or rv["overall"] is None else f"{100 * rv['overall']:.0f}%"
        lines.append(
            f"| {r['fixture']} | {r['method']}{status} | {r['tokens_before']:,} → "
            f"{r['tokens_after']:,} | {r['percent_saved']:.1f}% | {held} | {facts} | {recall} |"
        )
    return "\n".join(lines) + "\n"


def run(ctx: RunContext) -> dict[str, Any]:
    ctx.log(f"savings: writing fixtures to {FIXTURES_DIR}")
    report = measure(FIXTURES_DIR)
    report["title"] = TITLE
    report["targets"] = _targets(report)
    report["markdown"] = markdown(report)
    return report
