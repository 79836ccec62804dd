"""Anthropic Messages reader/writer: detection, tool-result splitting, round trips, bad input."""

from __future__ import annotations

import base64
import copy
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from tinyjuice.formats import LoadError, dumps, load, load_bytes, save
from tinyjuice.formats import anthropic as fmt
from tinyjuice.formats import openai as openai_fmt
from tinyjuice.formats._io import Source
from tinyjuice.formats._messages import in_layout
from tinyjuice.model import MediaPart, Message, Role, TextPart, ThinkingPart, ToolCall, Transcript

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(200))).decode()


def session() -> dict[str, Any]:
    """A small coding-agent session: screenshot, thinking, parallel calls, an error, a rerun."""
    return {
        "model": "claude-sonnet-4-5",
        "max_tokens": 8192,
        "system": [
            {"type": "text", "text": "You are a coding agent working in /repo."},
            {
                "type": "text",
                "text": "Prefer small diffs.",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tools": [
            {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}},
            {"name": "search", "description": "Grep the repo", "input_schema": {"type": "object"}},
            {
                "name": "edit_file",
                "description": "Replace text",
                "input_schema": {"type": "object"},
            },
            {
                "name": "terminal",
                "description": "Run a command",
                "input_schema": {"type": "object"},
            },
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {
                        "type": "text",
                        "text": "tests/test_parser.py fails, see the screenshot. Fix it.",
                    },
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/png", "data": PNG},
                    },
                ],
            },
            {
                "id": "msg_01",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "Read the parser and find its callers.",
                        "signature": "EqQBCkYIBxgCKkA",
                    },
                    {"type": "text", "text": "Reading the parser and searching for callers."},
                    {
                        "type": "tool_use",
                        "id": "toolu_01",
                        "name": "read_file",
                        "input": {"path": "src/parser.py", "limit": 200},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_02",
                        "name": "search",
                        "input": {"pattern": "parse_header(", "glob": "**/*.py"},
                    },
                ],
                "stop_reason": "tool_use",
                "usage": {
                    "input_tokens": 12,
                    "cache_creation_input_tokens": 900,
                    "cache_read_input_tokens": 3100,
                    "output_tokens": 140,
                },
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_01",
                        "content": "def parse_header(line):\n    key, value = line.split(':')\n",
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_02",
                        "content": [{"type": "text", "text": "src/cli.py:14: parse_header(raw)"}],
                        "cache_control": {"type": "ephemeral"},
                    },
                    {"type": "text", "text": "Keep the public API stable."},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
                    {
                        "type": "tool_use",
                        "id": "toolu_03",
                        "name": "edit_file",
                        "input": {
                            "path": "src/parser.py",
                            "old": "line.split(':')",
                            "new": "line.split(':', 1)",
                        },
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_03",
                        "content": "old string not found",
                        "is_error": True,
                    }
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Retrying with the exact text."},
                    {
                        "type": "tool_use",
                        "id": "toolu_04",
                        "name": "terminal",
                        "input": {"command": "pytest -q tests/test_parser.py"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_04",
                        "content": "1 passed in 0.03s",
                        "is_error": False,
                    }
                ],
            },
            {"role": "assistant", "content": "Fixed: split on the first colon only."},
        ],
    }


def _write(tmp_path: Path, doc: Any, name: str = "session.json") -> Path:
    path = tmp_path / name
    path.write_bytes(orjson.dumps(doc))
    return path


def _load(doc: Any) -> Transcript:
    return load_bytes(orjson.dumps(doc), "session.json", "anthropic")


def _source(doc: Any) -> Source:
    return Source(path=Path("x.json"), data=orjson.dumps(doc), doc=doc, kind="json")


# --------------------------------------------------------------------------- detection


def test_detect_anthropic_without_format(tmp_path: Path) -> None:  # needs all format modules
    t = load(_write(tmp_path, session()))
    assert t.format == "anthropic"
    # A bare list of Anthropic messages is recognised too.
    assert load(_write(tmp_path, session()["messages"], "list.json")).format == "anthropic"


def test_detect_leaves_openai_files_to_openai(tmp_path: Path) -> None:  # needs all modules
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    assert load(_write(tmp_path, plain, "a.json")).format == "openai"
    assert load(_write(tmp_path, {"messages": plain}, "b.json")).format == "openai"


def test_sniff_scores_against_openai() -> None:
    ours = _source(session())
    assert fmt.sniff(ours) >= 80
    assert openai_fmt.sniff(ours) == 0
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    with_calls = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "list files"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "a.py"},
    ]
    for doc in (plain, with_calls, {"messages": with_calls}, {"messages": with_calls, "tools": []}):
        assert fmt.sniff(_source(doc)) == 0, doc
    # An ambiguous object of plain strings stays OpenAI's.
    assert fmt.sniff(_source({"messages": plain})) < openai_fmt.sniff(_source({"messages": plain}))
    # Other formats' objects are never claimed.
    hermes = {"session_id": "s1", "system": "x", "messages": session()["messages"]}
    assert fmt.sniff(_source(hermes)) == 0
    assert fmt.sniff(_source({"history": [], "messages": []})) == 0


# ------------------------------------------------------------------------------ reading


def test_counts_and_top_level_fields() -> None:
    t = _load(session())
    assert t.format == "anthropic"
    assert t.model == "claude-sonnet-4-5"
    assert t.system_prompt == "You are a coding agent working in /repo.\nPrefer small diffs."
    assert [tool["name"] for tool in t.tools] == ["read_file", "search", "edit_file", "terminal"]
    assert t.role_counts() == {"user": 2, "assistant": 4, "tool": 4}
    assert t.tool_call_count == 4
    assert [m.role for m in t.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert t.warnings == ()
    assert [m.meta.original_index for m in t.messages] == list(range(10))


def test_tool_results_become_tool_messages_paired_to_calls() -> None:
    t = _load(session())
    calls = {c.id: c for m in t.messages for c in m.tool_calls}
    results = [m for m in t.messages if m.role is Role.TOOL]
    assert [r.tool_call_id for r in results] == ["toolu_01", "toolu_02", "toolu_03", "toolu_04"]
    assert [r.tool_name for r in results] == ["read_file", "search", "edit_file", "terminal"]
    for r in results:
        assert r.tool_call_id in calls
        assert not r.meta.orphan
    assert results[0].text.startswith("def parse_header")
    assert results[1].text == "src/cli.py:14: parse_header(raw)"
    assert [r.meta.is_error for r in results] == [False, False, True, False]
    # The text that shared the user message with the results follows them.
    after = t.messages[4]
    assert after.role is Role.USER and after.text == "Keep the public API stable."
    assert after.is_real_user


def test_tool_use_input_becomes_compact_json_arguments() -> None:
    t = _load(session())
    read_call = t.messages[1].tool_calls[0]
    assert read_call == ToolCall(
        id="toolu_01", name="read_file", arguments='{"path":"src/parser.py","limit":200}'
    )
    edit = t.messages[5].tool_calls[0]
    assert edit.parsed_arguments() == session()["messages"][3]["content"][1]["input"]


def test_image_thinking_and_redacted_thinking_parts() -> None:
    t = _load(session())
    image = t.messages[0].media[0]
    assert isinstance(image, MediaPart)
    assert image.media_type == "image/png"
    assert image.byte_size == len(base64.b64decode(PNG))
    assert image.source == "base64"
    thinking = t.messages[1].thinking[0]
    assert thinking == ThinkingPart(
        "Read the parser and find its callers.", signature="EqQBCkYIBxgCKkA"
    )
    redacted = t.messages[5].thinking[0]
    assert redacted.redacted and redacted.text == ""
    # Visible text excludes the thinking.
    assert t.messages[1].text == "Reading the parser and searching for callers."


def test_usage_of_saved_api_responses() -> None:
    t = _load(session())
    assert len(t.usage) == 1
    u = t.usage[0]
    assert u.message_index == 1
    assert (u.input_tokens, u.cache_write_tokens, u.cache_read_tokens) == (12, 900, 3100)
    assert u.prompt_tokens == 4012 and u.output_tokens == 140


def test_summary_and_injected_context_are_flagged() -> None:
    doc = {
        "system": "You are a coding agent.",
        "messages": [
            {
                "role": "user",
                "content": "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier: fixed parser.py.",
            },
            {"role": "assistant", "content": "Understood."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>todo list empty</system-reminder>"}
                ],
            },
            {"role": "assistant", "content": "Ok."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>cwd is /repo</system-reminder>"},
                    {"type": "text", "text": "Now run the linter."},
                ],
            },
        ],
    }
    t = _load(doc)
    summary, _, reminder, _, ask = t.messages
    assert summary.meta.is_summary and not summary.is_real_user
    assert reminder.meta.is_injected and reminder.meta.injected_kind == "system_reminder"
    assert not reminder.is_real_user
    assert ask.is_real_user


# ----------------------------------------------------------------------------- writing


def test_round_trip_gives_back_the_same_json_value() -> None:
    original = orjson.dumps(session())
    t = load_bytes(original, "s.json", "anthropic")
    assert orjson.loads(dumps(t, "anthropic")) == orjson.loads(original)


def test_load_save_load_keeps_the_model(tmp_path: Path) -> None:
    t = load(_write(tmp_path, session()), "anthropic")
    out = tmp_path / "out.json"
    save(t, out, "anthropic")
    again = load(out, "anthropic")
    assert again.messages == t.messages
    assert again.system_prompt == t.system_prompt
    assert again.tools == t.tools and again.usage == t.usage and again.model == t.model


def test_text_before_results_keeps_its_place() -> None:
    doc = session()
    # The user wrote first, then the results: the model still lists results first.
    doc["messages"][2]["content"].insert(0, doc["messages"][2]["content"].pop())
    t = _load(doc)
    assert [m.role for m in t.messages[2:5]] == [Role.TOOL, Role.TOOL, Role.USER]
    assert orjson.loads(dumps(t, "anthropic")) == doc


def test_changed_result_is_regrouped_in_order() -> None:
    t = _load(session())
    digest = "[read_file src/parser.py: 2 lines, parse_header splits on ':']"
    messages = list(t.messages)
    messages[2] = replace(messages[2], parts=(TextPart(digest),))
    out = orjson.loads(dumps(replace(t, messages=tuple(messages)), "anthropic"))
    group = out["messages"][2]
    assert group["role"] == "user"
    assert [b["type"] for b in group["content"]] == ["tool_result", "tool_result", "text"]
    assert group["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": digest,
    }
    assert group["content"][1] == session()["messages"][2]["content"][1]
    assert len(out["messages"]) == len(session()["messages"])


def test_unknown_blocks_and_keys_survive() -> None:
    doc = session()
    doc["metadata"] = {"user_id": "u-7"}
    doc["messages"][1]["content"].insert(
        2,
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"q": "x"}},
    )
    doc["messages"][2]["content"][2]["citations"] = None
    doc["messages"][7]["x_client"] = {"latency_ms": 812}
    t = _load(doc)
    unknown = [p for p in t.messages[1].parts if isinstance(p, MediaPart)]
    assert unknown and unknown[0].media_type == "application/x-anthropic-server_tool_use"
    assert orjson.loads(dumps(t, "anthropic")) == doc


def test_string_system_and_string_content_round_trip() -> None:
    doc = {
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": "What does `git stash -p` do?"},
            {"role": "assistant", "content": "Stashes selected hunks."},
        ],
    }
    t = _load(doc)
    assert t.system_prompt == "You are terse."
    assert t.messages[0].hints["content_form"] == "string"
    assert orjson.loads(dumps(t, "anthropic")) == doc


def test_changed_system_prompt_keeps_block_form() -> None:
    t = _load(session())
    out = orjson.loads(dumps(replace(t, system_prompt="You are a reviewer."), "anthropic"))
    assert out["system"] == [
        {"type": "text", "text": "You are a reviewer.", "cache_control": {"type": "ephemeral"}}
    ]


def test_openai_transcript_converts_to_valid_anthropic_shape() -> None:
    t = Transcript(
        messages=(
            Message(Role.SYSTEM, (TextPart("Be careful."),)),
            Message(Role.USER, (TextPart("List the repo"),)),
            Message(
                Role.ASSISTANT,
                (),
                tool_calls=(
                    ToolCall("call_a", "terminal", '{"command":"ls"}'),
                    ToolCall("call_b", "read_file", '{"path":"README.md"}'),
                ),
            ),
            Message(
                Role.TOOL, (TextPart("src\ntests"),), tool_call_id="call_a", tool_name="terminal"
            ),
            Message(Role.TOOL, (TextPart("# tjui"),), tool_call_id="call_b", tool_name="read_file"),
            Message(Role.ASSISTANT, (TextPart("Two folders."),)),
        ),
        format="openai",
    )
    out = orjson.loads(dumps(t, "anthropic"))
    assert out["system"] == "Be careful."
    assert [m["role"] for m in out["messages"]] == ["user", "assistant", "user", "assistant"]
    assert out["messages"][1]["content"][0] == {
        "type": "tool_use",
        "id": "call_a",
        "name": "terminal",
        "input": {"command": "ls"},
    }
    results = out["messages"][2]["content"]
    assert [(b["tool_use_id"], b["content"]) for b in results] == [
        ("call_a", "src\ntests"),
        ("call_b", "# tjui"),
    ]
    back = load_bytes(orjson.dumps(out), "x.json", "anthropic")
    assert [m.role for m in back.messages] == [m.role for m in t.messages[1:]]
    assert [c.arguments for c in back.messages[1].tool_calls] == [
        '{"command":"ls"}',
        '{"path":"README.md"}',
    ]


def _blocks(value: Any) -> list[dict[str, Any]]:
    """Every content block of an Anthropic document, tool_result contents included."""
    out: list[dict[str, Any]] = []
    for m in value["messages"]:
        content = m.get("content")
        for b in content if isinstance(content, list) else []:
            out.append(b)
            if isinstance(b.get("content"), list):
                out.extend(b["content"])
    return out


def test_converted_turns_have_no_empty_text_blocks() -> None:
    # OpenAI-style "content": "" beside tool calls used to become {"type":"text","text":""},
    # which the API rejects.
    t = Transcript(
        messages=(
            Message(Role.USER, (TextPart("Fix it"),)),
            Message(Role.ASSISTANT, (TextPart(""),), tool_calls=(ToolCall("c1", "ls", "{}"),)),
            Message(Role.TOOL, (TextPart(""),), tool_call_id="c1", tool_name="ls"),
            Message(Role.ASSISTANT, (TextPart(""),)),
            Message(Role.USER, (TextPart("  \n"),)),
            Message(Role.ASSISTANT, (TextPart("Done."),)),
        ),
        format="openai",
    )
    out = orjson.loads(dumps(t, "anthropic"))
    assert not [b for b in _blocks(out) if b.get("type") == "text" and not b["text"].strip()]
    messages = out["messages"]
    # A turn of tool calls only is valid as it is.
    assert messages[1] == {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "ls", "input": {}}],
    }
    # An empty result has no content (allowed); an empty turn says that it was empty.
    assert messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "c1"}]
    assert messages[3] == {"role": "assistant", "content": fmt.EMPTY_TURN_TEXT}
    assert messages[4] == {"role": "user", "content": fmt.EMPTY_TURN_TEXT}
    assert all(m["content"] for m in messages)
    back = load_bytes(orjson.dumps(out), "x.json", "anthropic")
    assert [m.role for m in back.messages] == [m.role for m in t.messages]


def test_reviewer_case_compressed_demo_to_anthropic_is_api_shaped(tmp_path: Path) -> None:
    # tjui compress sessions/demo.json --keep-last 2 --to anthropic -o x.json
    from tinyjuice.options import CompactionOptions
    from tinyjuice.pipeline import compress

    demo = load(Path(__file__).resolve().parents[2] / "sessions" / "demo.json")
    for t in (demo, compress(demo, CompactionOptions(keep_last=2, force=True)).transcript):
        out = orjson.loads(dumps(t, "anthropic"))
        assert not [b for b in _blocks(out) if b.get("type") == "text" and not b["text"].strip()]
        assert all(m.get("content") for m in out["messages"])
        assert out["messages"][0]["role"] == "user"


def test_reasoning_beside_text_is_kept_as_a_thinking_block() -> None:
    # Reasoning on a text-only turn (Hermes, Codex) used to vanish into string content.
    t = Transcript(
        messages=(
            Message(Role.USER, (TextPart("hi"),)),
            Message(Role.ASSISTANT, (TextPart("Hello."),), reasoning="greet back"),
        ),
        format="hermes",
    )
    out = orjson.loads(dumps(t, "anthropic"))
    assert out["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "greet back"},
        {"type": "text", "text": "Hello."},
    ]


def test_own_blocks_are_written_back_as_they_were() -> None:
    doc = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": ""},
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}]},
        ]
    }
    t = load_bytes(orjson.dumps(doc), "s.json", "anthropic")
    assert orjson.loads(dumps(t, "anthropic")) == doc


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("mutate", "json_path", "expected"),
    [
        (lambda d: d.update(messages={"role": "user"}), "$.messages", "a list of messages"),
        (lambda d: d.update(system=42), "$.system", "a string or a list of text blocks"),
        (lambda d: d["messages"].__setitem__(1, "hello"), "$.messages[1]", "a message object"),
        (
            lambda d: d["messages"][0].__setitem__("content", 7),
            "$.messages[0].content",
            "a string or a list of content blocks",
        ),
        (
            lambda d: d["messages"][0]["content"][0].__setitem__("text", ["a"]),
            "$.messages[0].content[0].text",
            "a string",
        ),
        (
            lambda d: d["messages"][1]["content"][2].__setitem__("id", 5),
            "$.messages[1].content[2].id",
            "a string tool_use id",
        ),
        (
            lambda d: d["messages"][2]["content"][0].pop("tool_use_id"),
            "$.messages[2].content[0].tool_use_id",
            "the string id of a tool_use block",
        ),
        (
            lambda d: d["messages"][0]["content"][1]["source"].__setitem__("data", None),
            "$.messages[0].content[1].source.data",
            "a base64 string",
        ),
        (
            lambda d: d["messages"][0].__setitem__("role", "system"),
            "$.messages[0].role",
            "'user' or 'assistant'",
        ),
    ],
)
def test_wrong_types_name_the_json_path(mutate: Any, json_path: str, expected: str) -> None:
    doc = copy.deepcopy(session())
    mutate(doc)
    with pytest.raises(LoadError) as info:
        _load(doc)
    err = info.value
    assert err.json_path == json_path
    assert expected in (err.expected or "")
    assert json_path in str(err) and "session.json" in str(err)


def test_invalid_json_arguments_are_kept_verbatim() -> None:
    doc = session()
    broken = '{"command": "pytest -q tests/test_parser.py'
    doc["messages"][5]["content"][1]["input"] = broken
    t = _load(doc)
    call = t.messages[7].tool_calls[0]
    assert call.arguments == broken
    assert not call.arguments_valid
    assert any("invalid JSON arguments" in w for w in t.warnings)
    assert orjson.loads(dumps(t, "anthropic")) == doc


def test_result_without_its_call_is_loaded_and_flagged() -> None:
    doc = session()
    doc["messages"][6]["content"][0]["tool_use_id"] = "toolu_missing"
    t = _load(doc)
    orphan = t.messages[8]
    assert orphan.role is Role.TOOL and orphan.meta.orphan
    assert orphan.text == "1 passed in 0.03s"
    assert sum(m.meta.orphan for m in t.messages) == 1
    assert any("without a matching tool call" in w for w in t.warnings)


def test_a_text_block_after_a_tool_use_is_written_back_in_its_place(tmp_path: Path) -> None:
    assert in_layout("pcp", ["a", "b"], ["C"]) == ["a", "C", "b"]
    assert in_layout("pc", ["a", "b"], ["C"]) == ["a", "b", "C"]  # does not fit: in order
    assert in_layout(None, ["a"], ["C"]) == ["a", "C"]
    doc = {
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "first"},
                    {"type": "tool_use", "id": "t1", "name": "ls", "input": {}},
                    {"type": "text", "text": "after the call"},
                ],
            },
        ]
    }
    path = tmp_path / "a.json"
    path.write_bytes(orjson.dumps(doc))
    back = orjson.loads(dumps(load(path), "anthropic"))
    assert back["messages"][1]["content"] == doc["messages"][1]["content"]
