"""Hermes transcripts: session log JSON, gateway JSONL and state.db (SQLite)."""

from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from tinyjuice.formats import LoadError, LoadOptions, dumps, load, load_bytes, save
from tinyjuice.formats._hermes_db import create_schema, write_session
from tinyjuice.formats.hermes import SessionInfo, list_sessions
from tinyjuice.model import MediaPart, Message, Role, TextPart, ToolCall, Transcript, Trigger

SYSTEM = (
    "You are Hermes, a coding agent. Work in /home/dev/payments-api. Use the tools to "
    "inspect and change files; run the tests before you claim a fix."
)

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command in the project directory.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file with line numbers.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}, "offset": {"type": "integer"}},
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "patch",
            "description": "Replace text in a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_string": {"type": "string"},
                    "new_string": {"type": "string"},
                },
                "required": ["path", "old_string", "new_string"],
            },
        },
    },
]

SUMMARY = (
    "[CONTEXT COMPACTION — REFERENCE ONLY] Earlier turns were compacted into the summary "
    "below.\n## Active Task\nMake tests/test_refunds.py pass on main.\n## Done\n- Reproduced: "
    "test_partial_refund fails, 4.99 != 5.00.\n- Cause: ROUND_DOWN in src/payments/refunds.py:42."
)


def _call(call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "call_id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
    }


def _tool(call_id: str, name: str, content: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "name": name,
        "tool_name": name,
        "tool_call_id": call_id,
        "content": content,
    }


def coding_messages() -> list[dict[str, Any]]:
    """A realistic Hermes coding session (OpenAI-style messages plus Hermes keys)."""
    return [
        {
            "role": "user",
            "content": "CI on main fails in tests/test_refunds.py. Find out why and fix it.",
        },
        {
            "role": "assistant",
            "content": "I'll reproduce the failure first.",
            "reasoning": "Run the single failing test file with -x to see the first error.",
            "finish_reason": "tool_calls",
            "tool_calls": [
                _call("call_01", "terminal", {"command": "pytest tests/test_refunds.py -x -q"})
            ],
        },
        _tool(
            "call_01",
            "terminal",
            orjson.dumps(
                {
                    "output": "F\n___ test_partial_refund ___\nE   AssertionError: assert "
                    "Decimal('4.99') == Decimal('5.00')\n1 failed in 0.41s",
                    "exit_code": 1,
                }
            ).decode(),
        ),
        {
            "role": "assistant",
            "content": None,
            "reasoning": None,
            "finish_reason": "tool_calls",
            "tool_calls": [_call("call_02", "read_file", {"path": "src/payments/refunds.py"})],
        },
        _tool(
            "call_02",
            "read_file",
            "    40|def partial_refund(amount: Decimal, ratio: Decimal) -> Decimal:\n"
            "    41|    raw = amount * ratio\n"
            "    42|    return raw.quantize(Decimal('0.01'), rounding=ROUND_DOWN)\n",
        ),
        {
            "role": "assistant",
            "content": "The refund rounds down; the test expects banker's rounding.",
            "reasoning": "ROUND_DOWN truncates 4.995 to 4.99. Use ROUND_HALF_EVEN.",
            "finish_reason": "tool_calls",
            "tool_calls": [
                {
                    "id": "call_03",
                    "call_id": "call_03",
                    "type": "function",
                    # Truncated arguments, as real logs sometimes have: kept verbatim.
                    "function": {"name": "patch", "arguments": '{"path": "src/payments/ref'},
                }
            ],
        },
        _tool("call_03", "patch", '{"error": "arguments were not valid JSON"}'),
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here is the CI log screenshot, in case it helps."},
                {
                    "type": "image_url",
                    "image_url": {
                        "url": "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==",
                        "detail": "low",
                    },
                },
            ],
        },
        {
            "role": "assistant",
            "content": "Fixed: refunds now use ROUND_HALF_EVEN; tests/test_refunds.py passes.",
            "reasoning": "Patched and re-ran the test file: 12 passed.",
            "finish_reason": "stop",
        },
    ]


def session_log(messages: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    msgs = coding_messages() if messages is None else messages
    return {
        "session_id": "20250611_142233_9f3c1a",
        "model": "anthropic/claude-sonnet-4",
        "base_url": "https://openrouter.ai/api/v1",
        "platform": "cli",
        "session_start": "2025-06-11T14:22:33.104512",
        "last_updated": "2025-06-11T14:31:02.881203",
        "system_prompt": SYSTEM,
        "tools": TOOLS,
        "message_count": len(msgs),
        "messages": msgs,
    }


def _write_json(path: Path, doc: Any) -> Path:
    path.write_bytes(orjson.dumps(doc, option=orjson.OPT_INDENT_2))
    return path


def _write_jsonl(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _gateway_lines() -> list[bytes]:
    meta = {
        "role": "session_meta",
        "session_id": "tg_8812_20250612",
        "model": "nousresearch/hermes-4-70b",
        "platform": "telegram",
        "tools": TOOLS,
    }
    body = [
        {
            "role": "user",
            "content": "[CONTEXT SUMMARY]: We set up the repo and reproduced bug #88.",
        },
        {"role": "user", "content": "Now run the linter on src/ and tell me what it reports."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [_call("call_a1", "terminal", {"command": "ruff check src/"})],
        },
        _tool(
            "call_a1",
            "terminal",
            '{"output": "src/app.py:3:1: F401 unused import", "exit_code": 1}',
        ),
        {"role": "assistant", "content": "One finding: an unused import in src/app.py line 3."},
    ]
    return [orjson.dumps(meta)] + [orjson.dumps(m) for m in body]


# ------------------------------------------------------------------------ session log


def test_session_log_is_detected_and_read(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "session_20250611_142233_9f3c1a.json", session_log())
    t = load(path)
    assert t.format == "hermes"
    assert t.session_id == "20250611_142233_9f3c1a"
    assert t.model == "anthropic/claude-sonnet-4"
    assert t.system_prompt == SYSTEM
    assert [tool["function"]["name"] for tool in t.tools] == ["terminal", "read_file", "patch"]
    assert t.extra["platform"] == "cli"
    assert t.extra["base_url"] == "https://openrouter.ai/api/v1"
    assert t.extra["message_count"] == 9
    assert len(t.messages) == 9
    assert t.usage == ()

    first_call = t.messages[1]
    assert first_call.reasoning.startswith("Run the single failing test")
    assert first_call.extra["finish_reason"] == "tool_calls"
    (call,) = first_call.tool_calls
    assert call.id == "call_01" and call.name == "terminal"
    assert call.extra["call_id"] == "call_01"
    assert call.parsed_arguments() == {"command": "pytest tests/test_refunds.py -x -q"}

    result = t.messages[2]
    assert result.role is Role.TOOL
    assert result.tool_call_id == "call_01" and result.tool_name == "terminal"
    assert result.extra["tool_name"] == "terminal"

    assert t.messages[5].tool_calls[0].arguments == '{"path": "src/payments/ref'
    assert any("invalid JSON arguments" in w for w in t.warnings)
    image = t.messages[7].media[0]
    assert isinstance(image, MediaPart) and image.media_type == "image/png"
    assert t.compactions == ()


def test_session_log_round_trip_is_lossless_and_keeps_key_order(tmp_path: Path) -> None:
    original = orjson.dumps(session_log(), option=orjson.OPT_INDENT_2)
    path = tmp_path / "session_x.json"
    path.write_bytes(original)
    out = dumps(load(path), "hermes")
    assert orjson.loads(out) == orjson.loads(original)
    doc_in, doc_out = orjson.loads(original), orjson.loads(out)
    assert list(doc_out) == list(doc_in)
    for m_in, m_out in zip(doc_in["messages"], doc_out["messages"], strict=True):
        assert list(m_out) == list(m_in)
        if "tool_calls" in m_in:
            assert [list(c) for c in m_out["tool_calls"]] == [list(c) for c in m_in["tool_calls"]]


def test_session_log_round_trip_keeps_odd_values(tmp_path: Path) -> None:
    messages = [
        {"role": "user", "content": "hi", "timestamp": 1718115753.1},
        {"role": "assistant", "content": "", "reasoning": None, "tool_calls": []},
        {"role": "tool", "name": None, "tool_call_id": "c9", "content": None, "tool_name": None},
    ]
    doc = session_log(messages)
    doc["tools"] = None
    doc["model"] = None
    doc["message_count"] = 7  # inconsistent in the source: kept while the length is unchanged
    path = _write_json(tmp_path / "session_odd.json", doc)
    t = load(path)
    assert t.tools == () and t.model is None
    assert any("message_count says 7" in w for w in t.warnings)
    assert orjson.loads(dumps(t, "hermes")) == doc


def test_session_log_model_is_stable_after_save_and_reload(tmp_path: Path) -> None:
    first = load(_write_json(tmp_path / "session_a.json", session_log()))
    again_path = tmp_path / "session_b.json"
    save(first, again_path, "hermes")
    again = load(again_path)
    assert replace(again, path=None) == replace(first, path=None)


def test_message_count_follows_changed_messages(tmp_path: Path) -> None:
    t = load(_write_json(tmp_path / "session_c.json", session_log()))
    shorter = replace(t, messages=t.messages[:3])
    doc = orjson.loads(dumps(shorter, "hermes"))
    assert doc["message_count"] == 3 == len(doc["messages"])
    added = Message(role=Role.USER, parts=(TextPart("And the changelog?"),))
    longer = replace(t, messages=(*t.messages, added))
    doc = orjson.loads(dumps(longer, "hermes"))
    assert doc["message_count"] == 10 == len(doc["messages"])
    assert doc["messages"][-1] == {"role": "user", "content": "And the changelog?"}


def test_summary_messages_become_compaction_events(tmp_path: Path) -> None:
    messages = coding_messages()
    compacted = [messages[0], {"role": "user", "content": SUMMARY}, *messages[-2:]]
    t = load(_write_json(tmp_path / "session_d.json", session_log(compacted)))
    assert t.messages[1].meta.is_summary
    assert not t.messages[1].is_real_user
    (event,) = t.compactions
    assert event.message_index == 1 and event.summary_index == 1
    assert event.trigger is Trigger.UNKNOWN and event.pre_tokens is None


def test_writing_a_foreign_transcript_gives_a_loadable_session_log(tmp_path: Path) -> None:
    foreign = Transcript(
        messages=(
            Message(role=Role.USER, parts=(TextPart("List the files in src/."),)),
            Message(
                role=Role.ASSISTANT,
                tool_calls=(ToolCall("c1", "terminal", '{"command": "ls src"}'),),
            ),
            Message(
                role=Role.TOOL,
                parts=(TextPart("app.py\nrefunds.py"),),
                tool_call_id="c1",
                tool_name="terminal",
            ),
        ),
        format="openai",
        model="gpt-4.1",
        system_prompt=SYSTEM,
        session_id="abc123",
        extra={"_top_form": "list"},
    )
    doc = orjson.loads(dumps(foreign, "hermes"))
    assert list(doc) == [
        "session_id",
        "model",
        "system_prompt",
        "tools",
        "message_count",
        "messages",
    ]
    assert doc["messages"][2]["name"] == doc["messages"][2]["tool_name"] == "terminal"
    assert "_top_form" not in doc
    path = _write_json(tmp_path / "session_abc123.json", doc)
    back = load(path)
    assert back.format == "hermes" and back.session_id == "abc123"
    assert [m.text for m in back.messages] == [m.text for m in foreign.messages]
    assert back.messages[1].tool_calls[0].arguments == '{"command": "ls src"}'


def test_session_log_on_one_line_is_still_a_session_log(tmp_path: Path) -> None:
    path = tmp_path / "session_compact.json"
    path.write_bytes(orjson.dumps(session_log()) + b"\n")  # one line: looks like JSONL
    t = load(path)
    assert t.format == "hermes" and t.session_id == "20250611_142233_9f3c1a"
    assert len(t.messages) == 9
    assert orjson.loads(dumps(t, "hermes")) == session_log()


def test_forced_hermes_on_a_message_list_names_what_was_expected(tmp_path: Path) -> None:
    path = _write_json(tmp_path / "list.json", coding_messages())
    with pytest.raises(LoadError) as info:
        load(path, "hermes")
    assert "session_id and messages" in str(info.value)


# ------------------------------------------------------------------------ gateway JSONL


def test_gateway_jsonl_is_detected_and_read(tmp_path: Path) -> None:
    path = _write_jsonl(tmp_path / "gateway.jsonl", _gateway_lines())
    t = load(path)
    assert t.format == "hermes"
    assert t.session_id == "tg_8812_20250612"
    assert t.model == "nousresearch/hermes-4-70b"
    assert len(t.tools) == 3
    assert t.extra["platform"] == "telegram"
    assert [m.role for m in t.messages] == [
        Role.USER,
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.ASSISTANT,
    ]
    assert t.messages[0].meta.is_summary  # legacy "[CONTEXT SUMMARY]:" prefix
    assert t.messages[1].is_real_user
    assert [(e.message_index, e.summary_index) for e in t.compactions] == [(0, 0)]
    assert t.messages[3].tool_name == "terminal" and not t.messages[3].meta.orphan
    assert t.warnings == ()


def test_gateway_bad_line_names_the_line_and_lenient_skips_it(tmp_path: Path) -> None:
    lines = _gateway_lines()
    lines.insert(3, b'{"role": "assistant", "content": "unterminated')  # file line 4
    path = _write_jsonl(tmp_path / "gateway_bad.jsonl", lines)
    with pytest.raises(LoadError) as info:
        load(path)
    assert info.value.line == 4
    assert "line 4" in str(info.value)

    t = load(path, lenient=True)
    assert t.format == "hermes"
    assert len(t.messages) == 5
    assert any("skipped 1 malformed line(s): 4" in w for w in t.warnings)


def test_gateway_line_with_a_bad_message_names_the_line(tmp_path: Path) -> None:
    lines = _gateway_lines()
    lines.insert(2, orjson.dumps({"role": "narrator", "content": "meanwhile"}))  # file line 3
    path = _write_jsonl(tmp_path / "gateway_role.jsonl", lines)
    with pytest.raises(LoadError) as info:
        load(path)
    assert info.value.line == 3
    assert "unknown role 'narrator'" in str(info.value)

    t = load(path, lenient=True)
    assert len(t.messages) == 5
    assert any("not valid messages: 3" in w for w in t.warnings)


# ---------------------------------------------------------------------------- state.db

OLD_ID = "20250610_091500_a11ce0"
NEW_ID = "20250611_142233_9f3c1a"


def _transcript(messages: list[dict[str, Any]], tmp_path: Path, name: str) -> Transcript:
    return load(_write_json(tmp_path / name, session_log(messages)))


def build_state_db(tmp_path: Path) -> Path:
    """Two sessions: an older short one, and a newer one compacted in place."""
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    conn.execute("PRAGMA journal_mode=WAL")
    create_schema(conn)
    old = _transcript(
        [
            {"role": "user", "content": "What does `make bootstrap` do in this repo?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [_call("call_m1", "read_file", {"path": "Makefile"})],
            },
            _tool(
                "call_m1",
                "read_file",
                "bootstrap:\n\tpip install -e .[dev]\n\tpre-commit install\n",
            ),
            {
                "role": "assistant",
                "content": "It installs the package with dev extras and the git hooks.",
            },
        ],
        tmp_path,
        "old.json",
    )
    write_session(
        conn,
        old,
        OLD_ID,
        started_at=1718010900.0,
        ended_at=1718011200.0,
        end_reason="user_exit",
        counters={"input_tokens": 5120, "output_tokens": 210},
    )
    full = load(_write_json(tmp_path / "new.json", session_log()))
    write_session(
        conn,
        full,
        NEW_ID,
        started_at=1718115753.0,
        counters={
            "input_tokens": 48211,
            "output_tokens": 3120,
            "cache_read_tokens": 40960,
            "cache_write_tokens": 6100,
        },
    )
    msgs = coding_messages()
    compacted = _transcript(
        [
            msgs[0],
            {"role": "user", "content": SUMMARY},
            msgs[-1],
            {"role": "user", "content": "Great. Now add a changelog entry for the fix."},
        ],
        tmp_path,
        "compacted.json",
    )
    write_session(conn, compacted, NEW_ID, compression_fallback_streak=0)
    conn.execute(
        "INSERT INTO compression_locks VALUES (?, ?, ?, ?)",
        (NEW_ID, "gateway:4121", 1718116000.0, 1718116300.0),
    )
    conn.commit()
    conn.close()
    return db


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_state_db_opens_newest_session_and_says_which_exist(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    t = load(db)
    assert t.format == "hermes"
    assert t.session_id == NEW_ID
    assert t.model == "anthropic/claude-sonnet-4"
    assert t.system_prompt == SYSTEM
    assert any(
        f"state.db holds 2 sessions; opened {NEW_ID} (newest); pass --session to choose" in w
        for w in t.warnings
    )


def test_state_db_session_option_selects_a_session(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    t = load(db, session=OLD_ID)
    assert t.session_id == OLD_ID
    assert t.messages[0].text == "What does `make bootstrap` do in this repo?"
    assert len(t.messages) == 4
    assert not any("holds 2 sessions" in w for w in t.warnings)
    assert t.extra["end_reason"] == "user_exit"
    assert t.compactions == ()
    assert t.messages[2].tool_name == "read_file"
    assert t.messages[1].tool_calls[0].extra["call_id"] == "call_m1"


def test_state_db_unknown_session_lists_the_available_ids(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    with pytest.raises(LoadError) as info:
        load(db, session="20990101_000000_nope")
    text = str(info.value)
    assert "no session '20990101_000000_nope'" in text
    assert OLD_ID in text and NEW_ID in text


def test_state_db_reads_active_rows_with_a_compaction_event(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    t = load(db)
    assert [m.text for m in t.messages] == [
        "CI on main fails in tests/test_refunds.py. Find out why and fix it.",
        SUMMARY,
        "Fixed: refunds now use ROUND_HALF_EVEN; tests/test_refunds.py passes.",
        "Great. Now add a changelog entry for the fix.",
    ]
    assert all("active" not in m.extra for m in t.messages)
    ids = [int(m.meta.source_id) for m in t.messages]
    assert ids == sorted(ids) and min(ids) > 13  # 4 + 9 archived rows came first
    assert t.messages[1].meta.is_summary
    (event,) = t.compactions
    assert event.message_index == 1 and event.summary_index == 1
    assert event.trigger is Trigger.UNKNOWN and event.pre_tokens is None
    assert event.source_id == t.messages[1].meta.source_id
    assert event.extra["archived_rows"] == 9
    # Counters are per session: in extra, never turned into per-turn usage.
    assert t.usage == ()
    assert t.extra["input_tokens"] == 48211
    assert t.extra["cache_read_tokens"] == 40960
    assert t.extra["compression_fallback_streak"] == 0
    assert t.extra["compression_lock"]["holder"] == "gateway:4121"


def test_state_db_include_inactive_adds_flagged_archived_rows(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    t = load(db, include_inactive=True)
    assert len(t.messages) == 13
    archived, live = t.messages[:9], t.messages[9:]
    assert all(m.extra["active"] == 0 and m.extra["compacted"] == 1 for m in archived)
    assert all("active" not in m.extra for m in live)
    assert archived[1].tool_calls[0].name == "terminal"
    (event,) = t.compactions
    # The live context starts at the first new active row (the re-inserted head), the
    # summary after it; the archived rows before it are history.
    assert (event.message_index, event.summary_index) == (9, 10)
    assert event.resets_context and t.live_start == 9
    assert t.history_messages() == archived
    assert any("9 inactive row(s)" in w for w in t.warnings)


def test_in_place_compaction_without_a_summary_prefix_still_gets_an_event(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    write_session(conn, load(_write_json(tmp_path / "a.json", session_log())), "s1", started_at=1.0)
    tail = _transcript(
        [
            {"role": "user", "content": "Recap: refunds fixed."},
            {"role": "user", "content": "Next?"},
        ],
        tmp_path,
        "b.json",
    )
    write_session(conn, tail, "s1")
    conn.close()
    t = load(db)
    (event,) = t.compactions
    assert event.message_index == 0 and event.summary_index is None
    assert event.extra["archived_rows"] == 9
    assert not any("holds" in w for w in t.warnings)


def test_loading_never_modifies_the_database(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    before = _digest(db)
    files_before = sorted(p.name for p in tmp_path.iterdir())
    load(db)
    load(db, session=OLD_ID, include_inactive=True)
    list_sessions(db)
    assert _digest(db) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == files_before  # no -wal/-shm left behind


def test_live_wal_database_shows_uncheckpointed_rows_and_stays_unchanged(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    writer = sqlite3.connect(db)
    try:
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("PRAGMA wal_autocheckpoint=0")  # keep new rows in state.db-wal
        before = _digest(db)
        live = _transcript([{"role": "user", "content": "Is the deploy done?"}], tmp_path, "l.json")
        write_session(writer, live, "20250612_080000_live", started_at=1718179200.0)
        assert (tmp_path / "state.db-wal").stat().st_size > 0
        t = load(db)
        assert t.session_id == "20250612_080000_live"
        assert t.messages[0].text == "Is the deploy done?"
        assert any("holds 3 sessions" in w for w in t.warnings)
        assert _digest(db) == before
    finally:
        writer.close()


def test_not_a_database_is_a_load_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"SQLite format 3\x00" + b"\xff" * 200)
    with pytest.raises(LoadError, match="SQLite database"):
        load(path)


def test_state_db_from_bytes_without_a_file(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    t = load_bytes(db.read_bytes(), tmp_path / "gone" / "state.db", options=LoadOptions())
    assert t.session_id == NEW_ID and len(t.messages) == 4


def test_list_sessions_for_the_cli(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    sessions = list_sessions(db)
    assert [s.id for s in sessions] == [NEW_ID, OLD_ID]
    new, old = sessions
    assert isinstance(new, SessionInfo)
    assert new.message_count == 4  # active rows only
    assert old.message_count == 4
    # The first active user row is a real ask; a summary is never used as the title.
    assert new.title == "CI on main fails in tests/test_refunds.py. Find out why and fix it."
    assert old.title == "What does `make bootstrap` do in this repo?"
    assert old.end_reason == "user_exit" and old.ended_at == 1718011200.0
    assert new.started_at == 1718115753.0 and new.ended_at is None
    with pytest.raises(AttributeError):
        new.id = "x"  # type: ignore[misc]


def test_legacy_rotation_links_parent_and_child(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    base = load(_write_json(tmp_path / "a.json", session_log()))
    write_session(conn, base, "parent", started_at=10.0, ended_at=20.0, end_reason="compression")
    child = _transcript(
        [
            {"role": "user", "content": SUMMARY},
            {"role": "user", "content": "Continue with the changelog."},
        ],
        tmp_path,
        "c.json",
    )
    write_session(conn, child, "child", started_at=21.0, parent_session_id="parent")
    conn.close()
    infos = {s.id: s for s in list_sessions(db)}
    assert infos["child"].parent_session_id == "parent"
    assert infos["child"].title == "Continue with the changelog."
    parent = load(db, session="parent")
    assert parent.extra["child_session_ids"] == ["child"]
    assert parent.extra["end_reason"] == "compression"
    # The agent's live context continues in the child; the parent says where.
    assert parent.extra["continued_in"] == "child"
    assert any("--session child" in w for w in parent.warnings)
    kid = load(db)
    assert kid.session_id == "child" and kid.extra["parent_session_id"] == "parent"
    assert [e.summary_index for e in kid.compactions] == [0]
    # The child holds the compacted list itself: every message is live.
    assert kid.live_start == 0 and "continued_in" not in kid.extra


def test_db_round_trip_through_write_session(tmp_path: Path) -> None:
    db = build_state_db(tmp_path)
    t = load(db, session=OLD_ID)
    copy = tmp_path / "copy.db"
    conn = sqlite3.connect(copy)
    create_schema(conn)
    write_session(conn, t, "copy", started_at=5.0)
    conn.close()
    back = load(copy)

    def strip(m: Message) -> Message:
        return replace(m, meta=replace(m.meta, source_id=None))

    assert [strip(m) for m in back.messages] == [strip(m) for m in t.messages]


def test_missing_table_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "other.db"
    conn = sqlite3.connect(db)
    conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY, model TEXT, system_prompt TEXT,"
                 " parent_session_id TEXT, started_at REAL)")  # fmt: skip
    conn.commit()
    conn.close()
    with pytest.raises(LoadError) as info:
        load(db)
    text = str(info.value)
    assert "not a Hermes state.db" in text and "'messages'" in text
    with pytest.raises(LoadError, match=r"not a Hermes state\.db"):
        list_sessions(db)


def test_missing_column_is_a_clear_error(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    conn.execute("ALTER TABLE messages RENAME COLUMN role TO speaker")
    conn.commit()
    conn.close()
    with pytest.raises(LoadError) as info:
        load(db)
    assert "table 'messages' has no column 'role'" in str(info.value)


def test_bad_tool_calls_json_names_the_row(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    conn.execute("INSERT INTO sessions (id, started_at) VALUES ('s', 1.0)")
    conn.execute(
        "INSERT INTO messages (id, session_id, role, content, tool_calls, timestamp)"
        " VALUES (7, 's', 'assistant', NULL, '[{\"id\": ', 2.0)"
    )
    conn.commit()
    conn.close()
    with pytest.raises(LoadError) as info:
        load(db)
    assert "messages[id=7].tool_calls" in str(info.value)


def test_empty_database_with_schema_has_no_sessions(tmp_path: Path) -> None:
    db = tmp_path / "state.db"
    conn = sqlite3.connect(db)
    create_schema(conn)
    conn.close()
    with pytest.raises(LoadError, match="holds no sessions"):
        load(db)
    assert list_sessions(db) == []
