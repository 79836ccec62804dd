"""Shared plumbing of the generator: paths, seeds, ids, clocks, JSON, PNGs, fake secrets."""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import uuid
import zlib
from collections.abc import Callable, Iterable
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

# =============================================================================== utilities


def data_text(name: str) -> str:
    """A data file's text, byte for byte (no newline translation)."""
    return (DATA / name).read_bytes().decode("utf-8")


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


def dumps_compact(obj: Any) -> str:
    """One JSON line the way the agents write them (no spaces, UTF-8 kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def dumps_args(obj: Any) -> str:
    """Tool-call arguments as Python's json.dumps renders them (what most agents send)."""
    return json.dumps(obj, ensure_ascii=False)


def fill(template: Any, **values: Any) -> Any:
    """A copy of a JSON ``template`` with each ``"$name"`` string replaced by ``values[name]``;
    a ``"...name"`` key (its value ignored) puts the items of the dict ``values[name]`` there."""
    if isinstance(template, str):
        return values[template[1:]] if template.startswith("$") else template
    if isinstance(template, list):
        return [fill(v, **values) for v in template]
    if not isinstance(template, dict):
        return template
    out: dict[str, Any] = {}
    for k, v in template.items():
        if k.startswith("..."):
            out.update(values[k[3:]])
        else:
            out[k] = fill(v, **values)
    return out


def write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


def write_json(path: Path, doc: Any, indent: int | None = 2) -> None:
    """``doc`` as JSON (UTF-8 kept, indented unless ``indent`` is None), newline-terminated."""
    write_text(path, json.dumps(doc, ensure_ascii=False, indent=indent) + "\n")


def write_jsonl(path: Path, lines: Iterable[Any]) -> None:
    """One compact JSON object a line, newline-terminated."""
    write_text(path, "\n".join(dumps_compact(line) for line in lines) + "\n")


def chat_counts(messages: list[dict[str, Any]], tool_calls: int) -> dict[str, Any]:
    """A manifest entry's counts for a list of role-tagged messages."""
    return roles_counts([m["role"] for m in messages], tool_calls)


def parallel_calls(messages: list[dict[str, Any]]) -> int:
    """How many messages hold more than one tool call."""
    return sum(1 for m in messages if len(m.get("tool_calls") or ()) > 1)


def roles_counts(roles: list[str], tool_calls: int) -> dict[str, Any]:
    """A manifest entry's counts for the reader's roles, one a message."""
    return {
        "messages": len(roles),
        "roles": role_counts(roles),
        "tool_calls": tool_calls,
        "tool_results": roles.count("tool"),
    }


def compaction(
    index: int, trigger: str = "unknown", pre_tokens: int | None = None
) -> dict[str, Any]:
    """A manifest compaction: the index of its summary message, its trigger, the prompt
    size before it when the file records one."""
    return {"index": index, "trigger": trigger, "pre_tokens": pre_tokens}


def prompt_span(prompts: list[int]) -> dict[str, int]:
    """The first, largest and last prompt sizes of a session's model calls."""
    return {"first": prompts[0], "peak": max(prompts), "last": prompts[-1]}


def role_counts(roles: Iterable[str]) -> dict[str, int]:
    counts = {r: 0 for r in ROLE_ORDER}
    for r in roles:
        counts[r] += 1
    return {r: n for r, n in counts.items() if n}


# ==================================================================================== PNG


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _zlib_stored(raw: bytes) -> bytes:
    """A zlib stream of stored deflate blocks: identical bytes under every zlib build."""
    out = bytearray(b"\x78\x01")
    for start in range(0, max(len(raw), 1), 65535):
        block = raw[start : start + 65535]
        final = 1 if start + 65535 >= len(raw) else 0
        out += bytes([final]) + struct.pack("<HH", len(block), len(block) ^ 0xFFFF) + block
    out += struct.pack(">I", zlib.adler32(raw))
    return bytes(out)


def make_png(width: int, height: int, pixel: Callable[[int, int], tuple[int, int, int]]) -> bytes:
    rows = bytearray()
    for y in range(height):
        rows.append(0)
        for x in range(width):
            rows.extend(pixel(x, y))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", ihdr)
        + _png_chunk(b"IDAT", _zlib_stored(bytes(rows)))
        + _png_chunk(b"IEND", b"")
    )


def png_ci_dashboard(rng: random.Random, width: int = 48, height: int = 32) -> bytes:
    """A tiny 'screenshot' of a CI run list: a dark header, rows with red/green dots."""
    status = [rng.random() < 0.45 for _ in range(height)]
    noise = [[rng.randint(-4, 4) for _ in range(width)] for _ in range(height)]

    def px(x: int, y: int) -> tuple[int, int, int]:
        n = noise[y][x]
        if y < 5:
            return (36 + n, 41 + n, 47 + n)
        row = (y - 5) // 4
        if (y - 5) % 4 == 3:
            return (225, 228, 232)
        if 2 <= x <= 4:
            return (207, 34, 46) if status[row] else (26, 127, 55)
        if 7 <= x < 7 + 10 + (row * 7) % 25:
            return (87 + n, 96 + n, 106 + n)
        return (255 - abs(n), 255 - abs(n), 255 - abs(n))

    return make_png(width, height, px)


def png_invoice(rng: random.Random, width: int = 40, height: int = 40) -> bytes:
    """A tiny 'screenshot' of a rendered invoice: letterhead, table rules, a total box."""
    noise = [[rng.randint(-3, 3) for _ in range(width)] for _ in range(height)]

    def px(x: int, y: int) -> tuple[int, int, int]:
        n = noise[y][x]
        if y < 6:
            return (14 + n, 70 + n, 140 + n)
        if y in (12, 20, 28) and 3 <= x < width - 3:
            return (190, 190, 190)
        if 31 <= y <= 36 and x >= width - 16:
            return (250, 236, 180) if 32 <= y <= 35 and x < width - 2 else (180, 150, 40)
        if (y % 3 == 0) and 4 <= x < 4 + (x * 7 + y * 3) % 22:
            return (60 + n, 60 + n, 60 + n)
        return (252 - abs(n), 252 - abs(n), 250 - abs(n))

    return make_png(width, height, px)


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


# ================================================================================ secrets


#: Realistically shaped, entirely fake credentials for the ``.env`` the agent reads: per
#: secret its ``.env`` field, the kind the manifest names, a prefix and random characters.
SECRETS: list[dict[str, Any]] = data_json("secrets.json")


def make_secrets(rng: random.Random) -> dict[str, str]:
    """A value for each of :data:`SECRETS`; the JWT's is its prefix and a signature drawn
    first."""
    sig = bytes(rng.getrandbits(8) for _ in range(32))
    signature = base64.urlsafe_b64encode(sig).decode("ascii").rstrip("=")
    out: dict[str, str] = {}
    for s in SECRETS:
        if "chars" in s:
            out[s["name"]] = s["prefix"] + "".join(
                rng.choice(s["chars"]) for _ in range(s["length"])
            )
        else:
            out[s["name"]] = s["prefix"] + signature
    return out


def env_file(secrets: dict[str, str]) -> str:
    return data_text("text/env_file.txt").format(**secrets)


def noise(rng: random.Random, lo: int, hi: int) -> bytes:
    """Between ``lo`` and ``hi`` random bytes (signatures, encrypted reasoning)."""
    return bytes(rng.getrandbits(8) for _ in range(rng.randint(lo, hi)))
