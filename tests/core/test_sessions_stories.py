"""The sample generator's stories are data: ``scripts/samples/data`` holds what they quote,
``data/stories/*.jsonl`` the steps, and ``samples.stories.steps`` resolves the values inside
steps. (That the replayed stories write exactly the committed samples is
``test_sessions_generated``'s ``--check``.)"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = ROOT / "scripts"
DATA = SCRIPTS / "samples" / "data"


@pytest.fixture(scope="module")
def steps() -> Any:
    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.stories import steps as module
    finally:
        sys.path.remove(str(SCRIPTS))
    return module


class _Tools:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...]]] = []

    def read(self, path: str, line: int = 1) -> str:
        self.calls.append(("read", (path, line)))
        return f"<{path}:{line}>"


def test_values_resolve_files_refs_tools_and_parts(steps: Any) -> None:
    tools = _Tools()
    story = steps.Values(tools)
    story.names["t1"] = "toolu_01"
    step = {
        "file": {"$file": "text/codex_agents.txt"},
        "png": {"$png": "images/demo_invoice.png"},
        "ref": {"$ref": "t1"},
        "tool": {"$tool": ["read", "a.py", 3]},
        "joined": {"$": ["head ", {"$ref": "t1"}, " ", {"$tool": ["read", "b.py"]}]},
        "plain": {"$x": 1, "y": [{"$ref": "t1"}]},
    }
    got = story.resolve(step)
    assert got["file"] == (DATA / "text" / "codex_agents.txt").read_bytes().decode("utf-8")
    png = (DATA / "images" / "demo_invoice.png").read_bytes()
    assert got["png"] == base64.b64encode(png).decode("ascii")
    assert got["ref"] == "toolu_01"
    assert got["tool"] == "<a.py:3>"
    assert got["joined"] == "head toolu_01 <b.py:1>"
    assert got["plain"] == {"$x": 1, "y": ["toolu_01"]}
    # left to right, depth first: the order the story's draws and edits happened in
    assert tools.calls == [("read", ("a.py", 3)), ("read", ("b.py", 1))]


def test_tool_values_take_keyword_arguments(steps: Any) -> None:
    """``{"$tool": [name, *args], "kw": {...}}``: the Hermes stories' calls with options."""
    tools = _Tools()
    story = steps.Values(tools)
    story.names["n"] = 7
    assert story.resolve({"$tool": ["read", "a.py"], "kw": {"line": {"$ref": "n"}}}) == "<a.py:7>"
    assert tools.calls == [("read", ("a.py", 7))]


def test_hermes_stories_are_log_calls_replayed_by_the_shared_engine(steps: Any) -> None:
    """user/assistant steps are ChatLog calls (their arguments a list) run by LogStory."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.stories.hermes import HermesStory
    finally:
        sys.path.remove(str(SCRIPTS))
    assert issubclass(HermesStory, steps.LogStory)
    for name in ("demo", "gateway", "state_db"):
        text = (DATA / "stories" / f"{name}.jsonl").read_bytes().decode("utf-8")
        for line in text.split("\n")[:-1]:
            step = json.loads(line)
            if next(iter(step)) in ("user", "assistant"):
                assert isinstance(next(iter(step.values())), list), (name, line[:80])
                assert set(step) <= {"user", "assistant", "kw"}, (name, line[:80])


def test_log_story_calls_writer_methods_and_names_results(steps: Any) -> None:
    class Log:
        def __init__(self) -> None:
            self.seen: list[Any] = []
            self.prompt = 0

        def say(self, text: str, **kw: Any) -> list[str]:
            self.seen.append((text, kw))
            return [f"id{len(self.seen)}"]

    class Ids:
        def call(self) -> str:
            return "call_9"

    log = Log()
    story = steps.LogStory({"main": log}, None, Ids())
    for step in (
        {"say": ["hello"], "kw": {"loud": True}, "as": ["s1"]},
        {"set": ["prompt", 12]},
        {"ids": "call", "as": "c1"},
        {"say": [{"$ref": "s1"}]},
        {"say": [{"$ref": "c1"}]},
    ):
        story.play(step)
    assert log.seen == [("hello", {"loud": True}), ("id1", {}), ("call_9", {})]
    assert log.prompt == 12


def test_every_story_file_is_json_lines_of_single_kind_steps() -> None:
    stories = sorted((DATA / "stories").glob("*.jsonl"))
    assert {p.stem for p in stories} >= {"demo", "claude_code", "codex", "openai", "anthropic"}
    for path in stories:
        text = path.read_bytes().decode("utf-8")
        assert text.endswith("\n"), path.name
        for line in text.split("\n")[:-1]:
            step = json.loads(line)
            assert isinstance(step, dict) and step, (path.name, line[:80])


def test_claude_code_steps_are_log_calls_replayed_by_the_shared_engine(steps: Any) -> None:
    """The Claude Code story runs on the generic LogStory: every step but its three own
    (``patch``, ``save_tip``, ``set_line``) is a ClaudeCodeLog method or a LogStory step."""
    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.stories.claude_code import ClaudeCodeStory
        from samples.writers import ClaudeCodeLog
    finally:
        sys.path.remove(str(SCRIPTS))
    assert issubclass(ClaudeCodeStory, steps.LogStory)
    own = {"patch", "save_tip", "set_line", "ids", "set"}
    text = (DATA / "stories" / "claude_code.jsonl").read_bytes().decode("utf-8")
    for line in text.split("\n")[:-1]:
        kind = next(iter(json.loads(line)))
        assert kind in own or callable(getattr(ClaudeCodeLog, kind, None)), kind


def test_every_data_file_is_used_by_the_generator() -> None:
    code = "\n".join(p.read_text(encoding="utf-8") for p in (SCRIPTS / "samples").rglob("*.py"))
    stories = "\n".join(p.read_text(encoding="utf-8") for p in (DATA / "stories").glob("*.jsonl"))
    quoted = set(re.findall(r'"\$(?:file|png)": "([^"]+)"', stories))
    listed = json.loads((DATA / "project_files.json").read_text(encoding="utf-8"))
    for path in DATA.rglob("*"):
        if not path.is_file():
            continue
        name = path.relative_to(DATA).as_posix()
        project = name.removeprefix("ledgerline/")
        if name.startswith("ledgerline/") and (project in code or project in listed):
            continue  # a project file, read by its path (data/project_files.json, ...)
        stem = name.removeprefix("stories/").removesuffix(".jsonl")
        used = name in code or name in quoted or f'"{stem}"' in code
        assert used, f"{name} is not read by the generator"


def test_make_sessions_runs_as_a_script_from_anywhere(tmp_path: Path) -> None:
    # scripts/make_sessions.py finds its package (scripts/samples) whatever the cwd.
    out = subprocess.run(
        [sys.executable, str(SCRIPTS / "make_sessions.py"), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "--check" in out.stdout


def test_shapes_are_shared_by_both_generators() -> None:
    # One spelling of each native shape (data/shapes.json): gen.py and the writers use it.
    from benchmarks import gen
    from scripts.samples import shapes

    assert gen.shape is shapes.shape
    writers = (SCRIPTS / "samples" / "writers.py").read_text(encoding="utf-8")
    assert "from .shapes import shape" in writers
    plain = shapes.shape("tool_result_block", id="t1", content="out", is_error=None)
    assert list(plain) == ["type", "tool_use_id", "content"]
    cc = shapes.shape("cc_tool_result_block", id="t1", content="out", is_error=False)
    assert list(cc) == ["tool_use_id", "type", "content", "is_error"]
    assert shapes.tagged("think", "x") == "<think>\nx\n</think>"
    hermes = shapes.shape("hermes_call", id="c1", name="read_file", arguments="{}")
    assert list(hermes) == ["id", "call_id", "type", "function"]
    envelope = {"parent": "p", "sidechain": False, "cwd": "/w", "session": "s", "branch": "b"}
    line = {**envelope, "kind": "user", "uuid": "u", "timestamp": "t"}
    samples = shapes.shape("cc_line", **line, logical_parent=None, body={}, more={"message": 1})
    bench = shapes.shape("cc_line", **line, logical_parent=None, body={"message": 1}, more={})
    assert list(samples)[6:] == ["gitBranch", "type", "message", "uuid", "timestamp"]
    assert list(bench)[6:] == ["gitBranch", "message", "type", "uuid", "timestamp"]
    boundary = shapes.shape("cc_line", **line, logical_parent="p0", body={}, more={})
    assert list(boundary)[:2] == ["parentUuid", "logicalParentUuid"]
    swe = shapes.shape("swe_tool_call", id="c1", name="bash", arguments="{}")
    assert list(swe) == ["function", "id", "type"]
    assert list(swe["function"]) == ["arguments", "name"]
    records = json.loads((DATA / "agent_records.json").read_text(encoding="utf-8"))
    assert records["swe-agent"]["action"]["tool_calls"] == ["$call"]  # the shared record
    first, second = (shapes.shape("codex_user", text="hi") for _ in range(2))
    first["content"].append(shapes.shape("codex_image", url="data:x"))
    assert second["content"] == [{"type": "input_text", "text": "hi"}]  # fresh copies


def test_fill_leaves_out_optional_keys_and_spreads_dicts() -> None:
    from scripts.samples.common import fill

    template = {"a": "$a", "...more": None, "b": "$b?", "c": ["$a", {"d": "$b?"}]}
    assert fill(template, a=1, b=None, more={"x": 2}) == {"a": 1, "x": 2, "c": [1, {}]}
    assert list(fill(template, a=1, b=0, more={})) == ["a", "b", "c"]


def test_manifest_rules_are_data_one_per_sample() -> None:
    rules = json.loads((DATA / "rules.json").read_text(encoding="utf-8"))
    manifest = json.loads((ROOT / "sessions" / "manifest.json").read_text(encoding="utf-8"))
    assert list(rules) == list(manifest["files"])
    for name, entry in manifest["files"].items():
        assert list(entry)[:2] == ["format", "rule"] and entry["rule"] == rules[name]


def test_agent_records_are_templates_filled_by_name() -> None:
    # data/agent_records.json: fixed record shapes; "$name" strings are filled in, whole.
    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.common import fill
    finally:
        sys.path.remove(str(SCRIPTS))
    got = fill({"a": "$x", "b": ["$y", "lit", 3], "$k": {"c": "$x"}}, x={"v": "$y"}, y=2)
    assert got == {"a": {"v": "$y"}, "b": [2, "lit", 3], "$k": {"c": {"v": "$y"}}}
    with pytest.raises(KeyError):
        fill(["$missing"])
    spread = fill({"a": 1, "...more": None, "z": "$x"}, more={"b": 2, "c": 3}, x=0)
    assert list(spread.items()) == [("a", 1), ("b", 2), ("c", 3), ("z", 0)]
    records = json.loads((DATA / "agent_records.json").read_text(encoding="utf-8"))
    assert {"gemini-cli", "cline", "opencode", "mini-swe-agent"} <= set(records)


def test_noise_draws_its_length_then_the_bytes() -> None:
    """``common.noise`` keeps the random draws of the loops it replaced (length first)."""
    import random

    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.common import noise
    finally:
        sys.path.remove(str(SCRIPTS))
    a, b = random.Random(7), random.Random(7)
    expected = bytes(b.getrandbits(8) for _ in range(b.randint(180, 320)))
    assert noise(a, 180, 320) == expected
    assert a.random() == b.random()


def test_pasted_screenshots_are_the_png_data_files() -> None:
    """The screenshots in the samples are data/images/*.png, byte for byte."""
    images = {p.stem: p.read_bytes() for p in (DATA / "images").glob("*.png")}
    assert set(images) == {
        "demo_ci_dashboard",
        "demo_invoice",
        "openai_ci_dashboard",
        "anthropic_invoice",
    }
    sessions = "\n".join(
        (ROOT / "sessions" / n).read_text(encoding="utf-8")
        for n in ("demo.json", "openai-chat.json", "anthropic-messages.json")
    )
    for name, png in images.items():
        assert png.startswith(b"\x89PNG\r\n\x1a\n"), name
        assert base64.b64encode(png).decode() in sessions, name


def test_write_db_writes_the_same_bytes_for_the_same_rows(tmp_path: Path) -> None:
    """One SQLite writer serves state.db and opencode.db: fresh file, VACUUMed."""
    import sqlite3

    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.common import write_db
    finally:
        sys.path.remove(str(SCRIPTS))
    schema = "CREATE TABLE t (a INTEGER, b TEXT);"
    first, second = tmp_path / "a.db", tmp_path / "b.db"
    second.write_bytes(b"stale")
    for path in (first, second):
        write_db(path, schema, {"t": [(1, "x"), (2, "y")]}, "PRAGMA page_size=4096")
    assert first.read_bytes() == second.read_bytes()
    con = sqlite3.connect(second)
    assert con.execute("SELECT * FROM t").fetchall() == [(1, "x"), (2, "y")]
    con.close()


def test_claude_code_log_counts_excluded_lines_under_the_manifest_keys() -> None:
    """Sidechain and abandoned-branch messages and lines are counted under the manifest's
    own keys, so the entry takes ``excluded`` as it is."""
    import random
    from datetime import UTC, datetime

    sys.path.insert(0, str(SCRIPTS))
    try:
        from samples.common import Clock, Ids
        from samples.writers import ClaudeCodeLog
    finally:
        sys.path.remove(str(SCRIPTS))
    rng = random.Random(3)
    log = ClaudeCodeLog(Ids(rng), Clock(datetime(2025, 1, 1, tzinfo=UTC), rng), "s")
    log.prompt("main")
    log.sidechain = True
    log.prompt("sub")
    log.sidechain, log.counting = False, False
    log.prompt("abandoned")
    log.prompt("abandoned again")
    assert log.roles == ["user"]
    assert log.excluded == {
        "sidechain_messages": 1,
        "sidechain_lines": 1,
        "abandoned_branch_messages": 2,
        "abandoned_branch_lines": 2,
    }


def test_state_db_session_facts_are_data() -> None:
    """hermes-state.db's two sessions take their ids, parents, end reasons, token figures
    and titles from data/state_sessions.json."""
    import sqlite3

    fixed = json.loads((DATA / "state_sessions.json").read_text(encoding="utf-8"))
    assert {"id", "title", "input_tokens", "estimated_cost_usd"} <= set(fixed[0])
    con = sqlite3.connect(f"file:{ROOT / 'sessions' / 'hermes-state.db'}?mode=ro", uri=True)
    columns = ", ".join(fixed[0])
    rows = con.execute(f"SELECT {columns} FROM sessions ORDER BY started_at").fetchall()
    con.close()
    assert [tuple(s.values()) for s in fixed] == rows


def test_one_chat_log_writes_openai_and_hermes_messages() -> None:
    # ChatLog without a clock: OpenAI's shape; with one: a Hermes session log's.
    import random
    from datetime import UTC, datetime

    from scripts.samples.common import Clock, Ids
    from scripts.samples.writers import ChatLog

    rng = random.Random(1)
    openai, hermes = (
        ChatLog(Ids(rng)),
        ChatLog(Ids(rng), Clock(datetime(2025, 1, 1, tzinfo=UTC), rng)),
    )
    for log in (openai, hermes):
        log.user("hi")
        (cid,) = log.assistant(None, ("read_file", {"path": "a.py"}, "text"))
    assert list(openai.messages[1]) == ["role", "content", "tool_calls"]
    assert openai.messages[1]["tool_calls"][0]["id"].startswith("call_")
    assert list(hermes.messages[1]) == [
        "role",
        "content",
        "reasoning",
        "finish_reason",
        "tool_calls",
    ]
    assert list(hermes.messages[1]["tool_calls"][0])[:2] == ["id", "call_id"]
    assert hermes.messages[2]["tool_name"] == "read_file" and cid.startswith("toolu_")
    assert hermes.clock is not None and hermes.clock.now > datetime(2025, 1, 1, tzinfo=UTC)


def test_a_story_method_named_step_kind_plays_that_kind_of_step(steps: Any) -> None:
    class Story(steps.LogStory):
        seen: list[Any] = []

        def step_mark(self, value: str, step: dict[str, Any]) -> None:
            self.seen.append((value, step.get("note")))

    story = Story({"main": object()})
    story.play({"mark": "here", "note": 1})
    assert story.seen == [("here", 1)]


def test_anthropic_log_counts_thinking_blocks_and_tool_errors_as_it_writes() -> None:
    import random

    from scripts.samples.common import Ids
    from scripts.samples.writers import AnthropicLog

    log = AnthropicLog(Ids(random.Random(2)))
    log.user("go")
    log.assistant("hmm", None, ("view_file", {"path": "a"}, "x", False), ("run", {}, "boom", True))
    log.user("next")
    log.assistant(None, "done")
    assert (log.thinking_blocks, log.tool_errors, log.tool_calls) == (1, 1, 2)
    assert log.roles == ["user", "assistant", "tool", "tool", "user", "assistant"]


def test_recorded_test_runs_are_quoted_once_with_their_exit_code() -> None:
    """data/runs/<story>/NN.txt is pytest's output, quoted by its story's steps in order; a
    run given as a terminal call's output exits 1 exactly when its summary reports a
    failure or an error."""
    runs = sorted(p.relative_to(DATA).as_posix() for p in (DATA / "runs").rglob("*.txt"))
    quoted: list[str] = []
    for story in ("demo", "state_db"):
        text = (DATA / "stories" / f"{story}.jsonl").read_bytes().decode("utf-8")
        names = re.findall(rf'"\$file": "(runs/{story}/\d+\.txt)"', text)
        assert names == [f"runs/{story}/{i:02d}.txt" for i in range(1, len(names) + 1)]
        quoted += names
        calls = re.findall(
            rf'"\$tool": \["sh", "[^"]*", \{{"\$file": "(runs/{story}/[^"]+)"\}}(, 1)?\]', text
        )
        assert calls, story
        for name, code in calls:
            summary = (DATA / name).read_bytes().decode("utf-8").rsplit("\n", 1)[-1]
            assert re.fullmatch(r"(\d+ \w+, )*\d+ \w+ in \d+\.\d\ds", summary), name
            assert bool(code) == ("failed" in summary or "error" in summary), name
    assert quoted == runs


def test_the_generator_stays_under_two_thousand_lines() -> None:
    """Issue #15: the sample generator (make_sessions.py and samples/**.py, its data files
    not counted) stays under ~2k lines; what it says lives in data/."""
    code = [SCRIPTS / "make_sessions.py", *(SCRIPTS / "samples").rglob("*.py")]
    lines = sum(
        len(p.read_bytes().splitlines()) for p in code if "data" not in p.relative_to(SCRIPTS).parts
    )
    assert lines < 2_000, lines
