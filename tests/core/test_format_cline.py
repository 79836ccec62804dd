"""Cline / Roo Code task directories: api_conversation_history.json and its side files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tinyjuice.formats import LoadError, detect, load, load_bytes
from tinyjuice.model import Role, Trigger
from tjui.cli import main

ACCEPTED = (
    "[condense] Result: The user has accepted the condensed conversation summary you generated."
)


def cline_history() -> list[dict[str, Any]]:
    """Cline's XML tool style: calls are text, results come back as user text blocks."""
    return [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "<task>\nAdd a --dry-run flag to deploy.sh\n</task>"},
                {
                    "type": "text",
                    "text": "<environment_details>\n# Current Working Directory\n/srv/app\n</environment_details>",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "<read_file>\n<path>deploy.sh</path>\n</read_file>"}
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "[read_file for 'deploy.sh'] Result:"},
                {"type": "text", "text": "#!/bin/sh\nrsync -a build/ prod:/srv/app\n" * 40},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {
                    "type": "text",
                    "text": "<condense>\n<context>\n1. Task: add --dry-run to deploy.sh\n2. deploy.sh runs rsync"
                    " to prod\n</context>\n</condense>",
                }
            ],
        },
        {"role": "user", "content": [{"type": "text", "text": ACCEPTED}]},
        {"role": "assistant", "content": [{"type": "text", "text": "What should I work on next?"}]},
    ]


def roo_history() -> list[dict[str, Any]]:
    """Roo Code's non-destructive condense: replaced turns tagged, a summary message."""
    return [
        {
            "role": "user",
            "content": [{"type": "text", "text": "<task>Speed up the CSV import</task>"}],
            "ts": 1,
        },
        {
            "role": "assistant",
            "ts": 2,
            "condenseParent": "c-1",
            "content": [
                {"type": "text", "text": "Profiling first."},
                {
                    "type": "tool_use",
                    "id": "toolu_01",
                    "name": "execute_command",
                    "input": {"command": "python -m cProfile import_csv.py"},
                },
            ],
        },
        {
            "role": "user",
            "ts": 3,
            "condenseParent": "c-1",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01",
                    "content": "parse_row 81% of time\n" * 30,
                }
            ],
        },
        {
            "role": "user",
            "ts": 4,
            "isSummary": True,
            "condenseId": "c-1",
            "content": [
                {
                    "type": "text",
                    "text": "## Conversation Summary\nparse_row dominates; try csv.reader.",
                }
            ],
        },
        {
            "role": "assistant",
            "ts": 5,
            "content": [{"type": "text", "text": "Switching to csv.reader."}],
        },
    ]


def ui_messages(condense: bool) -> list[dict[str, Any]]:
    reqs = [
        {
            "ts": 10 + k,
            "type": "say",
            "say": "api_req_started",
            "text": json.dumps(
                {
                    "request": "…",
                    "tokensIn": 12 + k,
                    "tokensOut": 90,
                    "cacheWrites": 2400,
                    "cacheReads": 1000 * k,
                    "cost": 0.01,
                }
            ),
        }
        for k in range(3)
    ]
    out: list[dict[str, Any]] = [{"ts": 1, "type": "say", "say": "text", "text": "task"}, *reqs]
    if condense:
        out.append(
            {
                "ts": 20,
                "type": "say",
                "say": "condense_context",
                "contextCondense": {
                    "cost": 0.02,
                    "prevContextTokens": 48000,
                    "newContextTokens": 6100,
                    "summary": "parse_row dominates",
                },
            }
        )
    return out


def task_dir(tmp_path: Path, history: list[dict[str, Any]], ui: list[dict[str, Any]]) -> Path:
    d = tmp_path / "tasks" / "1731400000000"
    d.mkdir(parents=True)
    (d / "api_conversation_history.json").write_text(json.dumps(history))
    (d / "ui_messages.json").write_text(json.dumps(ui))
    meta = {
        "files_in_context": [],
        "model_usage": [
            {
                "ts": 1,
                "model_id": "claude-sonnet-4-20250514",
                "model_provider_id": "anthropic",
                "mode": "act",
            }
        ],
    }
    (d / "task_metadata.json").write_text(json.dumps(meta))
    return d


def test_cline_task_with_a_condense(tmp_path: Path) -> None:
    d = task_dir(tmp_path, cline_history(), ui_messages(condense=False))
    path = d / "api_conversation_history.json"
    assert detect(path) == "cline"
    t = load(d)  # the task directory opens its history
    assert t.format == "cline" and t.session_id == "1731400000000"
    assert t.model == "claude-sonnet-4-20250514"
    assert len(t.messages) == 6
    (event,) = t.compactions
    assert event.message_index == event.summary_index == 3
    assert event.trigger is Trigger.MANUAL and t.messages[3].meta.is_summary
    assert [(u.message_index, u.input_tokens, u.cache_read_tokens) for u in t.usage] == [
        (1, 12, 0),
        (3, 13, 1000),
        (5, 14, 2000),
    ]


def test_roo_task_with_a_context_condense(tmp_path: Path) -> None:
    d = task_dir(tmp_path, roo_history(), ui_messages(condense=True))
    t = load(d / "api_conversation_history.json")
    assert [m.role for m in t.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.USER,
        Role.ASSISTANT,
    ]
    assert t.messages[2].tool_call_id == "toolu_01"
    (event,) = t.compactions
    assert event.message_index == 3 and event.source_id == "c-1"
    assert (event.pre_tokens, event.post_tokens) == (48000, 6100)
    assert t.messages[3].meta.is_summary and not t.messages[3].is_real_user
    assert any("condenseParent" in w for w in t.warnings)


def test_roo_history_without_side_files_is_still_detected() -> None:
    t = load_bytes(json.dumps(roo_history()).encode(), "history.json")
    assert t.format == "cline" and len(t.compactions) == 1


def test_plain_anthropic_list_stays_anthropic(tmp_path: Path) -> None:
    msgs = [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t", "name": "x", "input": {}}],
        },
    ]
    path = tmp_path / "messages.json"
    path.write_text(json.dumps(msgs))
    assert detect(path) == "anthropic"


def test_inspect_json_lists_the_condense(tmp_path: Path) -> None:
    d = task_dir(tmp_path, roo_history(), ui_messages(condense=True))
    result = CliRunner().invoke(
        main, ["inspect", str(d / "api_conversation_history.json"), "--json"]
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "cline"
    assert [(c["index"], c["pre_tokens"]) for c in report["compactions"]] == [(3, 48000)]


def test_bad_side_files_are_warnings_and_bad_history_is_a_load_error(tmp_path: Path) -> None:
    d = task_dir(tmp_path, cline_history(), [])
    (d / "ui_messages.json").write_text("{not json")
    t = load(d)
    assert any("ui_messages.json" in w for w in t.warnings)
    (d / "api_conversation_history.json").write_text(
        json.dumps([{"role": "robot", "content": "x"}])
    )
    with pytest.raises(LoadError) as err:
        load(d, format="cline")
    assert "role" in str(err.value)


def test_roo_sliding_window_truncation_is_a_reset_without_summary() -> None:
    history = [
        {
            "role": "user",
            "ts": 1,
            "content": [{"type": "text", "text": "<task>Tidy the logs</task>"}],
        },
        {"role": "assistant", "ts": 2, "truncationParent": "t-1", "content": "Reading them."},
        {"role": "user", "ts": 3, "truncationParent": "t-1", "content": "go on"},
        {
            "role": "user",
            "ts": 4,
            "isTruncationMarker": True,
            "truncationId": "t-1",
            "content": [{"type": "text", "text": "[Sliding window truncation: 2 messages hidden]"}],
        },
        {"role": "assistant", "ts": 5, "content": "Done."},
    ]
    t = load_bytes(json.dumps(history).encode(), "api_conversation_history.json")
    (event,) = t.compactions
    assert (event.message_index, event.summary_index, event.trigger) == (3, None, Trigger.AUTO)
    assert t.messages[3].meta.injected_kind == "truncation_marker"
