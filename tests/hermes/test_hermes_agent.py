"""A real Hermes AIAgent (hermes-agent from PyPI, in its own venv) compacts through the
tinyjuice engine against a scripted loopback server; tjui then reads, explains, commits
on and undoes that state.db.

The venv is ``$TJUI_HERMES_VENV`` (default ``~/.cache/tjui/hermes-venv-<version>``);
``.ci/run`` creates it. Without it the test is skipped and says how to create it.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from fake_openai import serve

pytestmark = pytest.mark.hermes

ROOT = Path(__file__).resolve().parents[2]
HERMES_VERSION = "0.19.0"
VENV = Path(
    os.environ.get("TJUI_HERMES_VENV")
    or Path.home() / ".cache" / "tjui" / f"hermes-venv-{HERMES_VERSION}"
)
PY = VENV / "bin" / "python"
TJUI = Path(sys.executable).parent / "tjui"

CONFIG = """\
model:
  default: fake-model
  provider: custom
  context_length: 100000
context:
  engine: tinyjuice
plugins:
  enabled:
    - tinyjuice
"""


def _hermes_venv() -> Path:
    if not PY.exists():
        if os.environ.get("TJUI_REQUIRE_HERMES"):
            pytest.fail(f"TJUI_REQUIRE_HERMES is set but there is no venv at {VENV}")
        pytest.skip(
            f"no hermes-agent venv at {VENV}: create it with `python -m venv {VENV} && "
            f"{VENV}/bin/pip install hermes-agent=={HERMES_VERSION}` (.ci/run does), "
            "or point TJUI_HERMES_VENV at one"
        )
    probe = "import tinyjuice, run_agent; print(tinyjuice.__file__)"
    out = subprocess.run([str(PY), "-c", probe], capture_output=True, text=True, timeout=120)
    if not out.stdout.strip().startswith(str(ROOT / "core")):
        # This checkout's tinyjuice, editable, next to hermes-agent (its entry point too).
        subprocess.run(
            [str(PY), "-m", "pip", "install", "-q", "-e", str(ROOT / "core")],
            check=True,
            timeout=300,
        )
    return VENV


def _tjui(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(TJUI), *args], capture_output=True, text=True, env=env, timeout=120)


def _drive(home: Path, turns: int) -> tuple[dict[str, Any], Any]:
    server, script = serve(tokens_per_char=12.0)
    try:
        base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        out = home / "run.json"
        env = {**os.environ, "HERMES_HOME": str(home), "NO_COLOR": "1"}
        driver = ROOT / "tests" / "hermes" / "drive_hermes.py"
        proc = subprocess.run(
            [str(PY), str(driver), base_url, str(turns), str(out)],
            capture_output=True,
            text=True,
            env=env,
            cwd=home,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        return json.loads(out.read_text()), script
    finally:
        server.shutdown()


def test_hermes_compacts_through_tinyjuice(tmp_path: Path) -> None:
    _hermes_venv()
    home = tmp_path / "hermes-home"
    home.mkdir()
    (home / "config.yaml").write_text(CONFIG)
    run, script = _drive(home, turns=4)

    # Hermes loaded the engine from the entry point and compacted through it.
    assert run["engine_class"] == "tinyjuice.hermes.engine.TinyjuiceEngine"
    status = run["status"]
    assert status["engine"] == "tinyjuice" and status["compression_count"] >= 1
    assert status["threshold_tokens"] == 75_000
    assert status["threshold_rule"].startswith("threshold 75,000")
    done = [s["last_compaction"] for s in run["statuses"] if s["last_compaction"]]
    compacted = [c for c in done if c["status"] == "compacted"]
    assert compacted, done
    first = compacted[0]
    assert first["tokens_after"] < first["tokens_before"]
    assert first["messages_after"] < first["messages_before"]
    # The summary came through Hermes' auxiliary client from the loopback server.
    assert first["summary_kind"] == "llm" and first["summary_provider"] == "hermes-auxiliary"
    assert script.summaries >= 1
    assert status["last_decision"]["threshold_tokens"] == 75_000

    # Hermes wrote the result to its state.db: archived rows and the summary live.
    db = home / "state.db"
    with sqlite3.connect(db) as con:
        archived = con.execute("select count(*) from messages where active = 0").fetchone()[0]
        live = [r[0] or "" for r in con.execute("select content from messages where active = 1")]
    assert archived > 0
    assert any("Keep the release checklist moving." in text for text in live)

    env = {**os.environ, "XDG_DATA_HOME": str(tmp_path / "data"), "NO_COLOR": "1"}
    inspect = _tjui("inspect", str(db), "--json", env=env)
    assert inspect.returncode == 0, inspect.stderr
    assert run["session_id"] in inspect.stdout
    # tjui explain, told the window Hermes used, states the engine's own rule and finds
    # the compaction Hermes wrote (its summary, the tokens after it).
    explain = _tjui("explain", str(db), "--json", "--context-window", "100000", env=env)
    assert explain.returncode == 0, explain.stderr
    explained = json.loads(explain.stdout)
    assert explained["threshold_tokens"] == status["threshold_tokens"]
    assert status["threshold_rule"] in explained["threshold_explanation"]
    assert len(explained["events"]) >= 1
    assert explained["events"][-1]["post_tokens"] > 0

    before = json.loads(inspect.stdout)
    commit = _tjui(
        "compress",
        str(db),
        "--commit",
        "--mode",
        "in-place",
        "--keep-last",
        "1",
        "--json",
        env=env,
    )
    assert commit.returncode == 0, commit.stderr
    assert json.loads(commit.stdout)["status"] == "compacted"
    undo = _tjui("undo", "--file", str(db), env=env)
    assert undo.returncode == 0, undo.stderr
    assert "verified" in undo.stdout
    after = json.loads(_tjui("inspect", str(db), "--json", env=env).stdout)
    assert after == before
