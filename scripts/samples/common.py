"""Shared plumbing of the generator: paths, seeds, ids, clocks, JSON, manifest entries."""

from __future__ import annotations

import json
import random
import sqlite3
import string
import uuid
from collections.abc import Iterable
from contextlib import closing
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
DATA = Path(__file__).resolve().parent / "data"
SEED = "tjui-sessions-v1"
CWD = "/home/maya/src/ledgerline"
SUMMARY_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY]"
LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
LATEST_ASK = "Now make the retry logic in src/app/payments/client.py idempotent and add a test."
ROLE_ORDER = ("system", "developer", "user", "assistant", "tool")


def data_bytes(name: str) -> bytes:
    """A data file's bytes (the screenshots stories paste are ``images/*.png``)."""
    return (DATA / name).read_bytes()


def data_text(name: str) -> str:
    """A data file's text, byte for byte (no newline translation)."""
    return data_bytes(name).decode("utf-8")


def data_json(name: str) -> Any:
    return json.loads(data_text(name))


def rng_for(name: str) -> random.Random:
    """A generator seeded per file, so editing one sample never shifts another."""
    return random.Random(f"{SEED}:{name}")


_B62 = string.digits + string.ascii_letters


class Ids:
    """Provider-shaped identifiers drawn from one seeded generator."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def b62(self, n: int) -> str:
        return "".join(self.rng.choice(_B62) for _ in range(n))

    def hex(self, n: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(n))

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def toolu(self) -> str:
        return "toolu_01" + self.b62(22)

    def call(self) -> str:
        return "call_" + self.b62(24)

    def msg(self) -> str:
        return "msg_01" + self.b62(22)

    def req(self) -> str:
        return "req_011C" + self.b62(20)


class Clock:
    """A fixed-start UTC clock that moves forward by seeded amounts."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        self.now = start
        self.rng = rng

    def tick(self, lo: float = 1.0, hi: float = 6.0) -> datetime:
        ms = int(self.rng.uniform(lo, hi) * 1000)
        self.now += timedelta(milliseconds=ms)
        return self.now

    def z(self) -> str:
        """ISO-8601 with milliseconds and ``Z`` (Claude Code, Codex)."""
        return self.now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{self.now.microsecond // 1000:03d}Z"

    def local(self) -> str:
        """Naive ISO-8601 with microseconds (Hermes session logs)."""
        return self.now.replace(tzinfo=None).isoformat(timespec="microseconds")


def seeded(name: str, start: datetime) -> tuple[Ids, Clock]:
    """Sample ``name``'s ids and clock (from ``start``), drawing from one seeded generator."""
    rng = rng_for(name)
    return Ids(rng), Clock(start, rng)


def dumps_compact(obj: Any) -> str:
    """One JSON line the way the agents write them (no spaces, UTF-8 kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def dumps_args(obj: Any) -> str:
    """Tool-call arguments as Python's json.dumps renders them (what most agents send)."""
    return json.dumps(obj, ensure_ascii=False)


def fill(template: Any, /, **values: Any) -> Any:
    """A copy of a JSON ``template`` with each ``"$name"`` string replaced by ``values[name]``
    (a ``"$name?"`` value's key left out when it is None); a ``"...name"`` key (its value
    ignored) puts the items of the dict ``values[name]`` there."""
    return _fill(template, values)


def _fill(template: Any, values: dict[str, Any]) -> Any:
    kind = type(template)
    if kind is str:
        return values[template[1:]] if template[:1] == "$" else template
    if kind is list:
        return [_fill(v, values) for v in template]
    if kind is not dict:
        return template
    out: dict[str, Any] = {}
    for k, v in template.items():
        if k[:3] == "...":
            out.update(values[k[3:]])
        elif type(v) is str and v[:1] == "$":
            if v[-1] != "?":
                out[k] = values[v[1:]]
            elif values[v[1:-1]] is not None:
                out[k] = values[v[1:-1]]
        else:
            out[k] = _fill(v, values)
    return out


def write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def write_json(path: Path, doc: Any, indent: int | None = 2) -> None:
    """``doc`` as JSON (UTF-8 kept, indented unless ``indent`` is None), newline-terminated."""
    write_text(path, json.dumps(doc, ensure_ascii=False, indent=indent) + "\n")


def write_jsonl(path: Path, lines: Iterable[Any]) -> None:
    """One compact JSON object a line, newline-terminated."""
    write_text(path, "\n".join(dumps_compact(line) for line in lines) + "\n")


def write_db(
    path: Path, schema: str, tables: dict[str, list[tuple[Any, ...]]], *pragma: str
) -> None:
    """A fresh SQLite file: ``pragma`` statements, ``schema``, then each table's rows,
    VACUUMed so its bytes depend only on what went in."""
    path.unlink(missing_ok=True)
    with closing(sqlite3.connect(path)) as con:
        for statement in (*pragma, schema):
            con.executescript(statement)
        for table, rows in tables.items():
            con.executemany(f"INSERT INTO {table} VALUES ({','.join('?' * len(rows[0]))})", rows)
        con.commit()
        con.execute("VACUUM")


def parallel_calls(messages: list[dict[str, Any]]) -> int:
    """How many messages hold more than one tool call."""
    return sum(1 for m in messages if len(m.get("tool_calls") or ()) > 1)


def roles_counts(roles: list[str], tool_calls: int) -> dict[str, Any]:
    """A manifest entry's counts for the reader's roles (one a message; per role in
    :data:`ROLE_ORDER`, roles with none left out)."""
    by_role = {r: roles.count(r) for r in ROLE_ORDER if r in roles}
    counts = {"messages": len(roles), "roles": by_role, "tool_calls": tool_calls}
    return {**counts, "tool_results": roles.count("tool")}


def manifest_entry(
    fmt: str,
    roles: list[str],
    tool_calls: int,
    compactions: list[dict[str, Any]],
    model: str | None,
    images: int = 0,
    **more: Any,
) -> dict[str, Any]:
    """A sample's manifest entry: its format, the counts for the reader's roles (one a
    message), its compactions, images and model, then what else the sample records."""
    counts = roles_counts(roles, tool_calls)
    more = {"compactions": compactions, "images": images, "model": model, **more}
    return {"format": fmt, **counts, **more}


def compaction(index: int, trigger: str = "unknown", pre_tokens: int | None = None) -> Any:
    """A manifest compaction: the index of its summary message, its trigger, the prompt
    size before it when the file records one."""
    return {"index": index, "trigger": trigger, "pre_tokens": pre_tokens}


def prompt_span(prompts: list[int]) -> dict[str, int]:
    """The first, largest and last prompt sizes of a session's model calls."""
    return {"first": prompts[0], "peak": max(prompts), "last": prompts[-1]}


def noise(rng: random.Random, lo: int, hi: int) -> bytes:
    """Between ``lo`` and ``hi`` random bytes (signatures, encrypted reasoning)."""
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(lo, hi)))
