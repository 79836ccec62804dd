"""Dataset shapes: glaive / LLaMA-Factory ShareGPT tool turns, mini-SWE-agent observations.

The files are built here by hand in the shapes those projects write (not through our
writers): a ShareGPT line whose calls are ``function_call`` turns (the value a JSON
``{"name", "arguments"}``) answered by ``observation`` turns, with the schemas in a
``tools`` JSON string and the prompt in a top-level ``system``; and a mini-SWE-agent
trajectory whose command output comes back as ``user`` messages.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tinyjuice.formats import LoadError, dumps, load, load_bytes
from tinyjuice.model import Role
from tjui.cli import main

TOOLS = [
    {
        "name": "lookup_station",
        "description": "Find a weather station by city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["city"],
        },
    },
    {
        "name": "read_gauge",
        "description": "Read a station's rain gauge",
        "parameters": {"type": "object", "properties": {"station": {"type": "string"}}},
    },
]


def glaive_row(k: int, rounds: int = 1) -> dict[str, Any]:
    """One LLaMA-Factory ShareGPT conversation with ``rounds`` call/observation pairs."""
    turns: list[dict[str, str]] = [{"from": "human", "value": f"Did it rain in Ostend #{k}?"}]
    for r in range(rounds):
        call = {"name": "lookup_station", "arguments": {"city": "Ostend", "limit": r + 1}}
        turns.append({"from": "function_call", "value": json.dumps(call)})
        rows = [{"station": f"OST-{k}-{r}-{j}", "mm": j * 0.4} for j in range(40)]
        turns.append({"from": "observation", "value": json.dumps({"stations": rows})})
        turns.append({"from": "human", "value": f"And the gauge reading, round {r}?"})
    turns.append({"from": "gpt", "value": f"Station OST-{k} logged 3.2 mm of rain."})
    return {
        "conversations": turns,
        "system": "You are a weather desk assistant with tools.",
        "tools": json.dumps(TOOLS),
    }


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.stdout, result.stderr


# ------------------------------------------------------------------- ShareGPT tools


def test_function_call_and_observation_turns_are_calls_and_results() -> None:
    t = load_bytes(orjson.dumps(glaive_row(1, rounds=2)), "glaive.json")
    assert t.format == "sharegpt"
    assert t.system_prompt == "You are a weather desk assistant with tools."
    assert [tool["name"] for tool in t.tools] == ["lookup_station", "read_gauge"]
    roles = [m.role for m in t.messages]
    assert roles == [Role.USER, *[Role.ASSISTANT, Role.TOOL, Role.USER] * 2, Role.ASSISTANT]
    call = t.messages[1].tool_calls[0]
    assert call.name == "lookup_station"
    assert call.parsed_arguments() == {"city": "Ostend", "limit": 1}
    result = t.messages[2]
    assert result.tool_call_id == call.id and result.tool_name == "lookup_station"
    assert "OST-1-0-0" in result.text and not result.meta.orphan
    assert not t.warnings


def test_several_calls_in_one_function_call_turn() -> None:
    calls = [
        {"name": "read_gauge", "arguments": {"station": "A"}},
        {"name": "read_gauge", "arguments": '{"station": "B"}'},
    ]
    row = {
        "conversations": [
            {"from": "human", "value": "Both gauges please"},
            {"from": "function_call", "value": json.dumps(calls)},
            {"from": "observation", "value": "A: 1 mm"},
            {"from": "observation", "value": "B: 2 mm"},
            {"from": "gpt", "value": "A had 1 mm, B 2 mm."},
        ],
        "tools": TOOLS,
    }
    t = load_bytes(orjson.dumps(row), "x.json")
    made = t.messages[1].tool_calls
    assert [c.parsed_arguments() for c in made] == [{"station": "A"}, {"station": "B"}]
    assert [m.tool_call_id for m in t.messages[2:4]] == [c.id for c in made]
    assert orjson.loads(dumps(t, "sharegpt")) == row


@pytest.mark.parametrize("layout", ["jsonl", "list"])
def test_glaive_file_round_trips(tmp_path: Path, layout: str) -> None:
    rows = [glaive_row(k, rounds=k % 3) for k in range(4)]
    path = tmp_path / f"glaive.{'jsonl' if layout == 'jsonl' else 'json'}"
    if layout == "jsonl":
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(rows, indent=2))
    for n, row in enumerate(rows, start=1):
        t = load(path, session=str(n))
        assert t.tool_call_count == (n - 1) % 3
        back = orjson.loads(dumps(t, "sharegpt"))
        assert (back[0] if layout == "list" else back) == row


def test_changed_call_is_written_as_a_function_call_turn() -> None:
    from dataclasses import replace

    t = load_bytes(orjson.dumps(glaive_row(2)), "x.json")
    m = t.messages[1]
    new_call = replace(m.tool_calls[0], arguments='{"city": "Ghent"}')
    t = replace(t, messages=(t.messages[0], replace(m, tool_calls=(new_call,)), *t.messages[2:]))
    turn = orjson.loads(dumps(t, "sharegpt"))["conversations"][1]
    assert turn["from"] == "function_call"
    assert json.loads(turn["value"]) == {"name": "lookup_station", "arguments": {"city": "Ghent"}}


def test_batch_compresses_every_conversation_as_a_good_line(tmp_path: Path) -> None:
    src = tmp_path / "glaive.jsonl"
    src.write_text("".join(json.dumps(glaive_row(k, rounds=6)) + "\n" for k in range(6)))
    out = tmp_path / "small.jsonl"
    code, stdout, err = run(
        "batch", str(src), "--target-tokens", "3000", "-o", str(out), "--workers", "1", "--json"
    )
    assert code == 0, err
    report = json.loads(stdout)
    assert report["bad_inputs"] == 0 and report["trajectories"] == 6
    assert report["compressed"] == 6 and report["tokens_saved"] > 0
    for line in out.read_text().splitlines():
        back = load_bytes(line.encode(), "x.json", "sharegpt")
        assert back.system_prompt and back.tools  # the top-level fields are kept
        senders = {t["from"] for t in json.loads(line)["conversations"]}
        assert "function_call" in senders or "observation" in senders


def test_bad_function_call_value_is_kept_verbatim_not_a_traceback() -> None:
    row = {
        "conversations": [
            {"from": "human", "value": "go"},
            {"from": "function_call", "value": '{"name": "read_gauge", "arguments": {broken'},
            {"from": "observation", "value": "oops"},
        ]
    }
    t = load_bytes(orjson.dumps(row), "x.json")
    assert t.messages[1].tool_calls[0].name == "read_gauge"
    assert any("invalid JSON arguments" in w for w in t.warnings)
    assert orjson.loads(dumps(t, "sharegpt")) == row


def test_unknown_sender_names_the_accepted_ones() -> None:
    row = {"conversations": [{"from": "robot", "value": "beep"}]}
    with pytest.raises(LoadError) as err:
        load_bytes(orjson.dumps(row), "x.json", "sharegpt")
    assert "conversations[0].from" in str(err.value) and "function_call" in str(err.value)


# ---------------------------------------------------------------- mini-SWE-agent


def mini_traj(steps: int = 10) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You can run one bash command per reply."},
        {
            "role": "user",
            "content": "<pr_description>\nThe tokenizer drops tabs.\n</pr_description>",
        },
    ]
    for i in range(steps):
        msgs.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: read part {i}.\n\n```bash\nsed -n '{i},+150p' lex/tab.py\n```",
            }
        )
        body = "\n".join(
            f"{j:4d}  col = expand_tabs(row_{i}[{j}], width={j % 8})" for j in range(150)
        )
        msgs.append(
            {"role": "user", "content": f"<returncode>0</returncode>\n<output>\n{body}\n</output>"}
        )
    msgs.append({"role": "assistant", "content": "I will just answer without a command."})
    msgs.append(
        {
            "role": "user",
            "content": "Please always provide EXACTLY ONE action in triple backticks.",
        }
    )
    msgs.append(
        {"role": "assistant", "content": "```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT\n```"}
    )
    return {
        "info": {
            "exit_status": "Submitted",
            "submission": "",
            "model_stats": {"instance_cost": 0.02, "api_calls": steps + 2},
            "config": {"model": {"model_name": "gpt-4o"}},
        },
        "messages": msgs,
        "trajectory_format": "mini-swe-agent-1",
    }


def test_mini_swe_agent_observations_are_tool_output() -> None:
    t = load_bytes(orjson.dumps(mini_traj()), "run.traj.json")
    assert t.format == "swe-agent"
    users = [m for m in t.messages if m.role is Role.USER]
    assert [m.is_real_user for m in users] == [True, False]  # the task; the format error
    assert users[1].meta.injected_kind == "observation"
    tools = [m for m in t.messages if m.role is Role.TOOL]
    assert len(tools) == 10 and t.tool_call_count == 10
    first = t.messages[2].tool_calls[0]
    assert first.parsed_arguments() == {"command": "sed -n '0,+150p' lex/tab.py"}
    assert tools[0].tool_call_id == first.id and tools[0].text.startswith("<returncode>0")


def test_mini_swe_agent_compress_saves_real_tokens(tmp_path: Path) -> None:
    src = tmp_path / "run.traj.json"
    src.write_text(json.dumps(mini_traj(), indent=1))
    out = tmp_path / "small.json"
    code, stdout, err = run(
        "compress", str(src), "--at", "12", "--json", "-o", str(out), "--to", "openai"
    )
    assert code == 0, err
    report = json.loads(stdout)
    assert report["status"] == "compacted"
    assert report["saved"]["tokens"] > 5000 and report["digests"]["count"] > 0
    assert len(load(out).messages) < len(mini_traj()["messages"])
    # The summary lists the commands run; no tool output appears as an ask.
    code, stdout, err = run("summarize", str(src), "--at", "12", "--json")
    assert code == 0, err
    summary = json.loads(stdout)["summary"]
    assert "sed -n '1,+150p' lex/tab.py" in summary and "<returncode>" not in summary


def test_reply_with_two_bash_blocks_ran_nothing() -> None:
    doc = mini_traj(steps=1)
    doc["messages"][2]["content"] = "Try both:\n```bash\nls\n```\nor\n```bash\npwd\n```"
    doc["messages"][3]["content"] = "Please always provide EXACTLY ONE action, found 2 actions."
    t = load_bytes(orjson.dumps(doc), "run.traj.json")
    assert not t.messages[2].tool_calls
    assert t.messages[3].role is Role.USER and t.messages[3].meta.injected_kind == "observation"
