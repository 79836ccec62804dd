"""opencode sessions: opencode.db (session/message/part) and the older storage/ tree."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from fakehome import OPENCODE_SCHEMA

from tinyjuice.formats import LoadError, detect, load, opencode
from tinyjuice.model import Role, Trigger
from tjui.cli import main

SID = "ses_5f1c2a7b8ffeQk3LmN0pRsTuVw"
OLD = "ses_4e0b19a6affeAaBbCcDdEeFfGg"


def _tokens(inp: int, out: int, read: int) -> dict[str, Any]:
    return {"input": inp, "output": out, "reasoning": 0, "cache": {"read": read, "write": 0}}


def conversation() -> list[tuple[str, dict[str, Any], list[dict[str, Any]]]]:
    """(message id, message data, parts): a tool turn, a pruned output, an auto compaction."""
    asst = {
        "role": "assistant",
        "modelID": "claude-sonnet-4-5",
        "providerID": "anthropic",
        "mode": "build",
        "path": {"cwd": "/p", "root": "/p"},
        "cost": 0,
    }
    grep = {
        "type": "tool",
        "tool": "grep",
        "callID": "toolu_a1",
        "state": {
            "status": "completed",
            "input": {"pattern": "retry", "path": "src"},
            "output": "src/net.py:12: retry = 3\n" * 20,
            "title": "retry",
            "time": {"start": 3, "end": 4, "compacted": 9},
        },
    }
    bash = {
        "type": "tool",
        "tool": "bash",
        "callID": "toolu_a2",
        "state": {"status": "error", "input": {"command": "pytest tests/net"}, "error": "exit 1"},
    }
    return [
        (
            "msg_01",
            {"role": "user", "time": {"created": 1}},
            [{"type": "text", "text": "Why do network retries never stop?"}],
        ),
        (
            "msg_02",
            {**asst, "time": {"created": 2}, "tokens": _tokens(900, 60, 8000)},
            [
                {"type": "step-start"},
                {"type": "reasoning", "text": "Find the retry loop."},
                {"type": "text", "text": "Searching for the retry setting."},
                grep,
                bash,
                {"type": "step-finish", "tokens": _tokens(900, 60, 8000), "cost": 0},
            ],
        ),
        (
            "msg_03",
            {"role": "user", "time": {"created": 5}},
            [{"type": "compaction", "auto": True}],
        ),
        (
            "msg_04",
            {
                **asst,
                "time": {"created": 6},
                "summary": True,
                "mode": "compaction",
                "tokens": _tokens(30000, 700, 0),
            },
            [{"type": "text", "text": "Summary: retries read src/net.py; the loop ignores max."}],
        ),
        (
            "msg_05",
            {"role": "user", "time": {"created": 7}},
            [{"type": "text", "text": "Continue if you have next steps", "synthetic": True}],
        ),
        (
            "msg_06",
            {**asst, "time": {"created": 8}, "tokens": _tokens(1200, 50, 900)},
            [{"type": "text", "text": "Capping the loop at max_retries."}],
        ),
    ]


def make_db(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.executescript(OPENCODE_SCHEMA)
    conn.execute(
        "INSERT INTO session VALUES (?,?,?,?,?,?,?,?)",
        (OLD, "global", None, "/p", "older chat", "1.0", 1, 2),
    )
    conn.execute(
        "INSERT INTO session VALUES (?,?,?,?,?,?,?,?)",
        (SID, "global", None, "/p", "retry loop", "1.0", 5, 90),
    )
    conn.execute(
        "INSERT INTO message VALUES (?,?,?,?,?)",
        ("msg_00", OLD, 1, 1, json.dumps({"role": "user", "time": {"created": 1}})),
    )
    conn.execute(
        "INSERT INTO part VALUES (?,?,?,?,?,?)",
        (
            "prt_00",
            "msg_00",
            OLD,
            1,
            1,
            json.dumps({"type": "text", "text": "hello from the old chat"}),
        ),
    )
    for n, (mid, data, parts) in enumerate(conversation()):
        conn.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, SID, n, n, json.dumps(data)))
        for k, part in enumerate(parts):
            conn.execute(
                "INSERT INTO part VALUES (?,?,?,?,?,?)",
                (f"prt_{n:02d}{k:02d}", mid, SID, n, n, json.dumps(part)),
            )
    conn.commit()
    conn.close()
    return path


def make_tree(root: Path) -> Path:
    storage = root / "storage"
    info = {
        "id": SID,
        "projectID": "global",
        "directory": "/p",
        "title": "retry loop",
        "version": "0.9",
        "time": {"created": 5, "updated": 90},
    }
    (storage / "session" / "global").mkdir(parents=True)
    (storage / "session" / "global" / f"{SID}.json").write_text(json.dumps(info))
    for n, (mid, data, parts) in enumerate(conversation()):
        (storage / "message" / SID).mkdir(parents=True, exist_ok=True)
        record = {"id": mid, "sessionID": SID, **data}
        (storage / "message" / SID / f"{mid}.json").write_text(json.dumps(record))
        pdir = storage / "part" / mid
        pdir.mkdir(parents=True)
        for k, part in enumerate(parts):
            full = {"id": f"prt_{n:02d}{k:02d}", "sessionID": SID, "messageID": mid, **part}
            (pdir / f"prt_{n:02d}{k:02d}.json").write_text(json.dumps(full))
    return storage


def _check(t: Any) -> None:
    assert t.format == "opencode" and t.session_id == SID
    assert [m.role for m in t.messages] == [
        Role.USER,
        Role.ASSISTANT,
        Role.TOOL,
        Role.TOOL,
        Role.ASSISTANT,
        Role.USER,
        Role.ASSISTANT,
    ]
    calls = t.messages[1].tool_calls
    assert [c.name for c in calls] == ["grep", "bash"]
    assert t.messages[1].thinking[0].text == "Find the retry loop."
    assert t.messages[2].text == opencode.PRUNED_OUTPUT and t.messages[2].hints["pruned"]
    assert t.messages[3].meta.is_error and t.messages[3].text == "exit 1"
    assert t.messages[5].meta.injected_kind == "synthetic"
    (event,) = t.compactions
    assert event.message_index == event.summary_index == 4 and event.trigger is Trigger.AUTO
    assert t.messages[4].meta.is_summary
    assert t.model == "claude-sonnet-4-5"
    assert [(u.message_index, u.prompt_tokens) for u in t.usage] == [
        (1, 8900),
        (4, 30000),
        (6, 2100),
    ]


def test_database_reads_the_newest_session(tmp_path: Path) -> None:
    db = make_db(tmp_path / "opencode.db")
    assert detect(db) == "opencode"
    t = load(db)
    _check(t)
    assert any("2 sessions" in w for w in t.warnings)
    old = load(db, session=OLD)
    assert old.messages[0].text == "hello from the old chat"
    with pytest.raises(LoadError) as err:
        load(db, session="ses_nope")
    assert "no session 'ses_nope'" in str(err.value)


def test_storage_tree(tmp_path: Path) -> None:
    storage = make_tree(tmp_path / "opencode")
    info = storage / "session" / "global" / f"{SID}.json"
    assert detect(info) == "opencode"
    _check(load(info))
    _check(load(tmp_path / "opencode"))  # the data directory opens its newest session
    assert [s.id for s in opencode.list_sessions(storage)] == [SID]


def test_sessions_command_lists_a_database(tmp_path: Path) -> None:
    db = make_db(tmp_path / "opencode.db")
    result = CliRunner().invoke(main, ["sessions", str(db), "--json"])
    assert result.exit_code == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["id"] for r in rows] == [SID, OLD]


def test_inspect_json_lists_the_compaction(tmp_path: Path) -> None:
    db = make_db(tmp_path / "opencode.db")
    result = CliRunner().invoke(main, ["inspect", str(db), "--json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["format"] == "opencode"
    assert [(c["index"], c["trigger"]) for c in report["compactions"]] == [(4, "auto")]


def test_not_an_opencode_database(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(LoadError) as err:
        load(path, format="opencode")
    assert "not an opencode database" in str(err.value)
    orphan = tmp_path / "ses.json"
    orphan.write_text(json.dumps({"id": "ses_1", "time": {"created": 1}, "title": "t"}))
    with pytest.raises(LoadError) as err:
        load(orphan)
    assert "storage tree" in str(err.value)


def test_the_inspector_loader_reads_an_opencode_db_as_a_file(tmp_path: Path) -> None:
    # load_source took every SQLite file for a Hermes state.db ("no such table: sessions").
    from tinyjuice.store.commit import load_source

    loaded = load_source(make_db(tmp_path / "opencode.db"))
    assert loaded.format == "opencode" and not loaded.ref.is_db
    assert loaded.transcript.session_id == SID


def test_unreadable_records_are_skipped_and_reported(tmp_path: Path) -> None:
    storage = make_tree(tmp_path / "opencode")
    (storage / "part" / "msg_02" / "prt_9999.json").write_text("{torn")
    t = load(storage / "session" / "global" / f"{SID}.json")
    assert len(t.messages) == 7
    assert any("prt_9999.json" in w for w in t.warnings)
    db = make_db(tmp_path / "opencode.db")
    conn = sqlite3.connect(db)
    conn.execute("UPDATE part SET data = 'not json' WHERE id = 'prt_0101'")
    conn.commit()
    conn.close()
    t = load(db)
    assert any("part of msg_02" in w for w in t.warnings)
