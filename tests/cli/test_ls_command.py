"""`tjui ls`: the sessions of a fake home with every agent's store, as JSON and as a table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tjui.cli import main


def ls(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["ls", *args])
    return result.exit_code, result.stdout, result.stderr


def test_ls_json_lists_every_agent_newest_first_with_exact_figures(fake_home: Path) -> None:
    from fakehome import broken_session

    broken_session(fake_home)
    code, out, err = ls("--json")
    assert code == 0, err
    rows = json.loads(out)
    assert [r["agent"] for r in rows] == [
        "claude-code",
        "claude-code",
        "codex",
        "hermes",
        "hermes",
        "gemini",
        "opencode",
        "opencode",
        "cline",
        "roo",
        "codex",
        "demo",
    ]
    first = rows[0]
    assert first["title"] == "Birdfeed RSS parser fix"
    assert first["project"] == "/home/ana/src/birdfeed"
    assert first["messages_exact"] is True and first["messages"] == 4
    assert first["format"] == "claude-code" and first["compactions"] == 0
    assert first["live_tokens"] > 0 and first["context_window"] == 200000
    assert first["live_percent"] == round(100 * first["live_tokens"] / 200000, 1)
    codex = rows[2]
    assert codex["context_window"] == 272000 and codex["status"] == "exact"
    assert rows[5]["format"] == "gemini-cli" and rows[5]["status"] == "exact"
    broken = rows[-2]  # the oldest session: not a rollout at all
    assert broken["status"] == "unreadable" and "invalid JSON" in broken["error"]
    assert broken["messages_exact"] is False and broken["live_tokens"] is None
    demo = rows[-1]
    assert demo["agent"] == "demo" and demo["compactions"] == 1
    keys = {
        "agent",
        "path",
        "session",
        "project",
        "title",
        "last_activity",
        "size",
        "messages",
        "live_tokens",
        "live_percent",
        "compactions",
        "status",
    }
    assert all(keys <= set(r) for r in rows)


def test_ls_filters_by_agent_and_project(fake_home: Path) -> None:
    _, out, _ = ls("--json", "--agent", "codex")
    assert [r["agent"] for r in json.loads(out)] == ["codex"]
    _, out, _ = ls("--json", "--agent", "hermes", "--agent", "opencode")
    assert {r["agent"] for r in json.loads(out)} == {"hermes", "opencode"}
    _, out, _ = ls("--json", "--project", "QUARRY")
    assert [r["title"] for r in json.loads(out)] == [
        "Speed up the quarry tests",
        "Port the CLI to click",
    ]


def test_ls_quick_reads_headers_only(fake_home: Path) -> None:
    _, out, _ = ls("--json", "--quick", "--agent", "claude-code")
    rows = json.loads(out)
    assert all(r["status"] == "estimated" and r["live_tokens"] is None for r in rows)
    assert rows[0]["messages"] == 4  # the whole file was the sample


def test_ls_second_run_uses_the_cached_figures(
    fake_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ls("--json")
    import tinyjuice.discovery.figures as figures

    def boom(*a: object, **k: object) -> None:
        raise AssertionError("loaded again")

    monkeypatch.setattr(figures, "exact_figures", boom)
    code, out, err = ls("--json", "--agent", "codex")
    assert code == 0, err
    assert json.loads(out)[0]["status"] == "exact"


def test_ls_table_on_an_empty_machine_shows_the_demo() -> None:
    code, out, _ = ls()
    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("agent") and "live tokens" in lines[0]
    assert lines[1].startswith("demo") and lines[-1] == "1 session"


def test_config_lists_the_session_stores(fake_home: Path) -> None:
    result = CliRunner().invoke(main, ["config", "--json"])
    stores = json.loads(result.stdout)["session_stores"]
    roots = {r["agent"]: r for r in stores["roots"]}
    assert roots["codex"]["source"] == "TJUI_CODEX_HOME" and roots["codex"]["exists"] is True
    text = CliRunner().invoke(main, ["config"]).stdout
    assert "session stores" in text and "$TJUI_GEMINI_HOME" in text


def test_ls_shows_an_escape_code_in_a_title_instead_of_sending_it() -> None:
    """A title holding a terminal escape (a session that began with command output)
    is printed with the escape shown, as the inspector's browser shows it."""
    from tjui.commands.ls import _fit

    cell = _fit("<local-command-stdout>\x1b[2mCompacted\x1b[22m", 48, right=False)
    assert "\x1b" not in cell
    assert "␛[2mCompacted" in cell
    assert len(cell) == 48


def test_visible_needs_no_textual() -> None:
    import subprocess
    import sys

    code = "import sys, tjui.visible; print('textual' in sys.modules, 'rich' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "False"]
