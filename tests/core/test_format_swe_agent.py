"""SWE-agent ``.traj`` reader: detection, pairing, context flags, model and stats, bad input."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import orjson
import pytest

from tinyjuice.formats import LoadError, SaveError, dumps, load, load_bytes
from tinyjuice.formats import anthropic as anthropic_fmt
from tinyjuice.formats import openai as openai_fmt
from tinyjuice.formats import sharegpt as sharegpt_fmt
from tinyjuice.formats import swe_agent as fmt
from tinyjuice.formats._io import Source
from tinyjuice.model import Role, ThinkingPart, Transcript


def _fc(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def function_calling_traj() -> dict[str, Any]:
    """SWE-agent 1.x, function calling: demo, task, parallel calls, plural tool_call_ids."""
    agent = {"agent": "main"}
    return {
        "trajectory": [
            {
                "action": "find_file config.py",
                "observation": "Found 1 matches",
                "response": "Let me find the config loader.",
                "thought": "Let me find the config loader.",
                "execution_time": 0.2,
                "state": {"working_dir": "/repo"},
            }
        ],
        "history": [
            {
                "role": "system",
                "content": "SETTING: You are an autonomous programmer.",
                "message_type": "system_prompt",
                **agent,
            },
            {
                "role": "user",
                "content": "Here is a demonstration: fix an off-by-one in utils.py",
                "is_demo": True,
                "message_type": "demonstration",
                **agent,
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<issue>load_config crashes on empty files</issue>"}
                ],
                "message_type": "observation",
                **agent,
            },
            {
                "role": "assistant",
                "content": "Let me find the config loader and its tests.",
                "thought": "Let me find the config loader and its tests.",
                "action": "find_file config.py\nsearch_dir load_config",
                "message_type": "action",
                "tool_calls": [
                    _fc("call_1", "find_file", '{"file_name": "config.py"}'),
                    _fc("call_2", "search_dir", '{"search_term": "load_config"}'),
                ],
                "thinking_blocks": [
                    {"type": "thinking", "thinking": "Two lookups at once.", "signature": "sig-1"}
                ],
                **agent,
            },
            {
                "role": "tool",
                "content": "Found 1 matches for config.py: /repo/tjui/config.py",
                "tool_call_ids": ["call_1"],
                "message_type": "observation",
                **agent,
            },
            {
                "role": "tool",
                "content": "tjui/cli.py:41: cfg = load_config(path)",
                "tool_call_id": "call_2",
                "message_type": "observation",
                **agent,
            },
            {
                "role": "assistant",
                "content": "Open the file.",
                "thought": "Open the file.",
                "action": "open tjui/config.py",
                "message_type": "action",
                "tool_calls": [
                    _fc(
                        "call_3",
                        "str_replace_editor",
                        '{"command": "view", "path": "tjui/config.py"}',
                    )
                ],
                **agent,
            },
            {
                "role": "tool",
                "content": "1 def load_config(p):\n2     return toml.loads(p.read_text())['tjui']",
                "tool_call_ids": ["call_3"],
                "message_type": "observation",
                **agent,
            },
            {
                "role": "assistant",
                "content": "Submitting.",
                "thought": "Submitting.",
                "action": "submit",
                "message_type": "action",
                "tool_calls": [_fc("call_4", "submit", "{}")],
                **agent,
            },
            {
                "role": "tool",
                "content": "diff --git a/tjui/config.py b/tjui/config.py",
                "tool_call_ids": ["call_4"],
                "message_type": "observation",
                **agent,
            },
        ],
        "info": {
            "swe_agent_version": "1.0.1",
            "exit_status": "submitted",
            "submission": "diff --git a/tjui/config.py b/tjui/config.py",
            "model_stats": {
                "instance_cost": 0.42,
                "tokens_sent": 18234,
                "tokens_received": 911,
                "api_calls": 4,
            },
        },
        "replay_config": orjson.dumps(
            {"agent": {"model": {"name": "claude-sonnet-4-20250514", "temperature": 0.0}}}
        ).decode(),
        "environment": "main",
    }


def thought_action_traj() -> dict[str, Any]:
    """SWE-agent 0.x: no tool calls; observations come back as user messages."""
    return {
        "environment": "swe_main",
        "trajectory": [
            {"action": "ls", "observation": "src\ntests", "response": "DISCUSSION\n..."}
        ],
        "history": [
            {"role": "system", "content": "SETTING: ...", "agent": "primary"},
            {
                "role": "user",
                "content": "We're solving this issue: parser drops headers",
                "agent": "primary",
            },
            {
                "role": "assistant",
                "content": "DISCUSSION\nList the repo.\n\n```\nls\n```",
                "thought": "DISCUSSION\nList the repo.\n\n",
                "action": "ls\n",
                "agent": "primary",
            },
            {"role": "user", "content": "src\ntests\n(Open file: n/a)\nbash-$", "agent": "primary"},
            {
                "role": "assistant",
                "content": "DISCUSSION\nRun tests.\n\n```\npytest -q\n```",
                "thought": "DISCUSSION\nRun tests.\n\n",
                "action": "pytest -q\n",
                "agent": "primary",
            },
            {"role": "user", "content": "1 failed, 9 passed\nbash-$", "agent": "primary"},
        ],
        "info": {"model_stats": {"tokens_sent": 5000, "tokens_received": 300, "api_calls": 2}},
    }


def _load(doc: Any) -> Transcript:
    return load_bytes(orjson.dumps(doc), "run.traj", "swe-agent")


def _source(doc: Any) -> Source:
    return Source(path=Path("x.traj"), data=orjson.dumps(doc), doc=doc, kind="json")


# --------------------------------------------------------------------------- detection


def test_detect_swe_agent_without_format(tmp_path: Path) -> None:  # needs all format modules
    for k, doc in enumerate((function_calling_traj(), thought_action_traj())):
        path = tmp_path / f"run{k}.traj"
        path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
        assert load(path).format == "swe-agent"
    openai_list = tmp_path / "chat.json"
    openai_list.write_bytes(orjson.dumps([{"role": "user", "content": "hi"}]))
    assert load(openai_list).format == "openai"


def test_sniff_scores() -> None:
    for doc in (function_calling_traj(), thought_action_traj()):
        assert fmt.sniff(_source(doc)) >= 90
        assert openai_fmt.sniff(_source(doc)) == 0
        assert anthropic_fmt.sniff(_source(doc)) == 0
        assert sharegpt_fmt.sniff(_source(doc)) == 0
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]
    for other in (plain, {"messages": plain}, {"session_id": "s", "messages": plain}):
        assert fmt.sniff(_source(other)) == 0, other
    # mini-SWE-agent files are OpenAI-like, but ours to read (model and stats live in info).
    mini = {
        "messages": plain,
        "info": {"model_stats": {"api_calls": 1}},
        "trajectory_format": "mini-swe-agent-1.1",
    }
    assert fmt.sniff(_source(mini)) > openai_fmt.sniff(_source(mini)) > 0


# ------------------------------------------------------------------------------ reading


def test_counts_and_pairing_with_plural_tool_call_ids() -> None:
    t = _load(function_calling_traj())
    assert t.format == "swe-agent"
    assert t.role_counts() == {"system": 1, "user": 2, "assistant": 3, "tool": 4}
    assert t.tool_call_count == 4
    calls = {c.id: c.name for m in t.messages for c in m.tool_calls}
    results = [m for m in t.messages if m.role is Role.TOOL]
    assert [r.tool_call_id for r in results] == ["call_1", "call_2", "call_3", "call_4"]
    assert all(r.tool_call_id in calls and not r.meta.orphan for r in results)
    assert t.messages[3].tool_calls[1].arguments == '{"search_term": "load_config"}'
    assert t.warnings == ()


def test_swe_fields_stay_in_extra_and_thinking_blocks_become_parts() -> None:
    t = _load(function_calling_traj())
    step = t.messages[3]
    assert step.extra["action"] == "find_file config.py\nsearch_dir load_config"
    assert step.extra["thought"] == "Let me find the config loader and its tests."
    assert step.extra["message_type"] == "action" and step.extra["agent"] == "main"
    assert "thinking_blocks" not in step.extra and "tool_call_ids" not in t.messages[4].extra
    assert step.thinking == (ThinkingPart("Two lookups at once.", signature="sig-1"),)
    assert step.text == "Let me find the config loader and its tests."


def test_model_stats_and_run_data_are_kept_without_per_turn_usage() -> None:
    doc = function_calling_traj()
    t = _load(doc)
    assert t.model == "claude-sonnet-4-20250514"
    assert t.usage == ()
    assert t.extra["model_stats"] == doc["info"]["model_stats"]
    assert t.extra["info"] == doc["info"]
    assert t.extra["trajectory"] == doc["trajectory"]
    assert t.extra["environment"] == "main"
    assert "history" not in t.extra


def test_model_name_from_info_or_replay_config_dict() -> None:
    doc = thought_action_traj()
    assert _load(doc).model is None
    doc["replay_config"] = {"agent": {"model": {"model_name": "gpt-4o"}}}
    assert _load(doc).model == "gpt-4o"
    doc["info"]["model_name"] = "gpt-4o-2024-08-06"
    assert _load(doc).model == "gpt-4o-2024-08-06"


def test_demonstrations_and_observations_are_not_real_user_asks() -> None:
    t = _load(function_calling_traj())
    demo, task = t.messages[1], t.messages[2]
    assert demo.meta.is_injected and demo.meta.injected_kind == "demonstration"
    assert task.is_real_user and "load_config crashes" in task.text

    # SWE-agent 0.x observations answer the ``action`` before them: tool output.
    old = _load(thought_action_traj())
    assert [m.role for m in old.messages] == [
        Role.SYSTEM, Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.TOOL
    ]  # fmt: skip
    assert old.messages[1].is_real_user and old.tool_call_count == 2
    call = old.messages[4].tool_calls[0]
    assert call.name == "bash" and call.parsed_arguments() == {"command": "pytest -q"}
    assert old.messages[5].tool_call_id == call.id and "1 failed" in old.messages[5].text
    assert old.messages[4].hints["synthetic_call_ids"] == (call.id,)
    assert old.messages[5].hints["observation_role"] == "user"
    assert not any(m.meta.orphan for m in old.messages)


def test_mini_swe_agent_file() -> None:
    doc = {
        "info": {
            "model_stats": {"instance_cost": 0.01, "api_calls": 2},
            "config": {"model": {"model_name": "anthropic/claude-sonnet-4-5"}},
            "exit_status": "Submitted",
        },
        "messages": [
            {"role": "system", "content": "You are a helpful assistant."},
            {"role": "user", "content": "Fix the flaky test."},
            {"role": "assistant", "content": "THOUGHT: run it\n\n```bash\npytest -x\n```"},
            {"role": "user", "content": "<returncode>0</returncode>", "extra": {"elapsed": 1.2}},
        ],
        "trajectory_format": "mini-swe-agent-1.1",
    }
    t = _load(doc)
    assert t.model == "anthropic/claude-sonnet-4-5"
    assert len(t.messages) == 4 and t.extra["model_stats"]["api_calls"] == 2
    obs = t.messages[3]
    assert obs.role is Role.TOOL and obs.tool_call_id == t.messages[2].tool_calls[0].id
    assert t.messages[2].tool_calls[0].parsed_arguments() == {"command": "pytest -x"}


def test_history_missing_is_rebuilt_from_steps() -> None:
    doc = function_calling_traj()
    del doc["history"]
    t = _load(doc)
    assert [m.role for m in t.messages] == [Role.ASSISTANT, Role.USER]
    assert t.messages[0].text == "Let me find the config loader."
    assert t.messages[1].text == "Found 1 matches" and not t.messages[1].is_real_user
    assert any("rebuilt from 'trajectory'" in w for w in t.warnings)


def test_not_writable() -> None:
    with pytest.raises(SaveError):
        dumps(_load(function_calling_traj()), "swe-agent")


# --------------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("mutate", "json_path", "expected"),
    [
        (lambda d: d.update(history={"role": "user"}), "$.history", "a list of messages"),
        (lambda d: d["history"].__setitem__(2, ["x"]), "$.history[2]", "a message object"),
        (
            lambda d: d["history"][2].__setitem__("role", "robot"),
            "$.history[2].role",
            "assistant or tool",
        ),
        (
            lambda d: d["history"][4].__setitem__("tool_call_ids", "call_1"),
            "$.history[4].tool_call_ids",
            "a list of tool call ids",
        ),
        (
            lambda d: d["history"][4].__setitem__("tool_call_ids", [1]),
            "$.history[4].tool_call_ids[0]",
            "a string tool call id",
        ),
        (
            lambda d: d["history"][3].__setitem__("tool_calls", {"id": "x"}),
            "$.history[3].tool_calls",
            "a list of tool calls",
        ),
        (
            lambda d: d["history"][3].__setitem__("thinking_blocks", [{"thinking": 3}]),
            "$.history[3].thinking_blocks[0].thinking",
            "a string",
        ),
    ],
)
def test_wrong_types_name_the_json_path(mutate: Any, json_path: str, expected: str) -> None:
    doc = copy.deepcopy(function_calling_traj())
    mutate(doc)
    with pytest.raises(LoadError) as info:
        _load(doc)
    assert info.value.json_path == json_path
    assert expected in (info.value.expected or "")
    assert json_path in str(info.value) and "run.traj" in str(info.value)


def test_no_history_or_steps_is_an_error() -> None:
    with pytest.raises(LoadError) as info:
        _load({"info": {}})
    assert "history" in str(info.value)


def test_invalid_json_arguments_are_kept_verbatim() -> None:
    doc = function_calling_traj()
    broken = '{"command": "view", "path": "tjui/config.py"'
    doc["history"][6]["tool_calls"][0]["function"]["arguments"] = broken
    t = _load(doc)
    call = t.messages[6].tool_calls[0]
    assert call.arguments == broken and not call.arguments_valid
    assert any("invalid JSON arguments" in w for w in t.warnings)


def test_result_without_its_call_is_loaded_and_flagged() -> None:
    doc = function_calling_traj()
    doc["history"][7]["tool_call_ids"] = ["call_gone"]
    t = _load(doc)
    assert t.messages[7].meta.orphan and t.messages[7].tool_call_id == "call_gone"
    assert sum(m.meta.orphan for m in t.messages) == 1
    assert any("without a matching tool call" in w for w in t.warnings)


def test_one_result_for_several_calls_is_paired_to_the_first() -> None:
    doc = function_calling_traj()
    doc["history"][4]["tool_call_ids"] = ["call_1", "call_2"]
    del doc["history"][5]
    t = _load(doc)
    assert t.messages[4].tool_call_id == "call_1"
    assert t.messages[4].hints["tool_call_ids"] == ("call_1", "call_2")
    assert any("answer several calls" in w for w in t.warnings)


def test_a_missing_role_is_called_missing_and_a_null_one_null() -> None:
    for raw, said in (
        (b'{"trajectory": [], "history": [{"content": "x"}]}', "role is missing"),
        (b'{"trajectory": [], "history": [{"role": null, "content": "x"}]}', "role is a JSON null"),
    ):
        with pytest.raises(LoadError, match=said):
            load_bytes(raw, "s.traj", "swe-agent")
