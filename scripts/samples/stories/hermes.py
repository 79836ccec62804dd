"""The Hermes samples: demo.json, the gateway session and state.db.

Their steps (``data/stories/{demo,gateway,state_db}.jsonl``, see ``steps``) are user
messages, assistant messages whose tool calls :class:`HermesTools` computes from the repo as
it stands (the test runs are recorded output, ``data/runs/``), and changes to the world
between them (a file written, a mark for the manifest).
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

from tinyjuice.formats._hermes_state import STATE_SCHEMA

from ..common import (
    LATEST_ASK,
    Clock,
    Ids,
    data_json,
    data_text,
    dumps_args,
    fill,
    parallel_calls,
    rng_for,
    roles_counts,
    seeded,
    write_db,
    write_json,
    write_jsonl,
)
from ..project import Repo, ledgerline
from ..writers import HERMES_SYSTEM_PROMPT, HERMES_TOOLS, Call, ChatLog, tool_by_name
from .steps import LogStory


class HermesTools:
    """Hermes tool calls a step names, each computed from the repo at the time it runs."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def sh(self, command: str, output: str, code: int = 0, **extra: Any) -> Call:
        out = dumps_args({"output": output, "exit_code": code, "error": None})
        return ("terminal", {"command": command, **extra}, out)

    def read(self, path: str, offset: int | None = None, limit: int | None = None) -> Call:
        more = {"offset": offset, "limit": limit}
        args = {"path": path, **{k: v for k, v in more.items() if v is not None}}
        start, total = offset or 1, len(self.repo.lines(path))
        truncated = limit is not None and start - 1 + limit < total
        body: dict[str, Any] = {
            "content": self.repo.numbered(path, start, limit),
            "total_lines": total,
            "file_size": len(self.repo.text(path).encode()),
            "truncated": truncated,
        }
        if limit is not None and truncated:
            shown = f"showing {start}-{start + limit - 1} of {total} lines"
            body["hint"] = f"Use offset={start + limit} to continue reading ({shown})"
        return ("read_file", args, dumps_args(body))

    def edit(self, path: str, old: str, new: str) -> Call:
        args = {"mode": "replace", "path": path, "old_string": old, "new_string": new}
        diff = self.repo.patch(path, old, new)
        out = {"success": True, "diff": diff, "files_modified": [path]}
        return ("patch", args, dumps_args(out))

    def edit_many(self, path: str, edits: Sequence[tuple[str, str]]) -> Call:
        diff = self.repo.patch_many(path, edits)
        out = {"success": True, "diff": diff, "files_modified": [path]}
        return ("patch", {"mode": "patch", "patch": diff + "\n"}, dumps_args(out))


class HermesStory(LogStory):
    """Replays Hermes steps: ``user`` and ``assistant`` (its text, then its tool calls: each a
    ``$tool`` of :class:`HermesTools` or a literal ``[name, args, result]``) are
    :class:`ChatLog` calls; ``mark`` keeps the last message's index in ``marks`` for the
    manifest."""

    def __init__(self, logs: dict[str, ChatLog], tools: HermesTools, ids: Any = None) -> None:
        super().__init__(logs, tools, ids)
        self.marks: dict[str, Any] = {}

    def step_mark(self, name: str, step: dict[str, Any]) -> None:
        index = len(self.log.messages) - 1
        if isinstance(self.marks.get(name), list):
            self.marks[name].append(index)
        else:
            self.marks[name] = index


# ====================================================================== demo.json

START = datetime(2025, 9, 16, 8, 41, 7, 118233, tzinfo=UTC)


class DemoStory(HermesStory):
    """The demo's world: the repo (with the ``.env`` the agent reads) and its clock."""

    def __init__(self) -> None:
        self.ids, self.clock = seeded("demo", START)
        self.repo = ledgerline()
        self.repo.write("CHANGELOG.md", data_text("ledgerline/CHANGELOG.md"))
        self.repo.write(".env", data_text("text/env_file.txt"))  # fake, realistically shaped
        log, tools = ChatLog(self.ids, self.clock), HermesTools(self.repo)
        super().__init__({"demo": log}, tools, self.ids)
        self.marks["invoice_reads"] = []

    def step_write(self, value: list[Any], step: dict[str, Any]) -> None:
        self.repo.write(*self.resolve(value))

    def step_skip_hex(self, n: int, step: dict[str, Any]) -> None:
        self.ids.hex(n)  # an id the story drew here (a background process id)


def build_demo(out_dir: Path) -> dict[str, Any]:
    story = DemoStory()
    story.replay("demo")
    h: ChatLog = story.log
    shape = data_json("demo_session.json")  # the session log, its manifest entry's own keys
    doc = fill(
        shape["session"],
        start=START.replace(tzinfo=None).isoformat(),
        updated=story.clock.local(),
        system_prompt=HERMES_SYSTEM_PROMPT,
        tools=HERMES_TOOLS,
        count=len(h.messages),
        messages=h.messages,
    )
    write_json(out_dir / "demo.json", doc)  # (tests check its three reads, its long output)
    more = fill(
        shape["manifest"],
        session_id=doc["session_id"],
        prompt_chars=len(doc["system_prompt"]),
        tool_count=len(HERMES_TOOLS),
        parallel=parallel_calls(h.messages),
        latest_text=LATEST_ASK,
        **story.marks,
    )
    return h.entry("hermes", doc["model"], **more)


class GatewayStory(HermesStory):
    """The gateway's steps; ``stamp`` timestamps the messages written since the last one."""

    def __init__(self, log: ChatLog, tools: HermesTools, clock: Clock) -> None:
        super().__init__({"gateway": log}, tools)
        self.clock = clock
        self.stamps: list[str] = []

    def step_stamp(self, value: Any, step: dict[str, Any]) -> None:
        while len(self.stamps) < len(self.log.messages):
            self.stamps.append(self.clock.local())


def build_gateway(out_dir: Path) -> dict[str, Any]:
    ids, clock = seeded("gateway", datetime(2025, 9, 17, 7, 12, 40, 512000, tzinfo=UTC))
    h = ChatLog(ids, clock)
    schemas = data_json("tool_schemas.json")["hermes-gateway.jsonl"]
    tools = [tool_by_name(n) for n in schemas["hermes"]] + schemas["more"]
    story = GatewayStory(h, HermesTools(Repo({})), clock)
    story.replay("gateway")
    meta = fill(data_json("agent_records.json")["hermes-gateway"]["meta"], tools=tools)
    stamped = [{**m, "timestamp": ts} for m, ts in zip(h.messages, story.stamps, strict=True)]
    write_jsonl(out_dir / "hermes-gateway.jsonl", [meta, *stamped])
    more: dict[str, Any] = {"tools": len(tools), "session_id": meta["session_id"]}
    return h.entry("hermes", meta["model"], **more)


# ======================================================================== Hermes state.db


class StateStory(HermesStory):
    """The state.db's four message runs, replayed from ``data/stories/state_db.jsonl``: the old
    session, the child (before its in-place compaction), the compacted head and the new
    tail. ``session`` switches the log later messages go to; ``copy`` appends a copy of the
    last messages of another run (the exchange an in-place compaction keeps)."""

    STARTS: ClassVar[dict[str, datetime]] = {
        "old": datetime(2025, 9, 15, 14, 10, 22, 0, tzinfo=UTC),
        "child": datetime(2025, 9, 15, 15, 27, 40, 0, tzinfo=UTC),
        "head": datetime(2025, 9, 15, 16, 48, 5, 0, tzinfo=UTC),
        "tail": datetime(2025, 9, 15, 17, 20, 11, 0, tzinfo=UTC),
    }

    def __init__(self, rng: random.Random) -> None:
        ids = Ids(rng)
        self.logs = {name: ChatLog(ids, Clock(t, rng)) for name, t in self.STARTS.items()}
        super().__init__(self.logs, HermesTools(ledgerline()))

    def step_copy(self, value: tuple[str, int], step: dict[str, Any]) -> None:
        source, n = value
        self.log.messages.extend(json.loads(json.dumps(self.logs[source].messages[-n:])))


def _rows(
    log: ChatLog, session_id: str, first_id: int, active: int, stamps: Sequence[float] | None
) -> list[tuple[Any, ...]]:
    """``log``'s messages as ``messages`` rows, ids from ``first_id``; ``active`` 0 for the
    messages an in-place compaction replaced."""
    columns: dict[str, Any] = data_json("state_message.json")  # the columns, fixed values set
    rows = []
    n, t0 = len(log.messages), log.clock.now.timestamp()  # by default 30s apart, to the end
    stamps = stamps if stamps is not None else [round(t0 - 30 * (n - i), 3) for i in range(n)]
    for i, m in enumerate(log.messages):
        text, calls = m.get("content") or "", m.get("tool_calls")
        row = {**columns, **{k: m.get(k) for k in ("tool_call_id", "tool_name", "finish_reason")}}
        row.update(id=first_id + i, session_id=session_id, role=m["role"], content=text)
        row["tool_calls"] = dumps_args(calls) if calls else None
        row["timestamp"] = stamps[i]
        arguments = sum(len(c["function"]["arguments"]) for c in calls or [])
        row["token_count"] = max(1, len(text) // 4) + arguments // 4
        row.update(reasoning=m.get("reasoning"), active=active, compacted=1 - active)
        rows.append(tuple(row.values()))
    return rows


def _session_row(
    fixed: dict[str, Any], span: tuple[datetime, datetime | None], counts: tuple[int, int, int]
) -> tuple[Any, ...]:
    """One ``sessions`` row: ``fixed`` its id, parent, end reason, token figures and title
    (data/state_sessions.json), ``counts`` its messages, tool calls and assistant messages."""
    started, ended = span
    prompt = HERMES_SYSTEM_PROMPT.replace("Tuesday, September 16", "Monday, September 15")
    row: dict[str, Any] = {**data_json("state_session.json"), **fixed}  # every column, in order
    row.update(model_config=json.dumps(row["model_config"]), system_prompt=prompt)
    row.update(started_at=started.timestamp(), ended_at=ended.timestamp() if ended else None)
    row.update(message_count=counts[0], tool_call_count=counts[1], api_call_count=counts[2])
    return tuple(row.values())


def _assistants(msgs: Sequence[dict[str, Any]]) -> int:
    return sum(1 for m in msgs if m["role"] == "assistant")


def build_state_db(out_dir: Path) -> dict[str, Any]:
    story = StateStory(rng_for("state"))  # old session, child, compacted head, new tail
    story.replay("state_db")
    old, child, head, tail = story.logs.values()
    old_fixed, child_fixed = data_json("state_sessions.json")
    old_id, child_id = old_fixed["id"], child_fixed["id"]
    starts = StateStory.STARTS  # the in-place compaction happened when the head starts
    compact_at = starts["head"].timestamp()
    head_stamps = [round(compact_at + 0.001 * i, 3) for i in range(len(head.messages))]
    runs = [(old, old_id, 1, None), (child, child_id, 0, None), (head, child_id, 1, head_stamps)]
    runs_rows: list[list[tuple[Any, ...]]] = []
    for log, sid, active, stamps in [*runs, (tail, child_id, 1, None)]:
        runs_rows.append(_rows(log, sid, 1 + sum(map(len, runs_rows)), active, stamps))
    old_rows, child_rows, head_rows, tail_rows = runs_rows
    active_child = head.messages + tail.messages
    live_calls = head.tool_calls + tail.tool_calls
    old_counts = (len(old.messages), old.tool_calls, _assistants(old.messages))
    child_counts = (len(active_child), live_calls, _assistants(child.messages + tail.messages))
    old_row = _session_row(old_fixed, (starts["old"], starts["child"]), old_counts)
    child_row = _session_row(child_fixed, (starts["child"], None), child_counts)
    owner = "pid=48213:tid=140213906761536:agent=9f1c2e:nonce=5a7b19d3"
    lock = (child_id, owner, round(compact_at - 4.2, 3), round(compact_at - 4.2 + 300, 3))
    rows = old_rows + child_rows + head_rows + tail_rows
    tables = {"sessions": [old_row, child_row], "messages": rows, "compression_locks": [lock]}
    pragmas = ("PRAGMA journal_mode=DELETE", "PRAGMA page_size=4096")
    write_db(out_dir / "hermes-state.db", STATE_SCHEMA, tables, *pragmas)
    live_rows = head_rows + tail_rows
    manifest: dict[str, Any] = fill(
        data_json("state_manifest.json"),  # what a reader should find in the db
        old_id=old_id,
        child_id=child_id,
        live=_entry(active_child),
        inactive=len(child.messages),
        with_inactive=_entry(child.messages + active_child),
        old=_entry(old.messages),
        old_rows=len(old_rows),
        child_rows=len(child_rows) + len(live_rows),
        live_rows=len(live_rows),
        inactive_rows=len(child_rows),
        lock=lock[0],
    )
    return manifest


def _entry(msgs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    calls = sum(len(m.get("tool_calls") or ()) for m in msgs)
    return roles_counts([m["role"] for m in msgs], calls)
