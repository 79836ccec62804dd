"""Property tests: compress() keeps every safety invariant on generated transcripts.

Transcripts are realistic agent sessions (parallel tool calls with results in any order,
terminal JSON outputs, file reads, searches, large and non-JSON arguments, screenshots,
reasoning, earlier summaries, injected context, an optional call still in flight) that
render to a valid Anthropic request (first message user, roles alternate). Planted fake
secrets are scattered through them. For both profiles and any boundary, keep-last-N or
forced automatic run, the result must:

- pair every tool result with an earlier call and every call with a result (a call still
  in flight at the very end stays as it was);
- return the tail ``messages[boundary_end:]`` byte-identical (same objects, same dump);
- keep the latest real user message verbatim, as its own message;
- keep tool arguments that were valid JSON valid JSON;
- (rules profile) never alter a user message;
- never show a planted secret in a digest, summary or rule-generated line;
- render for Anthropic with a first message ``user`` and alternating roles;
- compress again to a no-op or something strictly smaller, still meeting all of the above.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

import orjson
from builders import (
    DEFAULT_SYSTEM,
    CallSpec,
    Conv,
    FakeProvider,
    anthropic_roles,
    fake_secrets,
    file_output,
    openai_dump,
    orphan_calls,
    orphan_results,
    search_output,
    secret_fragments,
    terminal_output,
)
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tinyjuice.boundary import latest_real_user_index
from tinyjuice.model import Role, Transcript
from tinyjuice.options import CompactionOptions, Profile
from tinyjuice.pipeline import compress
from tinyjuice.report import CompactionResult, Status
from tinyjuice.summary import SummaryRequest, SummaryText
from tinyjuice.tokens import RoughCounter

ROUGH = RoughCounter()
SECRETS = fake_secrets()
SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# --------------------------------------------------------------------------- generator

_PATHS = (
    "src/app.py",
    "src/core/engine.py",
    "tests/test_app.py",
    "docs/README.md",
    "/etc/app.toml",
)


@st.composite
def _secret_or_not(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 3)) == 0:
        kind = draw(st.sampled_from(sorted(SECRETS)))
        return f" (using {SECRETS[kind]})"
    return ""


@st.composite
def _call(draw: st.DrawFn, step: int) -> CallSpec:
    kind = draw(
        st.sampled_from(["terminal", "read_file", "search", "write_file", "shell", "screenshot"])
    )
    path = draw(st.sampled_from(_PATHS))
    secret = draw(_secret_or_not())
    big = draw(st.booleans())
    if kind == "terminal":
        cmd = f"pytest {path} -q" + secret
        code = draw(st.sampled_from([0, 0, 1, 2]))
        out = terminal_output(cmd, 60 if big else 3, code)
        return CallSpec("terminal", {"command": cmd}, out, is_error=code == 2)
    if kind == "read_file":
        return CallSpec("read_file", {"path": path}, file_output(path, 50 if big else 2) + secret)
    if kind == "search":
        return CallSpec(
            "search_files", {"pattern": "TODO", "path": "src"}, search_output("TODO", "src", 20)
        )
    if kind == "write_file":
        body = ("def f():\n    return 'é ✓'\n" * (60 if big else 1)) + secret
        return CallSpec(
            "write_file", {"path": path, "content": body, "api_key": SECRETS["github"]}, "ok"
        )
    if kind == "shell":
        raw = "cd src && make all " + ("VERBOSE=1 " * (80 if big else 1))  # not JSON
        return CallSpec("shell", raw, f"built step {step}" + secret)
    return CallSpec("computer", {"action": "screenshot"}, "Screenshot taken.", images=1)


@st.composite
def transcripts(draw: st.DrawFn) -> tuple[Transcript, bool]:
    """A generated session, and whether it ends with a call still in flight."""
    c = Conv(system=draw(st.sampled_from([DEFAULT_SYSTEM, None])))
    earlier = draw(st.sampled_from(["none", "tinyjuice", "agent"]))
    if earlier == "tinyjuice":
        c.summary("## Goal\nPort the CLI to src/core/engine.py." + draw(_secret_or_not()))
        c.assistant("Continuing from the summary.")
    elif earlier == "agent":
        c.agent_summary("## Pending asks\n- finish tests/test_app.py")
        c.assistant("Continuing from the summary.")
    exchanges = draw(st.integers(1, 6))
    in_flight = draw(st.integers(0, 4)) == 0
    for k in range(exchanges):
        last = k == exchanges - 1
        ask = f"Ask {k}: please fix {draw(st.sampled_from(_PATHS))}" + draw(_secret_or_not())
        images = 1 if draw(st.integers(0, 5)) == 0 else 0
        c.user(ask, images=images)
        steps = draw(st.integers(0, 3))
        injected_mid_turn = False
        for s in range(steps):
            calls = draw(st.lists(_call(s), min_size=1, max_size=3))
            order = draw(st.permutations(range(len(calls))))
            text = draw(st.sampled_from(["", f"Checking step {s}." + draw(_secret_or_not())]))
            c.parallel(*calls, text=text, order=order)
            if s < steps - 1 and draw(st.integers(0, 4)) == 0:
                # Injected context right after tool results shares their user turn.
                c.injected(
                    "<system-reminder>Remember: run ruff.</system-reminder>", kind="system_reminder"
                )
                injected_mid_turn = True
        if last and in_flight:
            c.in_flight("terminal", {"command": "make release"})
            break
        if steps == 0 or injected_mid_turn or draw(st.booleans()):
            reasoning = draw(
                st.sampled_from([None, "The user wants the fix." + draw(_secret_or_not())])
            )
            c.assistant(f"Answer {k}: done." + draw(_secret_or_not()), reasoning=reasoning)
    return c.transcript(context_window=8_000), in_flight


# --------------------------------------------------------------------------- checks


class EchoProvider(FakeProvider):
    """A summary provider that repeats what it was sent: anything unredacted would leak."""

    def summarize(self, request: SummaryRequest) -> SummaryText:
        self.requests.append(request)
        seen = [request.previous_summary or ""]
        for m in request.messages:
            seen += [m.text, m.reasoning or "", *(call.arguments for call in m.tool_calls)]
        return SummaryText("## Critical Context\n" + "\n".join(s for s in seen if s)[:1500])


def _valid_json(arguments: str) -> bool:
    if not arguments:
        return True
    try:
        orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return False
    return True


def _strictly_alternates(roles: Sequence[str]) -> bool:
    return bool(roles) and roles[0] == "user" and all(a != b for a, b in pairwise(roles))


def _check(t: Transcript, r: CompactionResult, profile: Profile, in_flight: bool) -> None:
    out = r.messages
    rep = r.report
    if rep.status is not Status.COMPACTED:
        assert r.transcript is t
        assert openai_dump(out) == openai_dump(t.messages)
        return
    # Tool pairs: no result without its call, no call without its result.
    assert not orphan_results(out)
    pending = set(orphan_calls(out))
    if in_flight:
        assert pending == {c.id for c in t.messages[-1].tool_calls}
        assert out[-1] is t.messages[-1]
    else:
        assert not pending
    # The tail is byte-identical.
    tail = t.messages[rep.boundary_end :]
    got = out[len(out) - len(tail) :] if tail else ()
    assert all(a is b for a, b in zip(got, tail, strict=True))
    assert got == tail and openai_dump(got) == openai_dump(tail)
    # The latest real user message survives verbatim, as its own message.
    u = latest_real_user_index(t.messages)
    if u is not None:
        assert any(m is t.messages[u] for m in out)
    # Valid JSON arguments stay valid.
    before = {c.id: c for m in t.messages for c in m.tool_calls}
    for m in out:
        for call in m.tool_calls:
            if call.id in before and _valid_json(before[call.id].arguments):
                assert _valid_json(call.arguments), call
    # Rule 5: the rules profile never alters a user message.
    if profile is Profile.RULES:
        users = [m for m in t.messages if m.role is Role.USER]
        kept = [m for m in out if m.role is Role.USER]
        assert len(kept) == len(users)
        assert all(a is b for a, b in zip(kept, users, strict=True))
    # No planted secret in anything tinyjuice generated.
    generated = "\n".join(
        m.text + (m.reasoning or "") + "".join(c.arguments for c in m.tool_calls)
        for m in out
        if m.meta.generated_by
    )
    for secret in SECRETS.values():
        for frag in secret_fragments(secret):
            assert frag not in generated
    # Anthropic: first message user, roles alternate (the input did).
    assert _strictly_alternates(anthropic_roles(r.transcript))


def _run(t: Transcript, opts: CompactionOptions, provider: FakeProvider | None = None, state=None):
    return compress(t, opts, provider, state, counter=ROUGH, now=1_000.0)


def _both_rounds(t: Transcript, opts: CompactionOptions, in_flight: bool, provider=None) -> None:
    assert _strictly_alternates(anthropic_roles(t)), "generator produced an invalid transcript"
    r1 = _run(t, opts, provider)
    _check(t, r1, opts.profile, in_flight)
    r2 = _run(r1.transcript, opts, provider, r1.state)
    assert r2.report.status is not Status.COMPACTED or (
        r2.report.after_tokens < r2.report.before_tokens
    )
    _check(r1.transcript, r2, opts.profile, in_flight)


_MODES = st.one_of(
    st.just({"force": True}),
    st.builds(lambda k: {"keep_last": k}, st.integers(0, 7)),
    st.builds(lambda b: {"boundary": b}, st.integers(0, 60)),
)


@SETTINGS
@given(data=transcripts(), mode=_MODES)
def test_tool_pairs_complete_and_tail_identical(data: tuple[Transcript, bool], mode: dict) -> None:
    t, in_flight = data
    if "boundary" in mode:
        mode = {"boundary": min(mode["boundary"], len(t.messages))}
    _both_rounds(t, CompactionOptions(**mode), in_flight)


@SETTINGS
@given(data=transcripts(), mode=_MODES)
def test_rules_profile_invariants(data: tuple[Transcript, bool], mode: dict) -> None:
    t, in_flight = data
    if "boundary" in mode:
        mode = {"boundary": min(mode["boundary"], len(t.messages))}
    _both_rounds(t, CompactionOptions(profile=Profile.RULES, **mode), in_flight)


@SETTINGS
@given(data=transcripts(), keep=st.integers(0, 4))
def test_no_secret_reaches_a_provider_or_summary(data: tuple[Transcript, bool], keep: int) -> None:
    t, in_flight = data
    provider = EchoProvider()
    _both_rounds(t, CompactionOptions(keep_last=keep, protect_first_n=0), in_flight, provider)
    for request in provider.requests:
        seen = [request.previous_summary or ""]
        for m in request.messages:
            seen += [m.text, m.reasoning or "", *(c.arguments for c in m.tool_calls)]
        blob = "\n".join(seen)
        for secret in SECRETS.values():
            for frag in secret_fragments(secret):
                assert frag not in blob


@SETTINGS
@given(data=transcripts())
def test_valid_json_arguments_stay_valid(data: tuple[Transcript, bool]) -> None:
    t, _ = data
    valid_before = {c.id for m in t.messages for c in m.tool_calls if _valid_json(c.arguments)}
    assume(valid_before)  # some generated sessions make no tool call at all
    provider = EchoProvider()
    for opts in (
        CompactionOptions(force=True),
        CompactionOptions(keep_last=1),
        CompactionOptions(profile=Profile.RULES, force=True),
    ):
        r = _run(t, opts, provider)
        for m in r.messages:
            for call in m.tool_calls:
                assert call.id not in valid_before or _valid_json(call.arguments)
    # Arguments shrunk and redacted for the summariser still parse.
    for request in provider.requests:
        for m in request.messages:
            for call in m.tool_calls:
                assert call.id not in valid_before or _valid_json(call.arguments)
