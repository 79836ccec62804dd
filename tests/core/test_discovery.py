"""Session discovery: every agent's store in a fake home, header rows, the row cache."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fakehome import NOW

from tinyjuice.discovery import RowCache, agent_roots, discover, fill_row
from tinyjuice.discovery.headers import HEAD_BYTES


def _by_title(rows: list) -> dict:
    return {r.title: r for r in rows}


def test_every_agent_is_found_with_its_header(fake_home: Path) -> None:
    rows = discover()
    agents = [r.agent for r in rows]
    assert sorted(set(agents)) == [
        "claude-code",
        "cline",
        "codex",
        "gemini",
        "hermes",
        "opencode",
        "roo",
    ]
    by = _by_title(rows)
    claude = by["Birdfeed RSS parser fix"]  # the summary line is the title
    assert claude.project == "/home/ana/src/birdfeed" and claude.messages_estimate == 4
    sub = by["Search the repo for guid handling."]
    assert sub.parent is not None and sub.parent.endswith(
        "6f1c2a90-1111-4c3e-9d2b-000000000001.jsonl"
    )
    codex = by["Add a --dry-run flag to the tide importer."]  # not the environment context
    assert codex.agent == "codex" and codex.project == "/home/ana/src/tidepool"
    db = by["Rename the kiln module to furnace."]
    assert db.agent == "hermes" and db.session == "20261118_080000_abc123"
    assert by["Summarise the open kiln issues."].path.endswith(".json")
    assert by["Explain the lantern build script."].agent == "gemini"
    quarry = by["Speed up the quarry tests"]
    assert quarry.session == "ses_0001" and quarry.messages_estimate == 3
    assert quarry.project == "/home/ana/src/quarry"
    assert by["Port the CLI to click"].messages_estimate == 2  # storage/message/<id>/*
    assert by["Fix the flaky upload test in kestrel."].agent == "cline"
    assert by["Write a README for the heron CLI."].agent == "roo"


def test_rows_are_newest_first_and_the_demo_is_last(
    fake_home: Path, sessions_dir: Path, tmp_path: Path
) -> None:
    demo = tmp_path / "demo.json"
    demo.write_bytes((sessions_dir / "demo.json").read_bytes())
    os.utime(demo, (NOW + 10, NOW + 10))  # newer than every session: still last
    rows = discover(extra=[("demo", demo)])
    assert rows[-1].agent == "demo"
    mtimes = [r.mtime for r in rows[:-1]]
    assert mtimes == sorted(mtimes, reverse=True)
    assert rows[0].title == "Birdfeed RSS parser fix"


def test_roots_follow_home_and_their_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("TJUI_CLAUDE_HOME")
    monkeypatch.delenv("TJUI_VSCODE_STORAGE")
    monkeypatch.setenv("TJUI_CODEX_HOME", str(tmp_path / "elsewhere"))
    roots = {r.agent: r for r in agent_roots()}
    assert roots["claude-code"].path == tmp_path / ".claude"
    assert roots["claude-code"].source == "default"
    assert (
        roots["codex"].path == tmp_path / "elsewhere" and roots["codex"].source == "TJUI_CODEX_HOME"
    )
    assert roots["roo"].path.name == "rooveterinaryinc.roo-cline"


def test_exact_figures_and_unreadable_rows(fake_home: Path) -> None:
    from fakehome import broken_session

    broken = broken_session(fake_home)
    rows = {r.title or r.path: fill_row(r) for r in discover()}
    codex = rows["Add a --dry-run flag to the tide importer."]
    assert codex.exact is not None and codex.exact.format == "codex"
    assert codex.exact.context_window == 272000 and codex.exact.live_tokens > 0
    sub = rows["Search the repo for guid handling."]
    assert sub.exact is not None and sub.exact.messages == 2  # its own sidechain
    for title, fmt in (
        ("Explain the lantern build script.", "gemini-cli"),
        ("Speed up the quarry tests", "opencode"),  # a session of opencode.db
        ("Port the CLI to click", "opencode"),  # opencode's JSON storage
        ("Fix the flaky upload test in kestrel.", "cline"),
    ):
        exact = rows[title].exact
        assert exact is not None and exact.format == fmt and exact.messages >= 2, title
    bad = rows[str(broken)]
    assert bad.exact is None and bad.error and "invalid JSON" in bad.error
    assert bad.to_dict()["status"] == "unreadable"


def test_live_tokens_count_only_after_the_last_compaction() -> None:
    from dataclasses import replace

    from tinyjuice.discovery import exact_figures, live_tokens
    from tinyjuice.formats import load
    from tinyjuice.tokens import count_transcript

    # Claude Code keeps the whole history: the live context starts at the compaction.
    path = Path(__file__).resolve().parents[2] / "sessions" / "claude-code.jsonl"
    transcript = load(path)
    assert exact_figures(path).compactions == len(transcript.compactions) >= 1
    counted = replace(transcript, usage=())  # no measurement: a plain count
    tokens = count_transcript(counted)
    start = transcript.compactions[-1].message_index
    static = tokens.system_prompt + tokens.tools
    assert live_tokens(counted, tokens) == static + tokens.prefix[-1] - tokens.prefix[start]
    # With measured usage, the last measurement (plus what came after it) wins.
    measured = transcript.usage[-1].prompt_tokens
    assert live_tokens(transcript, count_transcript(transcript)) >= measured


def test_the_cache_skips_unchanged_files_and_rereads_changed_ones(
    fake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = RowCache.open(tmp_path / "cache")
    first = discover(cache=cache)
    cache.save()
    assert (tmp_path / "cache" / "sessions-v1.json").is_file()
    calls: list[Path] = []
    import tinyjuice.discovery as discovery

    real = discovery.header_row
    monkeypatch.setattr(
        discovery, "header_row", lambda *a, **k: calls.append(a[1]) or real(*a, **k)
    )
    again = discover(cache=RowCache.open(tmp_path / "cache"))
    assert calls == [] and [r.to_dict() for r in again] == [r.to_dict() for r in first]
    codex = next(r for r in first if r.agent == "codex")
    with open(codex.path, "a", encoding="utf-8") as fh:
        fh.write(
            '{"timestamp":"t","type":"event_msg","payload":{"type":"user_message","message":"more"}}\n'
        )
    discover(cache=RowCache.open(tmp_path / "cache"))
    assert [str(p) for p in calls] == [codex.path]


def test_a_corrupt_cache_is_ignored(fake_home: Path, tmp_path: Path) -> None:
    (tmp_path / "cache").mkdir()
    (tmp_path / "cache" / "sessions-v1.json").write_bytes(b"{not json")
    assert len(discover(cache=RowCache.open(tmp_path / "cache"))) == 10


def test_rows_another_version_computed_are_ignored(
    fake_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row cache written by other code (an older row rule, another tinyjuice version)
    is not served: e.g. an error row for a state.db that today lists no row."""
    import orjson

    import tinyjuice.discovery.cache as row_cache

    cache = RowCache.open(tmp_path / "cache")
    rows = discover(cache=cache)
    cache.save()
    stored = tmp_path / "cache" / "sessions-v1.json"
    doc = orjson.loads(stored.read_bytes())
    planted = "planted by older code"
    for entry in doc["entries"].values():
        entry["rows"] = [{**r, "title": planted} for r in entry["rows"]]
    stored.write_bytes(orjson.dumps(doc))
    assert {r.title for r in discover(cache=RowCache.open(tmp_path / "cache"))} == {planted}
    monkeypatch.setattr(row_cache, "_ROWS", row_cache._ROWS + 1)
    again = discover(cache=RowCache.open(tmp_path / "cache"))
    assert [r.to_dict() for r in again] == [r.to_dict() for r in rows]
    monkeypatch.setattr(row_cache, "_ROWS", row_cache._ROWS - 1)
    doc["version"] = 1  # the format before rows carried the tinyjuice version
    stored.write_bytes(orjson.dumps(doc))
    assert planted not in {r.title for r in discover(cache=RowCache.open(tmp_path / "cache"))}


def test_two_writers_merge_their_entries(tmp_path: Path) -> None:
    from tinyjuice.discovery import SessionRow

    a, b = RowCache.open(tmp_path), RowCache.open(tmp_path)
    a.put("/x", 1, 1, [SessionRow("codex", "/x", 1, 1.0)])
    b.put("/y", 2, 2, [SessionRow("codex", "/y", 2, 2.0)])
    a.save()
    b.save()
    merged = RowCache.open(tmp_path)
    assert merged.get("/x", 1, 1) is not None and merged.get("/y", 2, 2) is not None


def test_a_large_jsonl_is_estimated_from_both_ends(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fakehome import _jsonl, claude_records

    sid = "7a7a7a7a-0000-4000-8000-000000000009"
    records = claude_records(sid, turns=1500)
    root = tmp_path / "claude"
    path = _jsonl(root / "projects" / "-p" / f"{sid}.jsonl", records, age=1)
    assert path.stat().st_size > 4 * HEAD_BYTES
    monkeypatch.setenv("TJUI_CLAUDE_HOME", str(root))
    (row,) = discover(agents=["claude-code"])
    assert 2400 <= (row.messages_estimate or 0) <= 3600  # 3,000 messages, estimated
    assert row.title == "Birdfeed RSS parser fix"


def test_a_state_db_without_sessions_lists_no_row(fake_home: Path) -> None:
    """Hermes creates ~/.hermes/state.db for other tables before any session exists:
    no row, rather than an "unreadable" one; a half Hermes schema is still reported."""
    import sqlite3

    db = next(p for p in fake_home.rglob("state.db"))
    db.unlink()
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE async_delegations (delegation_id TEXT PRIMARY KEY)")
    assert not [r for r in discover() if r.path == str(db)]
    with sqlite3.connect(db) as conn:
        conn.execute("CREATE TABLE sessions (id TEXT PRIMARY KEY)")
    rows = [r for r in discover() if r.path == str(db)]
    assert len(rows) == 1 and rows[0].error and "not a Hermes state.db" in rows[0].error
