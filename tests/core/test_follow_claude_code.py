"""Claude Code reading extended by appended lines equals a fresh load of the file.

The reader keeps its last reading of a followed file (chain, tree, messages) and, when
the new lines only continue the main chain, extends it instead of reading every line
again; any other change (a rewind, a compaction boundary, a sidechain, a result that
changes an earlier line's reading) reads the file whole. Either way the transcript is
exactly :func:`load_bytes`'s.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tinyjuice.formats import claude_code, load_appended, load_bytes
from tinyjuice.formats._io import Source

PATH = Path("/tmp/session.jsonl")
MODEL = "claude-sonnet-4-5-20250929"


class _Writer:
    def __init__(self) -> None:
        self.lines: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self.n = 0

    def _line(self, kind: str, parent: str | None = "", **kw: Any) -> dict[str, Any]:
        self.n += 1
        uuid = f"u{self.n:03d}"
        line = {
            "type": kind,
            "uuid": uuid,
            "parentUuid": self.leaf if parent == "" else parent,
            "isSidechain": False,
            "sessionId": "s1",
            "cwd": f"/work/{self.n // 7}",
            "timestamp": "2025-10-07T09:00:00.000Z",
            **kw,
        }
        self.lines.append(line)
        self.leaf = uuid
        return line

    def user(self, content: Any, **kw: Any) -> str:
        return str(self._line("user", message={"role": "user", "content": content}, **kw)["uuid"])

    def assistant(self, mid: str, blocks: list[dict[str, Any]], **kw: Any) -> str:
        message = {
            "id": mid,
            "role": "assistant",
            "model": MODEL,
            "content": blocks,
            "usage": {"input_tokens": 10, "cache_read_input_tokens": self.n * 100,
                      "cache_creation_input_tokens": 0, "output_tokens": 5},
        }  # fmt: skip
        return str(self._line("assistant", message=message, requestId=f"r-{mid}", **kw)["uuid"])

    def result(self, call: str, text: str, parent: str | None = "") -> str:
        content = [{"type": "tool_result", "tool_use_id": call, "content": text}]
        return str(self._line("user", parent, message={"role": "user", "content": content})["uuid"])

    def raw(self, line: dict[str, Any]) -> None:
        self.lines.append(line)

    def data(self) -> bytes:
        return b"".join(json.dumps(ln).encode() + b"\n" for ln in self.lines)


def _call(cid: str, name: str = "Bash") -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": {"command": "ls"}}


def _text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def _session() -> bytes:
    """Every shape the reader treats specially, one after another."""
    w = _Writer()
    w.raw({"type": "summary", "summary": "Early title", "leafUuid": "nowhere"})
    w.user("fix the build")
    # A streamed turn: three lines of one message.
    w.assistant("m1", [_text("Looking.")])
    w.assistant("m1", [_call("c1")])
    w.assistant("m1", [_call("c2", "Read")])
    # Parallel results: the second is parented on the first call's line (a sibling).
    first_call = w.lines[-2]["uuid"]
    w.result("c1", "ok 1")
    w.result("c2", "ok 2", parent=first_call)
    w.leaf = w.lines[-2]["uuid"]
    w.assistant("m2", [_text("Both ran.")])
    w._line("system", subtype="turn_duration", durationMs=5)
    w.raw({"type": "file-history-snapshot", "messageId": "x", "snapshot": {}})
    w.user("now the tests")
    fork = w.leaf
    w.assistant("m3", [_text("Running the tests."), _call("c3")])
    w.result("c3", "3 failed")
    # A rewind: the user goes back to the fork and asks again.
    w.leaf = fork
    w.user("no, first the lint")
    w.assistant("m4", [_text("Linting.")])
    w.user("thanks")
    w.assistant("m5", [_text("<synthetic>")])
    # A compaction boundary and its summary.
    logical = w.leaf
    w._line("system", None, subtype="compact_boundary", logicalParentUuid=logical,
            compactMetadata={"trigger": "auto", "preTokens": 9000})  # fmt: skip
    w.user("Summary of the above.", isCompactSummary=True)
    w.assistant("m6", [_text("Continuing."), _call("c4", "Edit")])
    w.result("c4", "edited")
    # A sidechain in the main file, then the main chain goes on.
    main_leaf = w.leaf
    w.leaf = None
    w._line("user", None, isSidechain=True, message={"role": "user", "content": "sub task"})
    w.lines[-1]["isSidechain"] = True
    w.leaf = main_leaf
    w.user("more", gitBranch="feature")
    w.assistant("m7", [_text("Done."), _call("c5")])
    w.assistant("m7", [_text("And one more thing.")])
    w.result("c5", "fine")
    w.raw({"type": "summary", "summary": "Build fixed", "leafUuid": w.leaf})
    w.user("bye")
    w.assistant("m8", [_text("Bye.")])
    return w.data()


def _cuts(data: bytes) -> list[int]:
    return [i + 1 for i, b in enumerate(data) if b == 0x0A]


@pytest.mark.parametrize("step", [1, 2, 3])
def test_appends_equal_a_fresh_load_after_every_append(step: int) -> None:
    data = _session()
    cuts = [*_cuts(data)[::step], len(data)]
    previous: Source | None = None
    for cut in cuts:
        got, previous = load_appended(data[:cut], previous, PATH)
        assert got == load_bytes(data[:cut], PATH), cut


def test_a_plain_append_extends_the_last_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    w = _Writer()
    w.user("hi")
    w.assistant("m1", [_text("Hello."), _call("c1")])
    w.result("c1", "ok")
    data = w.data()
    _, previous = load_appended(data, None, PATH)
    trees: list[object] = []
    real = claude_code._Tree

    def tree(lines: list[Any]) -> object:
        trees.append(lines)
        return real(lines)

    monkeypatch.setattr(claude_code, "_Tree", tree)
    w.assistant("m2", [_text("Streaming")])
    w.assistant("m2", [_text("continues.")])
    w.user("next")
    grown = w.data()
    got, _ = load_appended(grown, previous, PATH)
    assert trees == []  # no tree built again: the earlier reading was extended
    monkeypatch.undo()
    assert got == load_bytes(grown, PATH)
    assert len(got.messages) == 5


def test_a_rewind_reads_the_file_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    w = _Writer()
    first = w.user("hi")
    w.assistant("m1", [_text("Hello.")])
    data = w.data()
    _, previous = load_appended(data, None, PATH)
    w.leaf = first  # a new line parented on an earlier one
    w.assistant("m2", [_text("Hello again.")])
    grown = w.data()
    got, _ = load_appended(grown, previous, PATH)
    want = load_bytes(grown, PATH)
    assert got == want
    assert want.extra.get("abandoned_lines") == 1
