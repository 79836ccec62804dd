"""Codex CLI rollout reader: items, parallel calls, usage, duplicates, full history with
compaction summaries in place, rollback."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tinyjuice.formats import LoadError, claude_code, codex, detect, load
from tinyjuice.formats._base import LoadOptions, Source, parse_json, parse_jsonl
from tinyjuice.model import Role, ThinkingPart, Transcript, Trigger

SESSION = "0199a213-81c0-7800-8aa1-bbab2a035a53"
AGENTS = "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>\nRun pytest before committing.\n</INSTRUCTIONS>"
ENV = "<environment_context>\n  <cwd>/repo</cwd>\n  <shell>bash</shell>\n</environment_context>"
PERMS = "<permissions instructions>Sandbox: workspace-write.</permissions instructions>"
PATCH = "*** Begin Patch\n*** Update File: t.py\n@@\n-    time.sleep(1)\n*** End Patch"
SUMMARY = "Fixed t.py by removing the sleep; the suite is next."
PREFIX = "Another language model started to solve this problem and produced a summary of its thinking process:"


def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": "2025-10-02T09:15:00.000Z", "type": kind, "payload": payload}


def item(payload: dict[str, Any]) -> dict[str, Any]:
    return line("response_item", payload)


def event(kind: str, **payload: Any) -> dict[str, Any]:
    return line("event_msg", {"type": kind, **payload})


def msg(role: str, text: str) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def call(call_id: str, command: str) -> dict[str, Any]:
    args = json.dumps({"command": ["bash", "-lc", command], "workdir": "/repo"})
    return {"type": "function_call", "name": "shell", "arguments": args, "call_id": call_id}


def tokens(inp: int, cached: int, out: int, reasoning: int, total: int) -> dict[str, Any]:
    last = {
        "input_tokens": inp,
        "cached_input_tokens": cached,
        "output_tokens": out,
        "reasoning_output_tokens": reasoning,
        "total_tokens": inp + out,
    }
    running = {**last, "total_tokens": total}
    info = {"total_token_usage": running, "last_token_usage": last, "model_context_window": 272000}
    return event("token_count", info=info, rate_limits={"primary": None})


def head() -> list[dict[str, Any]]:
    """A first turn: injected context, parallel calls, custom/local-shell/web-search calls."""
    return [
        line(
            "session_meta",
            {
                "id": SESSION,
                "timestamp": "2025-10-02T09:15:00.000Z",
                "cwd": "/repo",
                "originator": "codex_cli_rs",
                "cli_version": "0.44.0",
                "instructions": "You are Codex, a coding agent.",
                "model_provider": "openai",
                "git": {"commit_hash": "abc123", "branch": "main", "repository_url": "git@x:y.git"},
            },
        ),
        item(msg("developer", PERMS)),
        item(msg("user", AGENTS)),
        item(msg("user", ENV)),
        line(
            "turn_context",
            {"cwd": "/repo", "model": "gpt-5-codex", "effort": "medium", "summary": "auto"},
        ),
        event("task_started", model_context_window=272000),
        event("user_message", message="fix the failing test", images=[]),
        item(msg("user", "fix the failing test")),
        event("token_count", info=None, rate_limits={"primary": None}),
        item(
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "**Looking at the tests**"}],
                "content": None,
                "encrypted_content": "gAAAAB-enc-1",
            }
        ),
        item(call("call_1", "ls")),
        item(call("call_2", "cat t.py")),
        tokens(12000, 8000, 300, 200, 12300),
        item(
            {
                "type": "function_call_output",
                "call_id": "call_1",
                "output": '{"output":"t.py\\n","metadata":{"exit_code":0}}',
            }
        ),
        item(
            {
                "type": "function_call_output",
                "call_id": "call_2",
                "output": {"content": "cat: boom", "success": False},
            }
        ),
        item({"type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-enc-2"}),
        item(
            {
                "type": "custom_tool_call",
                "status": "completed",
                "call_id": "call_3",
                "name": "apply_patch",
                "input": PATCH,
            }
        ),
        tokens(13000, 9000, 150, 50, 25450),
        tokens(13000, 9000, 150, 50, 25450),  # the same measurement again
        item(
            {
                "type": "custom_tool_call_output",
                "call_id": "call_3",
                "output": "Success. Updated t.py",
            }
        ),
        item(
            {
                "type": "local_shell_call",
                "call_id": "call_4",
                "status": "completed",
                "action": {"type": "exec", "command": ["pytest", "-q"], "timeout_ms": 60000},
            }
        ),
        item({"type": "function_call_output", "call_id": "call_4", "output": "1 passed"}),
        item(
            {
                "type": "web_search_call",
                "status": "completed",
                "action": {"type": "search", "query": "pytest flaky"},
            }
        ),
        item(msg("assistant", "Fixed the test.")),
        event("agent_message", message="Fixed the test."),
        tokens(14000, 12000, 80, 0, 39530),
        event("exec_command_end", call_id="call_4", exit_code=0),
        # An ask recorded only as an event (no response item carries it).
        event("user_message", message="thanks, now run the suite", images=[]),
    ]


def compaction_tail() -> list[dict[str, Any]]:
    replacement = [
        msg("developer", PERMS),
        msg("user", AGENTS),
        msg("user", ENV),
        msg("user", "fix the failing test"),
        msg("user", "thanks, now run the suite"),
        msg("user", f"{PREFIX}\n{SUMMARY}"),
    ]
    return [
        line("compacted", {"message": SUMMARY, "replacement_history": replacement}),
        event("context_compacted"),
        item(msg("user", "run it again")),
        item(msg("assistant", "All green.")),
        tokens(9000, 0, 20, 0, 48550),
    ]


def to_jsonl(lines: list[dict[str, Any]]) -> bytes:
    return ("\n".join(json.dumps(ln) for ln in lines) + "\n").encode()


def load_lines(tmp_path: Path, lines: list[dict[str, Any]], **kw: Any) -> Transcript:
    p = tmp_path / f"rollout-2025-10-02T09-15-00-{SESSION}.jsonl"
    p.write_bytes(to_jsonl(lines))
    return load(p, **kw)


@pytest.fixture
def first_turn(tmp_path: Path) -> Transcript:
    return load_lines(tmp_path, head())


@pytest.fixture
def compacted(tmp_path: Path) -> Transcript:
    return load_lines(tmp_path, head() + compaction_tail())


def test_detected_as_codex(tmp_path: Path) -> None:
    p = tmp_path / "rollout.jsonl"
    p.write_bytes(to_jsonl(head()))
    assert detect(p) == "codex"
    assert load(p).format == "codex"


def test_session_meta_and_turn_context(first_turn: Transcript) -> None:
    t = first_turn
    assert t.session_id == SESSION
    assert t.system_prompt == "You are Codex, a coding agent."
    assert t.model == "gpt-5-codex"
    assert t.context_window == 272000
    assert t.extra["cwd"] == "/repo"
    assert t.extra["cli_version"] == "0.44.0"
    assert t.extra["model_provider"] == "openai"
    assert t.extra["git"]["branch"] == "main"


def test_injected_context(first_turn: Transcript) -> None:
    dev, agents, env, ask = first_turn.messages[:4]
    assert dev.role is Role.DEVELOPER and dev.text == PERMS
    assert (agents.meta.is_injected, agents.meta.injected_kind) == (True, "agents_md")
    assert (env.meta.is_injected, env.meta.injected_kind) == (True, "environment")
    assert ask.is_real_user and ask.text == "fix the failing test"


def test_parallel_calls_share_one_assistant_message(first_turn: Transcript) -> None:
    m = first_turn.messages
    turn = m[4]
    assert turn.role is Role.ASSISTANT
    assert turn.reasoning == "**Looking at the tests**"
    assert turn.extra["encrypted_reasoning"] == ("gAAAAB-enc-1",)
    assert [c.id for c in turn.tool_calls] == ["call_1", "call_2"]
    assert json.loads(turn.tool_calls[1].arguments)["command"][-1] == "cat t.py"
    assert [(r.role, r.tool_call_id, r.tool_name) for r in m[5:7]] == [
        (Role.TOOL, "call_1", "shell"),
        (Role.TOOL, "call_2", "shell"),
    ]
    assert not m[5].meta.is_error
    assert m[6].meta.is_error and m[6].text == "cat: boom"


def test_custom_local_shell_and_web_search_calls(first_turn: Transcript) -> None:
    calls = {c.id: c for m in first_turn.messages for c in m.tool_calls}
    patch = calls["call_3"]
    assert (patch.name, patch.kind, patch.arguments) == ("apply_patch", "custom", PATCH)
    shell = calls["call_4"]
    assert shell.name == "local_shell"
    assert json.loads(shell.arguments)["command"] == ["pytest", "-q"]
    (search,) = [c for c in calls.values() if c.name == "web_search"]
    assert json.loads(search.arguments) == {"type": "search", "query": "pytest flaky"}
    results = {m.tool_call_id: m for m in first_turn.messages if m.role is Role.TOOL}
    assert results["call_3"].tool_name == "apply_patch"
    assert results["call_4"].text == "1 passed"
    assert not any(m.meta.orphan for m in first_turn.messages)
    # A reasoning item with an empty summary attaches to the call after it.
    owner = next(m for m in first_turn.messages if patch in m.tool_calls)
    assert owner.reasoning is None and owner.extra["encrypted_reasoning"] == ("gAAAAB-enc-2",)


def test_event_messages_are_not_counted_twice(first_turn: Transcript) -> None:
    texts = [m.text for m in first_turn.messages]
    assert texts.count("fix the failing test") == 1
    assert texts.count("Fixed the test.") == 1
    # The ask that only an event recorded is kept, once, at its position.
    assert texts[-1] == "thanks, now run the suite"
    assert first_turn.messages[-1].is_real_user
    assert first_turn.messages[-1].extra["from_event"] is True


def test_token_counts(first_turn: Transcript) -> None:
    u = first_turn.usage
    assert len(u) == 3  # info null skipped, repeated measurement skipped
    first = u[0]
    assert (first.input_tokens, first.cache_read_tokens) == (4000, 8000)
    assert first.prompt_tokens == 12000
    assert (first.output_tokens, first.reasoning_tokens) == (300, 200)
    assert first.context_window == 272000
    assert first_turn.messages[first.message_index].tool_calls[0].id == "call_1"
    last = first_turn.messages[u[-1].message_index]
    assert last.text == "Fixed the test."


def test_reasoning_without_output_becomes_thinking_message(tmp_path: Path) -> None:
    lines = [
        *head()[:8],
        item({"type": "reasoning", "summary": [{"type": "summary_text", "text": "Plan A"}]}),
        event("turn_aborted", reason="interrupted"),
        item(msg("user", "stop")),
    ]
    t = load_lines(tmp_path, lines)
    thinking = t.messages[-2]
    assert thinking.role is Role.ASSISTANT and not thinking.tool_calls
    assert thinking.parts == (ThinkingPart("Plan A"),)
    assert t.messages[-1].text == "stop"


def test_compaction_keeps_the_full_history(compacted: Transcript, first_turn: Transcript) -> None:
    t = compacted
    (ev,) = t.compactions  # compacted + context_compacted are one compaction
    assert ev.trigger is Trigger.UNKNOWN  # the rollout does not record /compact vs auto
    assert ev.pre_tokens == 14000  # the last measured prompt before it
    assert ev.extra["lines"] == [29, 30]
    # Everything before the compaction stays, in file order, then ONE summary, then the rest.
    before = len(first_turn.messages)
    assert [m.text for m in t.messages[:before]] == [m.text for m in first_turn.messages]
    assert [m.role for m in t.messages[:before]] == [m.role for m in first_turn.messages]
    # The replacement history (what Codex resumes from) starts the live context.
    replayed = len(compaction_tail()[0]["payload"]["replacement_history"])
    assert ev.message_index == before == t.live_start
    assert ev.summary_index == before + replayed - 1
    summary = t.messages[ev.summary_index]
    assert (summary.role, summary.text) == (Role.USER, f"{PREFIX}\n{SUMMARY}")
    assert summary.meta.is_summary and not summary.meta.is_injected
    assert summary.extra["line"] == 29
    assert all(m.extra.get("replayed") for m in t.messages[before : before + replayed])
    assert [m.text for m in t.messages[before + replayed :]] == ["run it again", "All green."]
    assert sum(m.meta.is_summary for m in t.messages) == 1
    # The pre-compaction turns are all there: parallel calls, results, injected context.
    assert any(len(m.tool_calls) == 2 for m in t.messages[:before])
    assert [m.meta.injected_kind for m in t.messages[1:3]] == ["agents_md", "environment"]


def test_replacement_history_is_the_live_context(compacted: Transcript) -> None:
    (ev,) = compacted.compactions
    history = ev.extra["replacement_history"]
    assert history == compaction_tail()[0]["payload"]["replacement_history"]
    live = compacted.live_messages()
    assert [m.text for m in live] == [
        PERMS,
        AGENTS,
        ENV,
        "fix the failing test",
        "thanks, now run the suite",
        f"{PREFIX}\n{SUMMARY}",
        "run it again",
        "All green.",
    ]
    assert [m.meta.injected_kind for m in live[1:3]] == ["agents_md", "environment"]
    # The asks the history repeats are in the file twice: before the reset and replayed.
    texts = [m.text for m in compacted.history_messages()]
    assert texts.count("fix the failing test") == 1
    assert set(ev.extra) == {"lines", "replacement_history"}


def test_usage_indexes_the_full_list(compacted: Transcript, first_turn: Transcript) -> None:
    u = compacted.usage
    assert len(u) == 4
    # Measurements before the compaction keep pointing at the same messages.
    assert [x.message_index for x in u[:3]] == [x.message_index for x in first_turn.usage]
    assert all(x.message_index is not None for x in u)
    assert compacted.messages[u[2].message_index].text == "Fixed the test."
    assert compacted.messages[u[-1].message_index].text == "All green."


def test_compaction_without_replacement_history(tmp_path: Path) -> None:
    big = ["a" * 30_000, "b" * 30_000, "c" * 30_000]
    lines = [
        *head()[:4],
        *(item(msg("user", text)) for text in big),
        item(msg("assistant", "working")),
        tokens(50000, 0, 10, 0, 50010),
        line("compacted", {"message": SUMMARY}),
        event("context_compacted"),
        item(msg("user", "go on")),
    ]
    t = load_lines(tmp_path, lines)
    (ev,) = t.compactions
    assert ev.pre_tokens == 50000
    assert "replacement_history" not in ev.extra
    # No approximation of Codex's rebuild: every message stays, the summary is inserted.
    assert [m.role for m in t.messages[:3]] == [Role.DEVELOPER, Role.USER, Role.USER]
    assert [m.text[:1] for m in t.messages[3:6]] == ["a", "b", "c"]
    assert [m.text for m in t.messages[6:]] == ["working", SUMMARY, "go on"]
    assert ev.message_index == ev.summary_index == 7
    assert t.messages[7].meta.is_summary
    assert t.usage[0].message_index == 6


def test_every_compaction_is_an_event_with_its_summary(tmp_path: Path) -> None:
    lines = [
        *head(),
        *compaction_tail(),
        line(
            "compacted",
            {"message": "second summary", "replacement_history": [msg("user", "second summary")]},
        ),
        event("context_compacted"),
        item(msg("user", "and then?")),
    ]
    t = load_lines(tmp_path, lines)
    first, second = t.compactions
    # The first compaction replays 6 items (its summary last); the second one item.
    assert (first.summary_index, second.summary_index) == (19, 22)
    assert (first.message_index, second.message_index) == (14, 22)
    assert t.messages[19].text == f"{PREFIX}\n{SUMMARY}"
    assert t.messages[22].text == "second summary"
    assert first.pre_tokens == 14000 and second.pre_tokens == 9000
    assert second.extra["lines"] == [34, 35]
    assert [m.text for m in t.messages[20:]] == [
        "run it again",
        "All green.",
        "second summary",
        "and then?",
    ]
    assert [i for i, m in enumerate(t.messages) if m.meta.is_summary] == [19, 22]
    assert t.live_start == 22


def test_event_before_compacted_line_is_the_same_compaction(tmp_path: Path) -> None:
    lines = [
        *head()[:8],
        tokens(20000, 0, 5, 0, 20005),
        event("context_compacted"),
        tokens(3000, 0, 5, 0, 23010),  # not a message: the halves still pair up
        line("compacted", {"message": SUMMARY}),
        item(msg("user", "next")),
    ]
    t = load_lines(tmp_path, lines)
    (ev,) = t.compactions
    assert ev.extra["lines"] == [10, 12]
    assert ev.pre_tokens == 20000
    assert ev.message_index == ev.summary_index == 4
    assert [m.text for m in t.messages[4:]] == [SUMMARY, "next"]


def test_compaction_without_summary_text_adds_no_message(tmp_path: Path) -> None:
    lines = [
        *head()[:8],
        item(msg("assistant", "ok")),
        event("context_compacted"),  # no compacted line at all
        item(msg("user", "next")),
        line("compacted", {"message": "   "}),  # a compacted line with no summary
        event("context_compacted"),
    ]
    t = load_lines(tmp_path, lines)
    lone, empty = t.compactions
    assert not any(m.meta.is_summary for m in t.messages)
    assert (lone.message_index, lone.summary_index) == (5, None)
    assert t.messages[lone.message_index].text == "next"
    assert (empty.message_index, empty.summary_index) == (len(t.messages), None)
    assert empty.extra["lines"] == [12, 13]


def test_rollback_drops_the_last_turn(tmp_path: Path) -> None:
    lines = [
        *head()[:8],
        item(msg("assistant", "ok")),
        item(msg("user", "second ask")),
        item(msg("assistant", "second answer")),
        tokens(20000, 0, 5, 0, 20005),
        event("thread_rolled_back", num_turns=1),
    ]
    t = load_lines(tmp_path, lines)
    assert [m.text for m in t.messages][-2:] == ["fix the failing test", "ok"]
    assert any("rolled back: 2 message(s)" in w for w in t.warnings)
    assert t.usage[-1].message_index is None  # it measured a message that was removed


def test_rollback_stops_at_the_last_compaction(tmp_path: Path) -> None:
    lines = [
        *head(),
        *compaction_tail(),
        event("thread_rolled_back", num_turns=5),
    ]
    t = load_lines(tmp_path, lines)
    # Only the ask after the compaction (and its answer) go; the history and summary stay.
    assert [m.text for m in t.messages[-2:]] == [
        "thanks, now run the suite",
        f"{PREFIX}\n{SUMMARY}",
    ]
    (ev,) = t.compactions
    assert ev.summary_index == len(t.messages) - 1
    assert any("rolled back: 2 message(s)" in w for w in t.warnings)


def test_truncated_last_line(tmp_path: Path) -> None:
    data = to_jsonl(head()[:8])
    data = data[: len(data) - 25]
    p = tmp_path / "cut.jsonl"
    p.write_bytes(data)
    with pytest.raises(LoadError) as info:
        load(p)
    assert info.value.line == 8
    assert "cut.jsonl, line 8" in str(info.value)
    t = load(p, lenient=True)
    assert t.format == "codex"
    # The cut line held the ask's response item, so its event_msg stands in for it.
    assert [m.role for m in t.messages] == [Role.DEVELOPER, Role.USER, Role.USER, Role.USER]
    assert t.messages[-1].text == "fix the failing test"
    assert t.messages[-1].extra["from_event"] is True
    assert any("skipped 1 malformed line(s): 8" in w for w in t.warnings)
    assert p.read_bytes() == data


def test_missing_call_id_names_line_and_path(tmp_path: Path) -> None:
    lines = [
        *head()[:8],
        item({"type": "function_call_output", "output": "x"}),
        item(msg("user", "more")),
    ]
    p = tmp_path / "bad.jsonl"
    p.write_bytes(to_jsonl(lines))
    with pytest.raises(LoadError) as info:
        load(p)
    assert (info.value.line, info.value.json_path) == (9, "$.payload.call_id")
    t = load(p, lenient=True)
    assert t.messages[-1].text == "more"
    assert any("malformed line(s): 9" in w for w in t.warnings)


def test_unknown_types_are_skipped_and_counted(first_turn: Transcript, tmp_path: Path) -> None:
    assert first_turn.extra["skipped_lines"]["event_msg/exec_command_end"] == 1
    t = load_lines(tmp_path, [*head()[:8], line("brand_new", {}), item({"type": "future_item"})])
    assert len(t.messages) == 4
    assert any("unknown type: brand_new, future_item" in w for w in t.warnings)


def _source(tmp_path: Path, name: str, data: bytes) -> Source:
    path = tmp_path / name
    if name.endswith(".jsonl"):
        return Source(path, data, parse_jsonl(path, data, lenient=False), "jsonl")
    return Source(path, data, parse_json(path, data), "json")


def test_sniffers_reject_other_formats(tmp_path: Path) -> None:
    others = {
        "openai.json": json.dumps([{"role": "user", "content": "hi"}]).encode(),
        "sharegpt.jsonl": to_jsonl(
            [{"conversations": [{"from": "human", "value": "hi"}, {"from": "gpt", "value": "yo"}]}]
            * 2
        ),
        "hermes.jsonl": to_jsonl(
            [{"role": "session_meta", "tools": []}, {"role": "user", "content": "hi"}]
        ),
        "claude.jsonl": to_jsonl(
            [
                {
                    "type": "user",
                    "uuid": "u1",
                    "sessionId": "s",
                    "message": {"role": "user", "content": "hi"},
                },
                {"type": "summary", "summary": "t", "leafUuid": "u1"},
            ]
        ),
    }
    for name, data in others.items():
        assert codex.sniff(_source(tmp_path, name, data)) == 0, name
    mine = _source(tmp_path, "rollout.jsonl", to_jsonl(head()))
    assert codex.sniff(mine) > claude_code.sniff(mine) == 0


_KEYS = [
    "type",
    "payload",
    "role",
    "content",
    "text",
    "call_id",
    "name",
    "arguments",
    "input",
    "output",
    "success",
    "summary",
    "encrypted_content",
    "action",
    "message",
    "info",
    "last_token_usage",
    "total_token_usage",
    "input_tokens",
    "cached_input_tokens",
    "model_context_window",
    "replacement_history",
    "num_turns",
    "id",
    "model",
    "image_url",
]
_VALUES = st.sampled_from(
    [
        "session_meta",
        "turn_context",
        "response_item",
        "event_msg",
        "compacted",
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "local_shell_call",
        "web_search_call",
        "user",
        "assistant",
        "developer",
        "input_text",
        "output_text",
        "input_image",
        "token_count",
        "user_message",
        "agent_message",
        "context_compacted",
        "thread_rolled_back",
        "c1",
        "summary_text",
        "data:image/png;base64,AAAA",
    ]
)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 10**6) | _VALUES,
    lambda kids: (
        st.lists(kids, max_size=4) | st.dictionaries(st.sampled_from(_KEYS), kids, max_size=6)
    ),
    max_leaves=25,
)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.dictionaries(st.sampled_from(_KEYS), _JSON, min_size=1, max_size=6),
        min_size=1,
        max_size=8,
    ),
    st.booleans(),
)
def test_random_lines_raise_only_load_error(lines: list[dict[str, Any]], lenient: bool) -> None:
    data = to_jsonl(lines)
    source = Source(
        Path("fuzz.jsonl"), data, parse_jsonl("fuzz.jsonl", data, lenient=False), "jsonl"
    )
    try:
        t = codex.read(source, LoadOptions(lenient=lenient))
    except LoadError as exc:
        assert not lenient
        assert exc.line is not None and str(exc).startswith("fuzz.jsonl")
    else:
        assert all(u.message_index is None or u.message_index < len(t) for u in t.usage)
        assert all(ev.message_index <= len(t) for ev in t.compactions)
        for ev in t.compactions:
            assert ev.summary_index is None or t.messages[ev.summary_index].meta.is_summary
            assert ev.summary_index is None or ev.summary_index == ev.message_index
        summaries = [ev.summary_index for ev in t.compactions if ev.summary_index is not None]
        assert len(set(summaries)) == len(summaries)  # one summary message per compaction


def test_remote_compaction_replays_its_encrypted_summary_item(tmp_path: Path) -> None:
    encrypted = {"type": "compaction", "encrypted_content": "gAAAAB-opaque"}
    lines = [
        *head()[:4],
        line(
            "compacted", {"message": "", "replacement_history": [msg("user", "keep me"), encrypted]}
        ),
        item(msg("user", "and now?")),
    ]
    t = load_lines(tmp_path, lines)
    (ev,) = t.compactions
    live = t.live_messages()
    assert ev.message_index == t.live_start and live[0].text == "keep me"
    assert ev.summary_index == t.live_start + 1 and live[1].meta.is_summary
    assert [m.text for m in live[2:]] == ["and now?"]


def test_review_leaves_the_replayed_history_out_of_the_summarised_span(
    compacted: Transcript,
) -> None:
    from tinyjuice.review import review_past_compactions
    from tinyjuice.tokens import RoughCounter

    (ev,) = compacted.compactions
    (r,) = review_past_compactions(compacted, counter=RoughCounter())
    assert r.index == ev.summary_index
    # The turns Codex summarised end where the replayed history begins.
    assert r.to_dict()["span"] == [0, ev.message_index]
    assert r.review.source_messages == ev.message_index
