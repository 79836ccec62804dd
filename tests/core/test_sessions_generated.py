"""The bundled sample sessions are exactly what scripts/make_sessions.py generates, and the demo
session has the shapes the inspector and the compaction pipeline are demonstrated on.

These checks read the raw files (JSON, JSONL, SQLite) directly; they do not exercise the readers.
"""

from __future__ import annotations

import base64
import importlib.util
import json
import re
import shutil
import sqlite3
import struct
import sys
from collections import Counter
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "make_sessions.py"
SESSIONS = ROOT / "sessions"
SUMMARY_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY]"
LATEST_ASK = "Now make the retry logic in src/app/payments/client.py idempotent and add a test."
INVOICE = "src/app/billing/invoice.py"


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    name = "_tjui_make_sessions"
    spec = importlib.util.spec_from_file_location(name, SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the file executes
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def demo() -> dict[str, Any]:
    return json.loads((SESSIONS / "demo.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def manifest() -> dict[str, Any]:
    return json.loads((SESSIONS / "manifest.json").read_text(encoding="utf-8"))


def _calls_by_id(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {
        call["id"]: call["function"]
        for m in messages
        if m["role"] == "assistant"
        for call in m.get("tool_calls") or []
    }


def _tool_results(messages: list[dict[str, Any]], name: str) -> list[tuple[dict[str, Any], str]]:
    calls = _calls_by_id(messages)
    out = []
    for m in messages:
        if m["role"] == "tool" and calls[m["tool_call_id"]]["name"] == name:
            out.append((json.loads(calls[m["tool_call_id"]]["arguments"]), m["content"]))
    return out


# ------------------------------------------------------------------------------ drift


def test_committed_sessions_match_a_fresh_generation(generator: ModuleType, tmp_path: Path) -> None:
    assert generator.main(["--check", "--workdir", str(tmp_path)]) == 0


def test_check_reports_a_hand_edited_sample(generator: ModuleType, tmp_path: Path) -> None:
    copy = tmp_path / "sessions"
    shutil.copytree(SESSIONS, copy)
    doc = json.loads((copy / "openai-chat.json").read_text(encoding="utf-8"))
    doc["messages"][1]["content"][0]["text"] += " (edited)"
    (copy / "openai-chat.json").write_text(
        json.dumps(doc, ensure_ascii=False, indent=2) + "\n", encoding="utf-8"
    )
    work = tmp_path / "work"
    work.mkdir()
    assert generator.main(["--check", "--sessions", str(copy), "--workdir", str(work)]) == 1
    assert generator.check(copy, work) == ["openai-chat.json: differs from a fresh generation"]


def test_check_reports_every_file_a_builder_writes(generator: ModuleType, tmp_path: Path) -> None:
    """--check compares every file a fresh generation writes, the samples' second files too."""
    copy = tmp_path / "sessions"
    shutil.copytree(SESSIONS, copy)
    (copy / "cline-task" / "task_metadata.json").unlink()
    work = tmp_path / "work"
    work.mkdir()
    assert generator.check(copy, work) == [f"cline-task/task_metadata.json: missing from {copy}"]
    assert "cline-task/ui_messages.json" in generator.file_names(SESSIONS)


def test_check_compares_database_rows_not_only_bytes(generator: ModuleType, tmp_path: Path) -> None:
    copy = tmp_path / "sessions"
    shutil.copytree(SESSIONS, copy)
    db = copy / "hermes-state.db"
    con = sqlite3.connect(db)
    con.execute("UPDATE messages SET content = content || ' ' WHERE id = 1")
    con.commit()
    con.close()
    work = tmp_path / "work"
    work.mkdir()
    assert generator.check(copy, work) == ["hermes-state.db: differs from a fresh generation"]


# ----------------------------------------------------------------------- demo shapes


def test_sample_state_db_uses_the_readers_schema(generator: ModuleType) -> None:
    # The Hermes state.db schema is written once, in the reader, and the generator uses it.
    from tinyjuice.formats import _hermes_state

    assert generator.STATE_SCHEMA is _hermes_state.STATE_SCHEMA
    with sqlite3.connect(SESSIONS / "hermes-state.db") as conn:
        columns = [r[1] for r in conn.execute("PRAGMA table_info(sessions)")]
    assert "compression_fallback_streak" in columns and "source" in columns


def test_demo_is_a_long_hermes_session_log(demo: dict[str, Any]) -> None:
    for key in (
        "session_id",
        "model",
        "base_url",
        "platform",
        "session_start",
        "last_updated",
        "system_prompt",
        "tools",
    ):
        assert demo[key], key
    assert demo["model"] == "anthropic/claude-sonnet-4"
    assert len(demo["messages"]) >= 300
    assert demo["message_count"] == len(demo["messages"])
    assert len(demo["system_prompt"]) > 10_000
    names = {t["function"]["name"] for t in demo["tools"]}
    assert {"terminal", "read_file", "patch", "delegate_task", "vision_analyze", "todo"} <= names
    assert {"mcp__github__create_issue", "mcp__github__list_prs"} <= names
    assert len(demo["tools"]) == 12


def test_demo_tool_calls_and_results_pair_up(demo: dict[str, Any]) -> None:
    messages = demo["messages"]
    seen: set[str] = set()
    answered: set[str] = set()
    for m in messages:
        for call in m.get("tool_calls") or []:
            assert call["id"] == call["call_id"]
            assert call["type"] == "function"
            json.loads(call["function"]["arguments"])
            seen.add(call["id"])
        if m["role"] == "tool":
            assert m["tool_call_id"] in seen, "a tool result answers a call made before it"
            assert m["name"] == m["tool_name"]
            answered.add(m["tool_call_id"])
    assert answered == seen
    parallel = [len(m["tool_calls"]) for m in messages if len(m.get("tool_calls") or ()) > 1]
    assert sum(1 for n in parallel if 2 <= n <= 3) >= 2


def test_demo_reads_invoice_py_three_times_identically(demo: dict[str, Any]) -> None:
    reads = [
        content
        for args, content in _tool_results(demo["messages"], "read_file")
        if args == {"path": INVOICE}
    ]
    assert len(reads) == 3
    assert len(set(reads)) == 1
    body = json.loads(reads[0])
    assert 380 <= body["total_lines"] <= 450
    assert body["content"].count("\n") + 1 == body["total_lines"]


def test_demo_has_one_terminal_output_of_exactly_3000_lines(demo: dict[str, Any]) -> None:
    outputs = [json.loads(content) for _, content in _tool_results(demo["messages"], "terminal")]
    long = [o for o in outputs if len(o["output"].split("\n")) == 3000]
    assert len(long) == 1
    assert "passed" in long[0]["output"].split("\n")[-1]


def test_demo_has_a_failing_command_with_a_traceback(demo: dict[str, Any]) -> None:
    outputs = [json.loads(content) for _, content in _tool_results(demo["messages"], "terminal")]
    failing = [
        o
        for o in outputs
        if o["exit_code"] == 1 and "Traceback (most recent call last):" in o["output"]
    ]
    last_lines = [o["output"].rstrip().split("\n")[-1] for o in failing]
    assert any(line.startswith("decimal.InvalidOperation") for line in last_lines)


def test_demo_has_two_small_real_png_images(demo: dict[str, Any]) -> None:
    urls = [
        part["image_url"]["url"]
        for m in demo["messages"]
        if m["role"] == "user" and isinstance(m["content"], list)
        for part in m["content"]
        if part["type"] == "image_url"
    ]
    assert len(urls) == 2
    for url in urls:
        prefix = "data:image/png;base64,"
        assert url.startswith(prefix)
        png = base64.b64decode(url[len(prefix) :], validate=True)
        assert png.startswith(b"\x89PNG\r\n\x1a\n")
        assert png[12:16] == b"IHDR"
        width, height = struct.unpack(">II", png[16:24])
        assert width * height > 0
        assert 1_000 < len(png) < 20_000


def test_demo_has_an_early_structured_compaction_summary(demo: dict[str, Any]) -> None:
    indexes = [
        i
        for i, m in enumerate(demo["messages"])
        if m["role"] == "user"
        and isinstance(m["content"], str)
        and m["content"].startswith(SUMMARY_PREFIX)
    ]
    assert len(indexes) == 1
    assert 5 <= indexes[0] <= 10
    summary = demo["messages"][indexes[0]]["content"]
    for section in (
        "## Active Task",
        "## Completed Actions",
        "## Remaining Work",
        "## Relevant Files",
    ):
        assert section in summary


def test_demo_tool_output_holds_realistically_shaped_fake_secrets(demo: dict[str, Any]) -> None:
    env = [
        content
        for args, content in _tool_results(demo["messages"], "read_file")
        if args == {"path": ".env"}
    ]
    assert len(env) == 1
    text = json.loads(env[0])["content"]
    assert re.search(r"sk-proj-[A-Za-z0-9_-]{48}\b", text)
    assert re.search(r"\bAKIA[A-Z0-9]{16}\b", text)
    assert re.search(r"\bghp_[A-Za-z0-9]{36}\b", text)
    assert re.search(r"postgresql\+psycopg://\w+:[A-Za-z0-9]{20}@localhost", text)
    assert re.search(r"\beyJ[\w-]+\.eyJ[\w-]+\.[\w-]+", text)


def test_demo_ends_with_the_latest_user_ask(demo: dict[str, Any]) -> None:
    messages = demo["messages"]
    last_user = max(i for i, m in enumerate(messages) if m["role"] == "user")
    assert messages[last_user]["content"] == LATEST_ASK
    after = messages[last_user + 1 :]
    assert len(after) <= 1
    assert all(m["role"] == "assistant" and not m.get("tool_calls") for m in after)


# --------------------------------------------------------------- manifest and others


def test_manifest_counts_agree_with_the_raw_demo(
    demo: dict[str, Any], manifest: dict[str, Any]
) -> None:
    entry = manifest["files"]["demo.json"]
    messages = demo["messages"]
    assert entry["format"] == "hermes"
    assert entry["messages"] == len(messages)
    roles = Counter(m["role"] for m in messages)
    assert entry["roles"] == {r: n for r, n in roles.items() if n}
    assert entry["tool_calls"] == sum(len(m.get("tool_calls") or ()) for m in messages)
    assert entry["images"] == 2
    assert [c["index"] for c in entry["compactions"]] == [
        i
        for i, m in enumerate(messages)
        if isinstance(m["content"], str) and m["content"].startswith(SUMMARY_PREFIX)
    ]


def test_manifest_describes_every_sample(manifest: dict[str, Any]) -> None:
    formats = {"openai", "anthropic", "hermes", "claude-code", "codex", "sharegpt", "swe-agent",
               "gemini-cli", "cline", "opencode", "aider"}  # fmt: skip
    files = manifest["files"]
    assert set(files) == {
        "demo.json",
        "openai-chat.json",
        "anthropic-messages.json",
        "hermes-gateway.jsonl",
        "hermes-state.db",
        "claude-code.jsonl",
        "codex-rollout.jsonl",
        "sharegpt.jsonl",
        "swe-agent.traj",
        "gemini-cli-session.jsonl",
        "cline-task/api_conversation_history.json",
        "opencode.db",
        "aider-chat-history.md",
        "sharegpt-glaive.jsonl",
        "mini-swe-agent.traj.json",
    }
    for name, entry in files.items():
        assert (SESSIONS / name).is_file(), name
        assert entry["format"] in formats, name
        assert entry["rule"], name
        assert sum(entry["roles"].values()) == entry["messages"], name
        assert all(c["index"] < entry["messages"] for c in entry["compactions"]), name
    sharegpt = files["sharegpt.jsonl"]  # its trajectories' entries are sample entries too
    for trajectory in sharegpt["trajectories"]:
        assert (trajectory["format"], trajectory["model"]) == ("sharegpt", sharegpt["model"])


def test_manifest_counts_have_one_shape_everywhere(manifest: dict[str, Any]) -> None:
    """Every block of counts (a sample's, a session's, with inactive rows) is the same four
    keys in one order, with its formats' extras after the shared ones."""

    def blocks(value: Any) -> list[dict[str, Any]]:
        if isinstance(value, list):
            return [b for v in value for b in blocks(v)]
        if not isinstance(value, dict):
            return []
        inner = [b for v in value.values() for b in blocks(v)]
        return [value, *inner] if "roles" in value else inner

    found = blocks(manifest["files"])
    assert len(found) >= len(manifest["files"]) + 2
    for block in found:
        keys = [k for k in block if k in ("messages", "roles", "tool_calls", "tool_results")]
        assert keys == ["messages", "roles", "tool_calls", "tool_results"], block
        assert block["tool_results"] == block["roles"].get("tool", 0)


def test_state_db_has_a_rotated_parent_and_an_in_place_compacted_child() -> None:
    con = sqlite3.connect(f"file:{SESSIONS / 'hermes-state.db'}?mode=ro", uri=True)
    try:
        tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        assert {"sessions", "messages", "compression_locks"} <= tables
        sessions = con.execute(
            "SELECT id, parent_session_id, end_reason FROM sessions ORDER BY started_at"
        ).fetchall()
        assert len(sessions) == 2
        (old, old_parent, old_reason), (child, parent, _) = sessions
        assert old_parent is None and old_reason == "compression" and parent == old
        archived = con.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND active = 0 AND compacted = 1",
            (child,),
        ).fetchone()[0]
        live = con.execute(
            "SELECT content FROM messages WHERE session_id = ? AND active = 1 ORDER BY id", (child,)
        ).fetchall()
        assert archived > 0 and live
        assert live[0][0].startswith(SUMMARY_PREFIX)
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
    finally:
        con.close()


def test_claude_code_chain_is_consistent() -> None:
    lines = [
        json.loads(line)
        for line in (SESSIONS / "claude-code.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    uuids = {line["uuid"] for line in lines if "uuid" in line}
    boundaries = [line for line in lines if line.get("subtype") == "compact_boundary"]
    for line in lines:
        if "uuid" in line:
            assert line["parentUuid"] is None or line["parentUuid"] in uuids
    assert [b["compactMetadata"]["trigger"] for b in boundaries] == ["auto", "manual"]
    for b in boundaries:
        assert b["parentUuid"] is None and b["logicalParentUuid"] in uuids
    assert lines[0]["type"] == "summary" and lines[0]["leafUuid"] in uuids
    assert any(line.get("isSidechain") for line in lines)
    summaries = [line for line in lines if line.get("isCompactSummary")]
    assert [s["parentUuid"] for s in summaries] == [b["uuid"] for b in boundaries]


def test_samples_stay_small() -> None:
    total = sum(p.stat().st_size for p in SESSIONS.iterdir() if p.is_file())
    assert total < 3_000_000
