"""Trigger policies, the usage series and the compaction explainer, with known answers.

Expected numbers come from the policies' published rules (POLICIES.md), the bundled
samples' manifest and usage lines, or arithmetic on fixtures whose sizes are chosen so
the rough counter's rule ((chars + 3) // 4 + 10 per message) gives round numbers.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.budget import compute_budget
from tinyjuice.explain import EventFlag, TokenSource, explain
from tinyjuice.formats import load
from tinyjuice.model import (
    CompactionEvent,
    Message,
    MessageMeta,
    Role,
    TextPart,
    Transcript,
    Trigger,
    Usage,
)
from tinyjuice.model_limits import ModelLimits
from tinyjuice.policies import (
    POLICY_NAMES,
    ClaudeCodePolicy,
    CodexPolicy,
    CustomPolicy,
    HermesPolicy,
    OpencodePolicy,
    PolicyName,
    Rule,
    RulesPolicy,
    default_policy,
    parse_policy,
    pick_policy,
    replay,
    resolve_window,
    usage_series,
)
from tinyjuice.tokens import CountKind, RoughCounter, count_transcript, default_counter

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
MANIFEST = json.loads((SESSIONS / "manifest.json").read_text())["files"]
ROUGH = RoughCounter()


def rough(text: str) -> int:
    """Hermes' rough rule for one plain-text message, written out independently."""
    return (len(text) + 3) // 4 + 10


# ----------------------------------------------------------------------------- policies


@pytest.mark.parametrize(
    ("policy", "window", "max_out", "threshold", "rule"),
    [
        # Hermes: 0.50 raised to 0.75 under 512K; plain 50% when the raise is off.
        (HermesPolicy(), 200_000, None, 150_000, Rule.RATIO),
        (HermesPolicy(raise_ratio_small_windows=False), 200_000, None, 100_000, Rule.RATIO),
        (HermesPolicy(raise_ratio_small_windows=False), 100_000, None, 64_000, Rule.FLOOR),
        (HermesPolicy(), 1_000_000, None, 500_000, Rule.RATIO),
        (HermesPolicy(max_output_tokens=32_000), 200_000, None, 126_000, Rule.RATIO),
        # The 64K floor reaches a 64K window: 85% of it.
        (HermesPolicy(), 64_000, None, 54_400, Rule.SMALL_WINDOW),
        (HermesPolicy(max_output_tokens=8_000), 64_000, None, 47_600, Rule.SMALL_WINDOW),
        # Claude Code: window − 33K buffer; 13K when configured; pct only lowers it.
        (ClaudeCodePolicy(), 200_000, 64_000, 167_000, Rule.BUFFER),
        (ClaudeCodePolicy(buffer=13_000), 200_000, None, 187_000, Rule.BUFFER),
        (ClaudeCodePolicy(pct=0.5), 200_000, None, 100_000, Rule.RATIO),
        (ClaudeCodePolicy(pct=0.95), 200_000, None, 167_000, Rule.BUFFER),
        # Codex: the auto-compact limit, 90% of the window by default.
        (CodexPolicy(), 272_000, 128_000, 244_800, Rule.LIMIT),
        (CodexPolicy(limit=200_000), 272_000, None, 200_000, Rule.LIMIT),
        # opencode: window − min(20K, max output).
        (OpencodePolicy(), 200_000, 64_000, 180_000, Rule.BUFFER),
        (OpencodePolicy(), 200_000, 8_192, 191_808, Rule.BUFFER),
        (OpencodePolicy(), 200_000, None, 180_000, Rule.BUFFER),
        # The rules profile: 60%, no floor, no raise.
        (RulesPolicy(), 200_000, None, 120_000, Rule.RATIO),
        (RulesPolicy(), 64_000, None, 38_400, Rule.RATIO),
        # Custom: any ratio / floor / reserve.
        (CustomPolicy(ratio=0.7, reserve=8_000), 200_000, None, 134_400, Rule.RATIO),
        (CustomPolicy(ratio=0.1, floor=30_000), 200_000, None, 30_000, Rule.FLOOR),
    ],
)
def test_policy_thresholds(
    policy: Any, window: int, max_out: int | None, threshold: int, rule: Rule
) -> None:
    got = policy.threshold(window, max_out)
    assert got.threshold_tokens == threshold
    assert got.rule is rule
    assert got.context_window == window
    assert got.policy is policy.name
    assert f"{threshold:,}" in got.explanation


def test_opencode_reservation_is_the_output_reservation_line() -> None:
    t = OpencodePolicy().threshold(128_000, 16_384)
    assert t.output_reservation == 16_384
    assert t.effective_window == 128_000 - 16_384 == t.threshold_tokens


def test_hermes_policy_explains_the_raised_ratio() -> None:
    t = HermesPolicy().threshold(200_000)
    assert t.ratio == 0.75
    assert t.anti_thrash
    assert "raised from 50%" in t.explanation
    assert "raised" not in HermesPolicy().threshold(600_000).explanation


@settings(max_examples=60, deadline=None)
@given(
    window=st.integers(min_value=1_000, max_value=2_000_000),
    ratio=st.floats(min_value=0.05, max_value=1.0),
    floor=st.integers(min_value=0, max_value=200_000),
    raise_=st.booleans(),
)
def test_hermes_policy_is_compute_budget(
    window: int, ratio: float, floor: int, raise_: bool
) -> None:
    policy = HermesPolicy(ratio=ratio, floor=floor, raise_ratio_small_windows=raise_)
    got = policy.threshold(window)
    want = compute_budget(
        window, threshold_ratio=ratio, floor=floor, raise_ratio_small_windows=raise_
    )
    assert got.threshold_tokens == want.threshold_tokens
    assert got.rule.value == want.rule.value
    assert got.budget == want


@pytest.mark.parametrize(
    "policy",
    [
        HermesPolicy(),
        HermesPolicy(ratio=0.6, raise_ratio_small_windows=False, max_output_tokens=16_000),
        ClaudeCodePolicy(buffer=13_000, pct=0.8),
        CodexPolicy(limit=180_000),
        OpencodePolicy(reserve_cap=10_000),
        RulesPolicy(ratio=0.5),
        CustomPolicy(ratio=0.7, floor=1_000, reserve=8_000, anti_thrash=True),
    ],
)
def test_spec_round_trips(policy: Any) -> None:
    assert parse_policy(policy.spec()) == policy


def test_parse_policy_shorthands() -> None:
    assert parse_policy("claude-code:buffer=13k") == ClaudeCodePolicy(buffer=13_000)
    assert parse_policy("rules:ratio=50%") == RulesPolicy(ratio=0.5)
    assert parse_policy(" HERMES : raise = off ") == HermesPolicy(raise_ratio_small_windows=False)
    assert parse_policy("codex:limit=none") == CodexPolicy()
    assert [default_policy(n).name.value for n in POLICY_NAMES] == list(POLICY_NAMES)


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("bogus", "choose one of hermes"),
        ("hermes:colour=red", "unknown setting"),
        ("hermes:ratio", "unknown setting"),
        ("hermes:raise=maybe", "true or false"),
        ("codex:limit=lots", "must be a number"),
    ],
)
def test_parse_policy_errors_say_what_to_do(spec: str, needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        parse_policy(spec)


def test_bad_policy_settings_raise_actionable_errors() -> None:
    with pytest.raises(ValueError, match="buffer"):
        ClaudeCodePolicy(buffer=300_000).threshold(200_000)
    with pytest.raises(ValueError, match="max_output_tokens"):
        HermesPolicy(max_output_tokens=64_000).threshold(64_000)


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("claude-code.jsonl", PolicyName.CLAUDE_CODE),
        ("codex-rollout.jsonl", PolicyName.CODEX),
        ("demo.json", PolicyName.HERMES),
        ("hermes-gateway.jsonl", PolicyName.HERMES),
        ("sharegpt.jsonl", PolicyName.HERMES),
        ("openai-chat.json", PolicyName.HERMES),
        ("opencode.db", PolicyName.OPENCODE),
    ],
)
def test_policy_is_picked_from_the_format(name: str, policy: PolicyName) -> None:
    picked, why = pick_policy(load(SESSIONS / name))
    assert picked.name is policy
    assert why


def test_policy_is_picked_from_a_codex_model() -> None:
    t = Transcript(messages=(), format="openai", model="openai/gpt-5-codex")
    assert pick_policy(t)[0].name is PolicyName.CODEX


def test_window_resolution_order() -> None:
    t = Transcript(messages=(), format="openai", model="claude-sonnet-4-20250514")
    assert resolve_window(t).context_window == 200_000
    assert resolve_window(t).source == "model table"
    assert resolve_window(t).max_output_tokens == 64_000
    assert resolve_window(t, 64_000).context_window == 64_000
    mine = {"claude-sonnet-4": ModelLimits(1_000_000, 64_000)}
    assert resolve_window(t, limits=mine).context_window == 1_000_000
    with_window = Transcript(messages=(), format="codex", model="gpt-5", context_window=272_000)
    assert resolve_window(with_window).source == "transcript"
    unknown = Transcript(messages=(), format="openai", model="mystery-model")
    assert resolve_window(unknown).source == "default"
    with pytest.raises(ValueError, match="positive"):
        resolve_window(t, 0)


# ----------------------------------------------------------------- hermes-like fixture


SYSTEM = "S" * 4000  # 1,000 + 10 tokens
USER = "u" * 400  # 110 tokens a message
ANSWER = "a" * 3960  # 1,000 tokens a message


def hermes_log(path: Path, exchanges: int, **top: Any) -> Path:
    messages: list[dict[str, Any]] = []
    for _ in range(exchanges):
        messages.append({"role": "user", "content": USER})
        messages.append({"role": "assistant", "content": ANSWER})
    doc = {
        "session_id": "s1",
        "model": "anthropic/claude-sonnet-4",
        "system_prompt": SYSTEM,
        "tools": [],
        "messages": messages,
        **top,
    }
    path.write_text(json.dumps(doc))
    return path


def prompt_at(k: int) -> int:
    """The prompt of the k-th assistant turn (0-based): system + k+1 asks + k answers."""
    return rough(SYSTEM) + (k + 1) * rough(USER) + k * rough(ANSWER)


def first_turn_over(threshold: int) -> int:
    k = 0
    while prompt_at(k) < threshold:
        k += 1
    return 2 * k + 1  # message index of that assistant turn


def test_hermes_estimate_series_is_system_plus_messages_so_far(tmp_path: Path) -> None:
    t = load(hermes_log(tmp_path / "s.json", 20))
    series = usage_series(t, count_transcript(t, ROUGH))
    assert [p.message_index for p in series.points] == list(range(1, 40, 2))
    assert all(p.kind is CountKind.ESTIMATED for p in series.points)
    assert [p.tokens for p in series.points] == [prompt_at(k) for k in range(20)]
    assert series.next_tokens == rough(SYSTEM) + 20 * (rough(USER) + rough(ANSWER))


def test_series_kinds_follow_the_counter_until_a_measurement(tmp_path: Path) -> None:
    exact = default_counter(exact=True)
    if exact.kind is not CountKind.EXACT:
        pytest.skip("no tokenizer loads here")
    t = load(hermes_log(tmp_path / "s.json", 6))
    plain = usage_series(t, count_transcript(t, exact))
    assert {p.kind for p in plain.points} == {CountKind.EXACT}
    assert plain.next_kind is CountKind.EXACT
    assert explain(t, counter=exact).current.kind is CountKind.EXACT
    # A measured turn: later counts carry its offset and are estimates from there on.
    measured = replace(t, usage=(Usage(input_tokens=9_000, message_index=5),))
    series = usage_series(measured, count_transcript(measured, exact))
    kinds = {p.message_index: p.kind for p in series.points}
    assert kinds[1] is kinds[3] is CountKind.EXACT
    assert kinds[5] is CountKind.MEASURED
    assert kinds[7] is kinds[9] is kinds[11] is CountKind.ESTIMATED
    assert series.next_kind is CountKind.ESTIMATED


def test_hermes_crosses_the_applied_threshold_at_a_known_turn(tmp_path: Path) -> None:
    # 200K window (model table). Hermes' configured 50% is raised to 75% under 512K,
    # so the default policy fires at 150,000; with the raise off it fires at 50%.
    t = load(hermes_log(tmp_path / "s.json", 140))
    tokens = count_transcript(t, ROUGH)
    applied = explain(t, tokens=tokens)
    assert applied.policy.name is PolicyName.HERMES
    assert applied.window.context_window == 200_000
    assert applied.threshold_tokens == 150_000
    assert applied.threshold.ratio == 0.75
    assert applied.would_fire_at == (first_turn_over(150_000),) == (271,)
    half = explain(t, "hermes:raise=false", tokens=tokens)
    assert half.threshold_tokens == 100_000
    assert half.would_fire_at == (first_turn_over(100_000),) == (181,)
    assert applied.current.would_fire and half.current.would_fire


def test_headroom_predicts_the_turn_replay_finds(tmp_path: Path) -> None:
    short = load(hermes_log(tmp_path / "short.json", 100))
    now = explain(short, tokens=count_transcript(short, ROUGH)).current
    assert now.tokens == rough(SYSTEM) + 100 * (rough(USER) + rough(ANSWER))
    assert not now.would_fire
    assert now.headroom_tokens == 150_000 - now.tokens
    assert now.growth_per_turn == rough(USER) + rough(ANSWER)
    assert now.messages_per_turn == 2
    # The longer session shows where it really fires: the prediction names it.
    assert now.next_fire_message == first_turn_over(150_000)
    assert now.headroom_turns == (first_turn_over(150_000) - 199) // 2


def test_small_window_uses_the_85_percent_rule(tmp_path: Path) -> None:
    t = load(hermes_log(tmp_path / "s.json", 60))
    tokens = count_transcript(t, ROUGH)
    small = explain(t, context_window=64_000, tokens=tokens)
    assert small.window.source == "override"
    assert small.threshold.rule is Rule.SMALL_WINDOW
    assert small.threshold_tokens == 54_400
    assert prompt_at(48) == 54_400  # reaching the threshold exactly fires
    assert small.would_fire_at == (first_turn_over(54_400),) == (97,)
    # The same through a user model table entry for a 64K model.
    t64 = load(hermes_log(tmp_path / "m.json", 60, model="local/tiny-64k"))
    by_table = explain(t64, tokens=tokens, limits={"tiny-64k": ModelLimits(64_000, 8_192)})
    assert by_table.window.source == "model table"
    assert by_table.threshold.rule is Rule.SMALL_WINDOW
    assert by_table.threshold_tokens == 54_400


def test_hermes_log_compaction_has_no_before_but_an_after(tmp_path: Path) -> None:
    # A Hermes log holds the compacted list: head, summary, tail. The turn before the
    # summary is the kept head, not the prompt before compaction.
    path = tmp_path / "c.json"
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": USER},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": "[CONTEXT COMPACTION — REFERENCE ONLY] " + "x" * 400},
        {"role": "user", "content": USER},
        {"role": "assistant", "content": ANSWER},
    ]
    path.write_text(
        json.dumps(
            {"session_id": "c", "model": "hermes-4", "system_prompt": SYSTEM, "messages": messages}
        )
    )
    t = load(path)
    assert [e.message_index for e in t.compactions] == [2]
    result = explain(t, tokens=count_transcript(t, ROUGH))
    (event,) = result.events
    assert event.pre_tokens is None and event.pre_source is TokenSource.UNKNOWN
    assert event.post_source is TokenSource.ESTIMATED
    assert event.post_tokens == sum(rough(m["content"]) for m in messages[:4]) + rough(SYSTEM)
    assert EventFlag.FAR_BELOW_THRESHOLD not in event.flags


# --------------------------------------------------------------------- bundled samples


def test_claude_code_sample_known_compactions() -> None:
    t = load(SESSIONS / "claude-code.jsonl")
    want = MANIFEST["claude-code.jsonl"]
    result = explain(t, tokens=count_transcript(t, ROUGH))
    assert result.policy.name is PolicyName.CLAUDE_CODE
    assert result.threshold_tokens == 200_000 - 33_000
    assert result.threshold.rule is Rule.BUFFER
    series = result.series
    assert series.measured_count == len(series.points) == want["usage_turns"]
    assert series.points[0].tokens == want["prompt_tokens"]["first"]
    assert max(p.tokens for p in series.points) == want["prompt_tokens"]["peak"]
    assert series.points[-1].tokens == want["prompt_tokens"]["last"]
    assert series.resets == tuple(c["index"] for c in want["compactions"])

    auto, manual = result.events
    assert (auto.index, auto.trigger, auto.pre_tokens) == (43, Trigger.AUTO, 167_000)
    assert auto.pre_source is TokenSource.RECORDED
    assert auto.threshold_tokens == 167_000 and auto.rule is Rule.BUFFER
    # After: the first measured turn after the summary (prompt 19,999 in the file).
    first_after = next(u for u in t.usage if u.message_index and u.message_index > 43)
    assert auto.post_tokens == first_after.prompt_tokens
    assert auto.post_source is TokenSource.MEASURED
    assert auto.saved_tokens == 167_000 - first_after.prompt_tokens
    assert auto.still_over is False
    assert auto.flags == (EventFlag.RULES_LOST,)  # a user constraint the summary dropped
    assert (manual.index, manual.trigger, manual.pre_tokens) == (65, Trigger.MANUAL, 98_000)
    assert manual.manual and manual.flags == ()
    # The policy agrees with the agent: it would have fired at the auto compaction.
    assert result.would_fire_at == (43,)
    assert not result.current.would_fire


def test_codex_sample_token_count_and_compaction() -> None:
    t = load(SESSIONS / "codex-rollout.jsonl")
    want = MANIFEST["codex-rollout.jsonl"]
    result = explain(t, tokens=count_transcript(t, ROUGH))
    assert result.policy.name is PolicyName.CODEX
    assert result.window.context_window == want["context_window"]
    assert result.window.source == "transcript"
    assert result.threshold_tokens == int(want["context_window"] * 0.9)
    assert result.threshold.rule is Rule.LIMIT
    assert result.series.measured_count == want["usage_events"]
    (event,) = result.events
    assert event.index == want["compactions"][0]["index"]
    assert event.pre_tokens == want["compactions"][0]["pre_tokens"]
    assert event.trigger is Trigger.UNKNOWN
    first_after = next(p for p in result.series.points if p.message_index > event.index)
    assert event.post_tokens == first_after.tokens and first_after.measured
    # 67,977 is 28% of the 244,800 limit: Codex would not have auto-compacted there.
    assert EventFlag.FAR_BELOW_THRESHOLD in event.flags
    assert result.would_fire_at == ()
    # A limit below the peak makes the replay fire at the first turn reaching it.
    low = explain(t, CodexPolicy(limit=60_000), tokens=count_transcript(t, ROUGH))
    first_over = next(p for p in result.series.points if p.tokens >= 60_000)
    assert low.would_fire_at[0] == first_over.message_index
    assert EventFlag.FAR_BELOW_THRESHOLD not in low.events[0].flags


def test_anthropic_usage_is_measured(tmp_path: Path) -> None:
    doc = {
        "model": "claude-sonnet-4-5",
        "system": "be brief",
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "hello"}],
                "usage": {
                    "input_tokens": 10,
                    "cache_creation_input_tokens": 2_000,
                    "cache_read_input_tokens": 30_000,
                    "output_tokens": 5,
                },
            },
            {"role": "user", "content": "more"},
            {"role": "assistant", "content": [{"type": "text", "text": "sure"}]},
        ],
    }
    path = tmp_path / "a.json"
    path.write_text(json.dumps(doc))
    t = load(path)
    tokens = count_transcript(t, ROUGH)
    series = usage_series(t, tokens)
    first, second = series.points
    assert (first.message_index, first.tokens, first.kind) == (1, 32_010, CountKind.MEASURED)
    # A turn without usage continues the measured curve with the counted messages since.
    assert second.kind is CountKind.ESTIMATED
    assert second.tokens == 32_010 + tokens.range(1, 3)
    assert second.estimate == tokens.system_prompt + tokens.range(0, 3)


# ------------------------------------------------------------- claude code fixtures


def _line(uuid: str, parent: str | None, **body: Any) -> dict[str, Any]:
    return {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": "/w",
        "sessionId": "loop-session",
        "version": "2.0.14",
        "uuid": uuid,
        "timestamp": "2025-09-18T13:00:00.000Z",
        **body,
    }


def claude_session(path: Path, plan: list[tuple[str, int]]) -> Path:
    """A Claude Code JSONL from a plan: ("turn", prompt) or ("auto"/"manual", preTokens).

    Each turn is a user ask and an assistant answer measuring ``prompt``; a compaction
    is a compact_boundary line followed by its isCompactSummary user line.
    """
    lines: list[dict[str, Any]] = []
    parent: str | None = None
    for n, (kind, value) in enumerate(plan):
        if kind == "turn":
            u = f"u{n}"
            lines.append(
                _line(u, parent, type="user", message={"role": "user", "content": f"step {n}"})
            )
            a = f"a{n}"
            lines.append(
                _line(
                    a,
                    u,
                    type="assistant",
                    requestId=f"req_{n}",
                    message={
                        "id": f"msg_{n}",
                        "type": "message",
                        "role": "assistant",
                        "model": "claude-sonnet-4-5-20250929",
                        "content": [{"type": "text", "text": f"done {n}"}],
                        "stop_reason": "end_turn",
                        "usage": {
                            "input_tokens": 3,
                            "cache_creation_input_tokens": 1_000,
                            "cache_read_input_tokens": value - 1_003,
                            "output_tokens": 50,
                        },
                    },
                )
            )
            parent = a
        else:
            b = f"b{n}"
            lines.append(
                _line(
                    b,
                    None,
                    logicalParentUuid=parent,
                    type="system",
                    subtype="compact_boundary",
                    content="Conversation compacted",
                    isMeta=False,
                    level="info",
                    compactMetadata={"trigger": kind, "preTokens": value},
                )
            )
            s = f"s{n}"
            lines.append(
                _line(
                    s,
                    b,
                    type="user",
                    isCompactSummary=True,
                    message={
                        "role": "user",
                        "content": f"This session is being continued. Summary {n}.",
                    },
                )
            )
            parent = s
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    return path


def test_looping_compactions_are_flagged(tmp_path: Path) -> None:
    plan = [
        ("turn", 150_000),
        ("turn", 166_000),
        ("auto", 168_000),
        ("turn", 166_500),  # saved 0.9%: still just under the 167K threshold
        ("auto", 168_500),
        ("turn", 168_200),  # saved 0.2% and still over: it fires again at once
    ]
    t = load(claude_session(tmp_path / "loop.jsonl", plan))
    result = explain(t, tokens=count_transcript(t, ROUGH))
    assert result.threshold_tokens == 167_000
    first, second = result.events
    assert (first.pre_tokens, first.post_tokens) == (168_000, 166_500)
    assert first.flags == (EventFlag.LOW_SAVINGS,)
    assert first.still_over is False
    assert (second.pre_tokens, second.post_tokens) == (168_500, 168_200)
    assert second.still_over is True
    assert second.flags == (
        EventFlag.INEFFECTIVE,
        EventFlag.LOW_SAVINGS,
        EventFlag.CONSECUTIVE_LOW_SAVINGS,
    )
    reasons = " ".join(second.reasons())
    assert "thrash" in reasons and "loop" in reasons
    # The replay sees both compactions and the turn that would fire a third time.
    assert result.would_fire_at == (first.index, second.index, second.post_index)
    assert result.current.would_fire


def test_hermes_anti_thrash_holds_the_third_loop_back(tmp_path: Path) -> None:
    plan = [
        ("turn", 160_000),
        ("auto", 168_000),
        ("turn", 166_500),  # over Hermes' 150K: strike one
        ("auto", 168_500),
        ("turn", 168_200),  # strike two: automatic compaction is blocked
        ("auto", 169_000),
        ("turn", 140_000),
    ]
    t = load(claude_session(tmp_path / "loop3.jsonl", plan))
    tokens = count_transcript(t, ROUGH)
    hermes = explain(t, "hermes", tokens=tokens)
    assert hermes.threshold_tokens == 150_000
    assert [e.anti_thrash for e in hermes.events] == [None, None, "blocked"]
    assert all(EventFlag.INEFFECTIVE in e.flags for e in hermes.events[:2])
    assert "anti-thrash" in " ".join(hermes.events[2].reasons())
    # A reading below the threshold lifted the block: nothing holds the current state.
    assert hermes.current.anti_thrash is None
    # Claude Code has no anti-thrash rule.
    assert all(e.anti_thrash is None for e in explain(t, tokens=tokens).events)


def test_far_below_flags_auto_but_not_manual(tmp_path: Path) -> None:
    plan = [
        ("turn", 20_000),
        ("auto", 21_000),
        ("turn", 5_000),
        ("manual", 22_000),
        ("turn", 6_000),
    ]
    t = load(claude_session(tmp_path / "early.jsonl", plan))
    auto, manual = explain(t, tokens=count_transcript(t, ROUGH)).events
    assert EventFlag.FAR_BELOW_THRESHOLD in auto.flags  # 21K of 167K: an "8–16%" trigger
    assert EventFlag.FAR_BELOW_THRESHOLD not in manual.flags
    assert "13%" in auto.reasons()[0]  # 21,000 / 167,000


# ----------------------------------------------------------------- tool schemas


def _schemas(count: int) -> tuple[dict[str, Any], ...]:
    return tuple(
        {
            "name": f"tool_{i}",
            "description": "Does a thing. " * 60,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for i in range(count)
    )


def _schema_transcript(tools: tuple[dict[str, Any], ...], deficit: int | None) -> Transcript:
    """Claude-Code-shaped: 10 turns, an auto compaction at 20, 3 more turns.

    Measured prompt = the counted estimate − ``deficit`` (None: the tool tokens × 0.9).
    """
    msgs: list[Message] = []
    for i in range(13):
        msgs.append(Message(Role.USER, (TextPart("ask " * 300),)))
        if i == 10:
            msgs[-1] = Message(
                Role.USER, (TextPart("summary " * 100),), meta=MessageMeta(is_summary=True)
            )
        msgs.append(Message(Role.ASSISTANT, (TextPart("answer " * 500),)))
    system = "rules " * 6_000  # ~9,000 tokens: every estimate stays above the gaps
    base = Transcript(messages=tuple(msgs), format="claude-code", tools=tools, system_prompt=system)
    tokens = count_transcript(base, ROUGH)
    gap = int(tokens.tools * 0.9) if deficit is None else deficit
    usage = []
    for i in range(1, len(msgs), 2):
        start = 20 if i > 20 else 0
        estimate = tokens.system_prompt + tokens.tools + tokens.range(start, i)
        usage.append(Usage(input_tokens=estimate - gap, message_index=i))
    event = CompactionEvent(message_index=20, trigger=Trigger.AUTO, summary_index=20)
    return Transcript(
        messages=tuple(msgs),
        format="claude-code",
        system_prompt=system,
        tools=tools,
        usage=tuple(usage),
        compactions=(event,),
        context_window=60_000,
    )


def test_estimate_inflated_by_tool_schemas_is_flagged() -> None:
    t = _schema_transcript(_schemas(40), None)
    tokens = count_transcript(t, ROUGH)
    assert tokens.tools > 9_000
    result = explain(t, "claude-code:buffer=5k", tokens=tokens)
    assert all(p.measured for p in result.series.points)
    (event,) = result.events
    assert EventFlag.ESTIMATE_INFLATED_BY_TOOL_SCHEMAS in event.flags
    assert event.inflation is not None
    assert event.inflation.excess == int(tokens.tools * 0.9)
    assert event.pre_source is TokenSource.MEASURED
    assert EventFlag.ESTIMATE_INFLATED_BY_TOOL_SCHEMAS in result.current.flags
    assert "tool schemas" in " ".join(event.reasons())


@pytest.mark.parametrize(
    ("tools", "deficit"),
    [
        ((), 9_000),  # the same gap with no tool schemas: not explained by them
        (_schemas(40), 300),  # schemas present but the gap is within the margin
    ],
)
def test_estimate_gap_not_from_schemas_is_not_flagged(
    tools: tuple[dict[str, Any], ...], deficit: int
) -> None:
    t = _schema_transcript(tools, deficit)
    result = explain(t, "claude-code:buffer=5k", tokens=count_transcript(t, ROUGH))
    assert all(p.measured for p in result.series.points)
    assert EventFlag.ESTIMATE_INFLATED_BY_TOOL_SCHEMAS not in result.events[0].flags
    assert not result.current.flags


# ----------------------------------------------------------------- output, speed


def test_to_dict_has_the_documented_keys() -> None:
    t = load(SESSIONS / "claude-code.jsonl")
    d = explain(t, tokens=count_transcript(t, ROUGH)).to_dict()
    assert {"policy", "threshold_tokens", "window", "events", "current"} <= set(d)
    assert d["policy"] == "claude-code" and d["threshold_tokens"] == 167_000
    for e in d["events"]:
        assert {
            "index",
            "trigger",
            "pre_tokens",
            "threshold_tokens",
            "rule",
            "post_tokens",
            "flags",
        } <= set(e)
    assert {"tokens", "would_fire", "headroom_tokens"} <= set(d["current"])
    assert d["current"]["headroom_tokens"] == 167_000 - d["current"]["tokens"]
    json.dumps(d)  # plain JSON values only


def test_switching_policy_reuses_the_series(tmp_path: Path) -> None:
    t = load(hermes_log(tmp_path / "s.json", 140))
    first = explain(t, tokens=count_transcript(t, ROUGH))
    other = explain(t, RulesPolicy(), series=first.series)
    assert other.series is first.series
    assert other.threshold_tokens == 120_000
    assert other.would_fire_at == replay(first.series, 120_000) == (first_turn_over(120_000),)


def test_series_rejects_counts_of_another_transcript(tmp_path: Path) -> None:
    a = load(hermes_log(tmp_path / "a.json", 3))
    b = load(hermes_log(tmp_path / "b.json", 4))
    with pytest.raises(ValueError, match="count_transcript"):
        usage_series(a, count_transcript(b, ROUGH))


@pytest.mark.perf
def test_explain_100k_messages_is_fast() -> None:
    msgs: list[Message] = []
    events: list[CompactionEvent] = []
    usage: list[Usage] = []
    ask = Message(Role.USER, (TextPart("next"),))
    answer = Message(Role.ASSISTANT, (TextPart("ok"),))
    summary = Message(Role.USER, (TextPart("summary"),), meta=MessageMeta(is_summary=True))
    for i in range(50_000):
        if i and i % 10_000 == 0:
            events.append(CompactionEvent(len(msgs), Trigger.AUTO, pre_tokens=170_000))
            msgs.append(summary)
        else:
            msgs.append(ask)
        if i % 3 == 0:
            usage.append(Usage(input_tokens=1_000 + i, message_index=len(msgs)))
        msgs.append(answer)
    t = Transcript(
        messages=tuple(msgs),
        format="claude-code",
        model="claude-sonnet-4",
        compactions=tuple(events),
        usage=tuple(usage),
    )
    tokens = count_transcript(t, ROUGH)
    start = time.perf_counter()
    result = explain(t, tokens=tokens)
    elapsed = time.perf_counter() - start
    assert len(t) == 100_000
    assert len(result.events) == 4 and len(result.series.points) == 50_000
    assert elapsed < 1.0, f"explain took {elapsed:.2f} s on 100k messages"


def test_estimates_carry_what_counting_missed_across_a_compaction() -> None:
    # Claude Code does not record its system prompt or tools: the first measured turn
    # shows how much counting misses, and the unmeasured turn after the compaction
    # (a reset: the summary starts the live context) adds the same amount.
    msgs = (
        Message(Role.USER, (TextPart("ask " * 100),)),
        Message(Role.ASSISTANT, (TextPart("done " * 100),)),
        Message(Role.USER, (TextPart("summary " * 50),), meta=MessageMeta(is_summary=True)),
        Message(Role.ASSISTANT, (TextPart("next " * 100),)),
    )
    t = Transcript(
        messages=msgs,
        format="claude-code",
        usage=(Usage(input_tokens=20_000, message_index=1),),
        compactions=(CompactionEvent(2, Trigger.AUTO, pre_tokens=21_000, summary_index=2),),
    )
    tokens = count_transcript(t, ROUGH)
    series = usage_series(t, tokens)
    first, after = series.points
    assert first.measured and first.estimate == tokens.range(0, 1)
    missed = 20_000 - tokens.range(0, 1)
    assert after.kind is CountKind.ESTIMATED
    assert after.estimate == tokens.range(2, 3)
    assert after.tokens == tokens.range(2, 3) + missed
    assert series.next_tokens == after.tokens + tokens.per_message[3]


def test_agent_policy_that_does_not_fit_the_window_falls_back_to_hermes() -> None:
    t = load(SESSIONS / "claude-code.jsonl")
    tokens = count_transcript(t, ROUGH)
    small = explain(t, tokens=tokens, context_window=32_000)  # < the 33K buffer
    assert small.policy.name is PolicyName.HERMES
    assert "claude-code does not fit" in small.policy_source
    assert small.threshold.rule is Rule.SMALL_WINDOW
    with pytest.raises(ValueError, match="buffer"):
        explain(t, "claude-code", tokens=tokens, context_window=32_000)


_ROLES = st.sampled_from([Role.USER, Role.ASSISTANT, Role.TOOL, Role.SYSTEM])


@settings(max_examples=60, deadline=None)
@given(
    roles=st.lists(_ROLES, min_size=0, max_size=40),
    sizes=st.lists(st.integers(min_value=0, max_value=400), min_size=40, max_size=40),
    usage_at=st.lists(st.integers(min_value=-2, max_value=45), max_size=12),
    events_at=st.lists(st.integers(min_value=0, max_value=45), max_size=4),
    fmt=st.sampled_from(["claude-code", "codex", "hermes", "openai"]),
    policy=st.sampled_from(POLICY_NAMES),
)
def test_explain_invariants(
    roles: list[Role],
    sizes: list[int],
    usage_at: list[int],
    events_at: list[int],
    fmt: str,
    policy: str,
) -> None:
    msgs = tuple(Message(r, (TextPart("x" * sizes[i]),)) for i, r in enumerate(roles))
    n = len(msgs)
    usage = tuple(
        Usage(input_tokens=1_000 + 37 * k, message_index=i) for k, i in enumerate(usage_at)
    )
    events = tuple(
        CompactionEvent(min(i, n), Trigger.AUTO if i % 2 else Trigger.MANUAL) for i in events_at
    )
    t = Transcript(messages=msgs, format=fmt, usage=usage, compactions=events)
    result = explain(t, policy, tokens=count_transcript(t, ROUGH), context_window=100_000)
    indices = [p.message_index for p in result.series.points]
    assert indices == sorted(set(indices))
    valid = {u.message_index: u.prompt_tokens for u in usage if u.message_index in range(n)}
    for p in result.series.points:
        assert (p.kind is CountKind.MEASURED) == (p.message_index in valid)
        if p.measured:
            assert p.tokens == valid[p.message_index]
        assert msgs[p.message_index].role is Role.ASSISTANT or p.measured
        assert p.tokens >= 0
    assert len(result.events) == len(events)
    assert set(result.would_fire_at) <= set(indices) | {e.message_index for e in events}
    cur = result.current
    assert cur.headroom_tokens == result.threshold_tokens - cur.tokens
    assert cur.would_fire == (cur.tokens >= result.threshold_tokens)
    if cur.next_fire_message is not None:
        assert cur.next_fire_message >= n
    json.dumps(result.to_dict())


@pytest.mark.parametrize(
    ("policy", "ratio"),
    [
        (ClaudeCodePolicy(), None),
        (ClaudeCodePolicy(pct=0.5), 0.5),
        (CodexPolicy(), 0.9),
        (CodexPolicy(limit=200_000), None),
    ],
)
def test_policies_reserving_nothing_count_the_whole_window(
    policy: Any, ratio: float | None
) -> None:
    got = policy.threshold(272_000)
    assert got.output_reservation == 0 and got.effective_window == 272_000
    assert got.ratio == ratio
