"""Gemini CLI chat recordings: the session JSON and the JSONL log ($set / $rewindTo)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tinyjuice.formats import LoadError, detect, load, load_bytes
from tinyjuice.model import Role, Trigger
from tjui.cli import main

T = "2026-03-02T09:1{}:00.000Z"
SNAPSHOT = (
    "<state_snapshot>\n<overall_goal>Make the cache expiry test stable.</overall_goal>\n"
    "<key_knowledge>- TTL is read from settings.CACHE_TTL</key_knowledge>\n</state_snapshot>"
)


def _read_call(status: str, with_result: bool) -> dict[str, Any]:
    call: dict[str, Any] = {
        "id": "read_file-1711-0",
        "name": "read_file",
        "args": {"absolute_path": "/work/shop/cache.py"},
        "status": status,
        "timestamp": T.format(1),
        "displayName": "ReadFile",
    }
    if with_result:
        call["result"] = [
            {
                "functionResponse": {
                    "id": "read_file-1711-0",
                    "name": "read_file",
                    "response": {
                        "output": "def expired(entry):\n    return time.time() > entry.at"
                    },
                }
            }
        ]
    return call


def _answer() -> dict[str, Any]:
    return {
        "id": "g-2",
        "timestamp": T.format(3),
        "type": "gemini",
        "content": "The expiry check uses wall-clock time; freeze it in the test.",
        "tokens": {
            "input": 5200,
            "output": 80,
            "cached": 4000,
            "thoughts": 30,
            "tool": 0,
            "total": 5310,
        },
        "model": "gemini-2.5-pro",
    }


def jsonl_log() -> list[dict[str, Any]]:
    """A session log: a call written twice (upsert), a /compress, a rewind."""
    first = {
        "id": "g-1",
        "timestamp": T.format(1),
        "type": "gemini",
        "content": "",
        "thoughts": [
            {"subject": "Reading", "description": "the cache module", "timestamp": T.format(1)}
        ],
        "toolCalls": [_read_call("executing", False)],
        "model": "gemini-2.5-pro",
    }
    done = {
        **first,
        "toolCalls": [_read_call("success", True)],
        "tokens": {"input": 1800, "output": 40, "cached": 0, "thoughts": 12, "total": 1852},
    }
    return [
        {
            "sessionId": "7c0e1a52-5b1e-4c8e-9a41-0d3b2f6e8a11",
            "projectHash": "f" * 64,
            "startTime": T.format(0),
            "lastUpdated": T.format(0),
            "kind": "main",
        },
        {
            "id": "u-1",
            "timestamp": T.format(0),
            "type": "user",
            "content": [{"text": "Why does test_cache_expiry fail one run in ten?"}],
        },
        first,
        done,
        {"$set": {"lastUpdated": T.format(2)}},
        _answer(),
        {"id": "u-2", "timestamp": T.format(4), "type": "user", "content": "/compress"},
        {
            "id": "i-1",
            "timestamp": T.format(4),
            "type": "info",
            "content": "Chat history compressed from 5,310 to 910 tokens.",
        },
        {
            "$set": {
                "messages": [
                    {
                        "id": "s-1",
                        "timestamp": T.format(5),
                        "type": "user",
                        "content": [{"text": SNAPSHOT}],
                    },
                    {
                        "id": "s-2",
                        "timestamp": T.format(5),
                        "type": "gemini",
                        "content": [{"text": "Got it. Thanks for the additional context!"}],
                    },
                    _answer(),
                ]
            }
        },
        {"id": "u-3", "timestamp": T.format(6), "type": "user", "content": "Now freeze the clock."},
        {"id": "u-4", "timestamp": T.format(7), "type": "user", "content": "typo, ignore"},
        {"$rewindTo": "u-4"},
    ]


def write_jsonl(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_jsonl_log_is_replayed(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "session-2026-03-02T09-10-7c0e1a52.jsonl", jsonl_log())
    assert detect(path) == "gemini-cli"
    t = load(path)
    assert t.format == "gemini-cli" and t.session_id.startswith("7c0e1a52")
    roles = [m.role for m in t.messages]
    assert roles == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.USER,
        Role.USER,
        Role.ASSISTANT,
        Role.ASSISTANT,
        Role.USER,
    ]
    call = t.messages[1].tool_calls[0]
    assert call.name == "read_file" and call.parsed_arguments() == {
        "absolute_path": "/work/shop/cache.py"
    }
    assert t.messages[1].thinking[0].text == "Reading: the cache module"
    assert t.messages[2].tool_call_id == call.id and "time.time()" in t.messages[2].text
    assert t.messages[3].meta.injected_kind == "command"  # /compress is no ask
    assert t.messages[4].meta.is_summary and t.messages[4].text.startswith("<state_snapshot>")
    assert t.messages[-1].text == "Now freeze the clock."  # the rewound message is gone
    assert t.model == "gemini-2.5-pro"
    assert [(u.message_index, u.prompt_tokens, u.output_tokens) for u in t.usage] == [
        (1, 1800, 40),
        (6, 5200, 80),
    ]
    assert t.usage[1].cache_read_tokens == 4000 and t.usage[1].reasoning_tokens == 30
    assert [n["type"] for n in t.extra["notes"]] == ["info"]
    (event,) = t.compactions
    assert (event.message_index, event.summary_index) == (4, 4)
    assert event.trigger is Trigger.MANUAL and (event.pre_tokens, event.post_tokens) == (5310, 910)
    assert any("rewind" in w for w in t.warnings)


def test_session_json_document(tmp_path: Path) -> None:
    doc = {
        "sessionId": "0b9d5c7e-1111-4222-8333-944455556666",
        "projectHash": "a" * 64,
        "startTime": T.format(0),
        "lastUpdated": T.format(3),
        "messages": [
            {"id": "s-1", "timestamp": T.format(1), "type": "user", "content": SNAPSHOT},
            {"id": "s-2", "timestamp": T.format(1), "type": "gemini", "content": "Got it."},
            {
                "id": "u-9",
                "timestamp": T.format(2),
                "type": "user",
                "content": "List the failing tests",
            },
            {"id": "e-1", "timestamp": T.format(2), "type": "error", "content": "Quota exceeded"},
            {
                "id": "g-9",
                "timestamp": T.format(3),
                "type": "gemini",
                "content": "",
                "toolCalls": [
                    {
                        "id": "sh-1",
                        "name": "run_shell_command",
                        "args": {"command": "pytest -q"},
                        "status": "error",
                        "resultDisplay": "exit 1: 2 failed",
                    }
                ],
            },
        ],
    }
    path = tmp_path / "session-2026-03-02T09-10-0b9d5c7e.json"
    path.write_text(json.dumps(doc, indent=2))
    assert detect(path) == "gemini-cli"
    t = load(path)
    assert [m.role for m in t.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
    ]
    assert t.messages[4].meta.is_error and t.messages[4].text == "exit 1: 2 failed"
    (event,) = t.compactions
    assert event.message_index == 0 and event.trigger is Trigger.UNKNOWN
    assert t.extra["notes"][0]["content"] == "Quota exceeded"


def test_inspect_json_lists_the_compression(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "session-x.jsonl", jsonl_log())
    result = CliRunner().invoke(main, ["inspect", str(path), "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "gemini-cli"
    assert report["compactions"][0]["index"] == 4
    assert report["compactions"][0]["trigger"] == "manual"
    assert report["compactions"][0]["pre_tokens"] == 5310
    assert (report["context_window"], report["context_window_source"]) == (1_048_576, "model table")


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        ({"sessionId": "s", "projectHash": "p", "messages": "none"}, "$.messages"),
        ({"sessionId": "s", "projectHash": "p", "messages": [["x"]]}, "$.messages[0]"),
    ],
)
def test_bad_documents_name_the_path(doc: dict[str, Any], where: str) -> None:
    with pytest.raises(LoadError) as err:
        load_bytes(json.dumps(doc).encode(), "session-1.json", "gemini-cli")
    assert where in str(err.value)


def test_garbage_records_are_not_a_traceback() -> None:
    data = b'{"$set": {"messages": 5}}\n{"$rewindTo": "nothing"}\n{"id": "g", "type": "gemini", "toolCalls": "x", "content": 7, "tokens": [1]}\n'
    t = load_bytes(data, "session-2.jsonl")
    assert t.format == "gemini-cli"
    assert [m.role for m in t.messages] == [Role.ASSISTANT]
    with pytest.raises(LoadError):
        load_bytes(b'[{"role": "user", "content": "hi"}]', "x.json", "gemini-cli")


@pytest.mark.parametrize(
    ("model", "window"),
    [
        ("gemini-3-pro-preview", 1_048_576),
        ("gemini-1.5-pro-002", 2_097_152),
        ("gemini-2.0-flash", 1_048_576),
    ],
)
def test_gemini_models_have_their_window(model: str, window: int) -> None:
    from tinyjuice.models import resolve_context_window

    assert resolve_context_window(None, model)[:2] == (window, "model table")


def test_history_rewritten_after_compression_has_no_duplicate_calls() -> None:
    # After a compression the CLI writes the kept turns from its model history: the gemini
    # message keeps its toolCalls and gains functionCall parts, and the function responses
    # come back as a user turn (some without ids).
    call = {
        "id": "c-1",
        "name": "glob",
        "args": {"pattern": "*.py"},
        "status": "success",
        "result": [
            {"functionResponse": {"id": "c-1", "name": "glob", "response": {"output": "a.py"}}}
        ],
    }
    kept = {
        "id": "g-5",
        "type": "gemini",
        "toolCalls": [call],
        "content": [
            {"functionCall": {"id": "c-1", "name": "glob", "args": {"pattern": "*.py"}}},
            {"functionCall": {"name": "read_file", "args": {"absolute_path": "/a.py"}}},
        ],
    }
    responses = {
        "id": "u-5",
        "type": "user",
        "content": [
            {"functionResponse": {"id": "c-1", "name": "glob", "response": {"output": "a.py"}}},
            {"functionResponse": {"name": "read_file", "response": {"output": "print(1)"}}},
        ],
    }
    log = [
        {"sessionId": "s", "projectHash": "p"},
        {
            "$set": {
                "messages": [
                    {"id": "s-1", "type": "user", "content": [{"text": SNAPSHOT}]},
                    kept,
                    responses,
                ]
            }
        },
    ]
    t = load_bytes("".join(json.dumps(r) + "\n" for r in log).encode(), "session-3.jsonl")
    assert [m.role for m in t.messages] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.TOOL]
    calls = t.messages[1].tool_calls
    assert [c.name for c in calls] == ["glob", "read_file"]
    assert [m.tool_call_id for m in t.messages[2:]] == [c.id for c in calls]
    assert t.messages[3].text == "print(1)" and not any(m.meta.orphan for m in t.messages)
