"""Context breakdown: buckets of numbers, static cost apart from conversation, measured wins."""

from __future__ import annotations

import dataclasses
import json

import pytest

from tinyjuice.breakdown import (
    BUCKET_KEYS,
    CONVERSATION_KEYS,
    STATIC_KEYS,
    ContextBreakdown,
    ContextBucket,
    compute_breakdown,
    is_mcp_tool,
)
from tinyjuice.model import (
    MediaPart,
    Message,
    MessageMeta,
    Role,
    TextPart,
    ThinkingPart,
    ToolCall,
    Transcript,
    Usage,
)
from tinyjuice.tokens import (
    IMAGE_TOKENS,
    CountKind,
    RoughCounter,
    count_transcript,
    default_counter,
)

SECRET = "TOP-SECRET-PROMPT-CONTENT-93817"

SYSTEM = f"""You are a coding agent. {SECRET}

# Tone
Be brief.

# AGENTS.md
Use ruff. Run pytest before committing.
## Testing
Tests live in tests/.

## Skills
<available_skills>
pdf: read PDF files
xlsx: edit spreadsheets
</available_skills>

## Subagent definitions
- reviewer: reviews diffs
- planner: writes plans

## MCP Server Instructions
The github server exposes search.

══════ MEMORY (your personal notes) ══════
User prefers tabs over spaces.
"""

TOOLS = (
    {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object"}}},
    {"name": "mcp__github__search", "input_schema": {"type": "object", "properties": {}}},
    {"name": "lookup", "mcp_server": "docs", "input_schema": {"type": "object"}},
)


def make(messages: list[Message], **kw: object) -> Transcript:
    return Transcript(
        tuple(messages),
        "anthropic",
        system_prompt=SYSTEM,
        tools=TOOLS,
        **kw,  # type: ignore[arg-type]
    )


def conversation() -> list[Message]:
    return [
        Message(
            Role.USER,
            (TextPart("<user_instructions>\nfollow the AGENTS.md\n</user_instructions>"),),
            meta=MessageMeta(is_injected=True, injected_kind="agents_md"),
        ),
        Message(Role.USER, (TextPart(f"fix the bug {SECRET}"), MediaPart("image/png", 5000))),
        Message(
            Role.ASSISTANT,
            (ThinkingPart("let me think about the bug " * 20), TextPart("Reading.")),
            tool_calls=(ToolCall("c1", "read_file", '{"path": "a.py"}'),),
        ),
        Message(Role.TOOL, (TextPart("def f():\n    pass\n" * 30),), tool_call_id="c1"),
        Message(
            Role.USER,
            (TextPart("[CONTEXT COMPACTION — REFERENCE ONLY]\nsummary body"),),
            meta=MessageMeta(is_summary=True),
        ),
        Message(
            Role.USER,
            (
                TextPart(
                    "<system-reminder>\nContents of /repo/CLAUDE.md (project instructions):\n"
                    "# Rules\nno tabs\n</system-reminder>\nremember the todo list"
                ),
            ),
            meta=MessageMeta(is_injected=True, injected_kind="system_reminder"),
        ),
    ]


def test_context_breakdown_never_requires_raw_text() -> None:
    transcript = make(conversation())
    counter = RoughCounter()
    bd = compute_breakdown(transcript, count_transcript(transcript, counter), counter=counter)
    # The values hold numbers and fixed labels only.
    for f in dataclasses.fields(ContextBreakdown):
        assert f.type in ("tuple[ContextBucket, ...]", "int", "int | None", "str"), f
    for f in dataclasses.fields(ContextBucket):
        assert f.name in ("key", "label", "tokens", "kind", "group")
    payload = bd.to_dict()
    dumped = json.dumps(payload)
    assert SECRET not in dumped and "tabs" not in dumped and "bug" not in dumped
    labels = {c["label"] for c in payload["categories"]}
    allowed = set(BUCKET_KEYS) | labels | {"static", "conversation", "rough"}
    allowed |= {k.value for k in CountKind}
    strings: list[str] = []

    def walk(v: object) -> None:
        if isinstance(v, str):
            strings.append(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)

    walk(payload)
    assert set(strings) <= allowed
    assert [c["key"] for c in payload["categories"]] == list(BUCKET_KEYS)


def test_buckets_classify_and_add_up() -> None:
    transcript = make(conversation())
    counter = RoughCounter()
    tokens = count_transcript(transcript, counter)
    bd = compute_breakdown(transcript, tokens, counter=counter)
    by = {b.key: b.tokens for b in bd.categories}
    assert bd.estimated_total_tokens == tokens.total == sum(by.values())
    for key in ("system_prompt", "rules", "skills", "subagents", "mcp_tools", "memory"):
        assert by[key] > 0, key
    # With no messages, the system prompt and the schemas split exactly into static buckets.
    bare = make([])
    bare_tokens = count_transcript(bare, counter)
    bare_bd = compute_breakdown(bare, bare_tokens, counter=counter)
    sys_keys = ("system_prompt", "rules", "skills", "subagents", "memory")
    tool_keys = ("tool_definitions", "mcp_tools")
    mcp_schema_tokens = sum(
        counter.count(json.dumps(t, sort_keys=True, separators=(",", ":"))) for t in TOOLS[1:]
    )
    assert bare_bd.bucket("mcp_tools").tokens >= mcp_schema_tokens
    assert sum(bare_bd.bucket(k).tokens for k in (*sys_keys, *tool_keys)) == bare_tokens.total
    assert bare_bd.bucket("system_prompt").tokens < bare_tokens.system_prompt // 2
    assert bare_bd.conversation_tokens == 0
    # Two MCP tools (name prefix and marker key) and one plain tool.
    assert is_mcp_tool(TOOLS[1]) and is_mcp_tool(TOOLS[2]) and not is_mcp_tool(TOOLS[0])
    assert by["tool_definitions"] > 0
    assert by["tool_definitions"] + by["mcp_tools"] > 0
    assert by["media"] == IMAGE_TOKENS
    assert bd.bucket("media").kind is CountKind.ESTIMATED
    assert by["reasoning"] >= counter.count("let me think about the bug " * 20)
    assert by["summaries"] == tokens.per_message[4]
    assert by["tool_output"] == tokens.per_message[3]
    assert by["injected"] > 0  # "remember the todo list" and the reminder wrapper
    assert bd.bucket("user").tokens == tokens.per_message[1] - IMAGE_TOKENS


def test_report_separates_conversation_from_static_schema_cost() -> None:
    counter = RoughCounter()
    small = make(conversation()[:2])
    large = make(conversation() * 5)
    bd_small = compute_breakdown(small, count_transcript(small, counter), counter=counter)
    tokens_large = count_transcript(large, counter)
    bd_large = compute_breakdown(large, tokens_large, counter=counter)
    # The system prompt and tool schemas cost the same however long the conversation is.
    static_small = {k: bd_small.bucket(k).tokens for k in STATIC_KEYS if k != "rules"}
    static_large = {k: bd_large.bucket(k).tokens for k in STATIC_KEYS if k != "rules"}
    assert static_small == static_large
    # Tool schemas are static, never conversation.
    assert bd_large.bucket("tool_definitions").group == "static"
    assert bd_large.bucket("mcp_tools").group == "static"
    assert all(bd_large.bucket(k).group == "conversation" for k in CONVERSATION_KEYS)
    assert bd_large.static_tokens + bd_large.conversation_tokens == tokens_large.total
    assert bd_large.conversation_tokens > bd_small.conversation_tokens
    assert bd_large.static_tokens >= tokens_large.system_prompt + tokens_large.tools


def test_in_band_system_messages_are_static() -> None:
    messages = [
        Message(Role.SYSTEM, (TextPart("Base prompt.\n## Memory\nlikes short answers"),)),
        Message(Role.USER, (TextPart("hi"),)),
        Message(Role.SYSTEM, (TextPart("mid-conversation notice"),)),
    ]
    t = Transcript(tuple(messages), "openai")
    counter = RoughCounter()
    tokens = count_transcript(t, counter)
    bd = compute_breakdown(t, tokens, counter=counter)
    assert bd.bucket("memory").tokens > 0
    assert bd.bucket("system_prompt").tokens + bd.bucket("memory").tokens == tokens.per_message[0]
    assert bd.bucket("injected").tokens == tokens.per_message[2]
    assert bd.bucket("user").tokens == tokens.per_message[1]


def test_measured_usage_overrides_estimate() -> None:
    msgs = conversation()
    t = make(
        msgs,
        usage=(
            Usage(input_tokens=10, cache_read_tokens=40_000, message_index=2),
            Usage(
                input_tokens=500,
                cache_read_tokens=50_000,
                cache_write_tokens=1_000,
                message_index=5,
                context_window=200_000,
            ),
        ),
    )
    counter = RoughCounter()
    tokens = count_transcript(t, counter)
    bd = compute_breakdown(t, tokens, counter=counter)
    assert bd.measured_prompt_tokens == 51_500
    assert bd.total_tokens == 51_500 and bd.total_kind is CountKind.MEASURED
    assert bd.estimated_total_tokens == tokens.total != 51_500
    assert bd.measured_at_message == 5
    assert bd.context_max_tokens == 200_000
    assert bd.used_ratio == pytest.approx(51_500 / 200_000)
    # An explicit measurement wins over the recorded one; no usage means the estimate.
    assert compute_breakdown(t, tokens, counter=counter, measured_prompt_tokens=7).total_tokens == 7
    plain = make(msgs)
    bd_plain = compute_breakdown(plain, count_transcript(plain, counter), counter=counter)
    assert bd_plain.measured_prompt_tokens is None
    assert bd_plain.total_tokens == bd_plain.estimated_total_tokens
    assert bd_plain.total_kind is CountKind.ESTIMATED
    assert bd.to_dict()["total_kind"] == "measured"
    # The counted figure beside a measurement keeps its own kind (rough: estimated).
    assert bd.counted_kind is CountKind.ESTIMATED
    assert bd.to_dict()["counted_kind"] == "estimated"


def test_counted_kind_is_exact_with_an_exact_counter_even_beside_a_measurement() -> None:
    exact = default_counter(exact=True)
    if exact.kind is not CountKind.EXACT:
        pytest.skip("no exact tokenizer on this machine")
    text_only = [m for m in conversation() if not m.media]  # images are estimated
    t = make(
        text_only,
        usage=(Usage(input_tokens=900, message_index=1, context_window=200_000),),
    )
    bd = compute_breakdown(t, count_transcript(t, exact), counter=exact)
    assert bd.total_kind is CountKind.MEASURED
    assert bd.counted_kind is CountKind.EXACT


def test_mismatched_tokens_are_rejected() -> None:
    t = make(conversation())
    other = make(conversation()[:2])
    with pytest.raises(ValueError, match="count_transcript"):
        compute_breakdown(t, count_transcript(other, RoughCounter()), counter=RoughCounter())


# ------------------------------------------------------------ tool schemas in the prompt


def _sharegpt_sample(session: str | None = None) -> Transcript:
    from pathlib import Path

    from tinyjuice.formats import load

    path = Path(__file__).resolve().parents[2] / "sessions" / "sharegpt.jsonl"
    return load(path, session=session)


@pytest.mark.parametrize("exact", [False, True])
def test_sharegpt_tool_schemas_are_counted_once_as_tool_definitions(exact: bool) -> None:
    # The system turn holds the <tools> JSON that the top-level tools field repeats:
    # the prompt carries it once, and the bar shows it as tool definitions, not twice.
    from tinyjuice.stats import compute_stats

    counter = default_counter(exact=exact)
    t = _sharegpt_sample("3")
    tokens = count_transcript(t, counter)
    assert tokens.tools == 0
    assert tokens.total == tokens.messages_total
    bd = compute_breakdown(t, tokens, counter=counter)
    system_turn = tokens.per_message[0]
    block = t.messages[0].text[t.messages[0].text.index("\n<tools>") + 1 :]
    assert bd.bucket("tool_definitions").tokens == counter.count(block)
    assert bd.bucket("system_prompt").tokens == system_turn - counter.count(block)
    assert bd.estimated_total_tokens == tokens.total
    assert bd.bucket("system_prompt").tokens < bd.bucket("tool_definitions").tokens
    # tjui inspect's "By kind" table agrees with the bar, and still adds up.
    stats = compute_stats(t, counter, tokens=tokens)
    assert stats.tokens_tools == bd.bucket("tool_definitions").tokens
    assert stats.tokens_by_kind["system"] == bd.bucket("system_prompt").tokens
    assert stats.tokens_tools + sum(stats.tokens_by_kind.values()) == stats.tokens_total


def test_tools_block_in_a_system_prompt_is_tool_definitions() -> None:
    counter = RoughCounter()
    block = '<tools>\n[{"name": "terminal", "parameters": {"type": "object"}}]\n</tools>'
    prompt = "You are an agent. Use <tools></tools> wisely.\n" + block + "\nBe brief."
    t = Transcript(
        messages=(Message(Role.USER, (TextPart("hi"),)),), format="hermes", system_prompt=prompt
    )
    tokens = count_transcript(t, counter)
    bd = compute_breakdown(t, tokens, counter=counter)
    assert bd.bucket("tool_definitions").tokens == counter.count(block)
    assert bd.bucket("system_prompt").tokens == tokens.system_prompt - counter.count(block)
    assert bd.estimated_total_tokens == tokens.total
