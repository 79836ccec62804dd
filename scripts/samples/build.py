#!/usr/bin/env python3
"""Generate tjui's bundled sample sessions in ``sessions/``, byte for byte deterministic.

Every file is written in its agent's NATIVE shape (plain dicts and JSON lines, never
through tinyjuice's writers) so the samples exercise our readers. The story is the same
throughout: a developer asks an agent to get the failing test suite of ``ledgerline``,
a small Python invoicing web service, green again after a float-to-Decimal migration.

    python scripts/make_sessions.py            # (re)write sessions/
    python scripts/make_sessions.py --check    # regenerate into a temp dir, exit 1 on drift

Determinism: every random choice comes from ``random.Random`` seeded with a fixed string
per file, all timestamps derive from fixed start times, JSON is written with insertion
ordered keys, PNG payloads use stored (uncompressed) deflate blocks so no zlib build
can change them, and the SQLite file is written with fixed rowids and VACUUMed. SQLite
bytes can differ between SQLite library versions (the header records the version), so
``--check`` compares ``hermes-state.db`` byte for byte first and falls back to comparing
its schema and every row when the bytes differ.

``sessions/manifest.json`` records, per file, what a faithful reader should produce. The
counts come from the builders' own bookkeeping while they write, never from re-reading
the files.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import json
import random
import sqlite3
import string
import struct
import sys
import tempfile
import uuid
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from tinyjuice.formats._hermes_state import STATE_SCHEMA

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = ROOT / "sessions"
DATA = Path(__file__).resolve().parent / "data"
SEED = "tjui-sessions-v1"

CWD = "/home/maya/src/ledgerline"
SUMMARY_PREFIX = "[CONTEXT COMPACTION — REFERENCE ONLY]"
LEGACY_SUMMARY_PREFIX = "[CONTEXT SUMMARY]:"
LATEST_ASK = "Now make the retry logic in src/app/payments/client.py idempotent and add a test."

FILE_NAMES: tuple[str, ...] = (
    "demo.json",
    "openai-chat.json",
    "anthropic-messages.json",
    "hermes-gateway.jsonl",
    "hermes-state.db",
    "claude-code.jsonl",
    "codex-rollout.jsonl",
    "sharegpt.jsonl",
    "swe-agent.traj",
    "gemini-cli-session.jsonl",
    "cline-task/api_conversation_history.json",
    "cline-task/ui_messages.json",
    "cline-task/task_metadata.json",
    "opencode.db",
    "aider-chat-history.md",
    "sharegpt-glaive.jsonl",
    "mini-swe-agent.traj.json",
    "manifest.json",
    "README.md",
)

ROLE_ORDER = ("system", "developer", "user", "assistant", "tool")


# =============================================================================== utilities


def _text(name: str) -> str:
    """A data file's text, byte for byte (no newline translation)."""
    return (DATA / name).read_bytes().decode("utf-8")


def _json(name: str) -> Any:
    return json.loads(_text(name))


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

    def epoch(self) -> float:
        return round(self.now.timestamp(), 3)


def dumps_compact(obj: Any) -> str:
    """One JSON line the way the agents write them (no spaces, UTF-8 kept)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def dumps_args(obj: Any) -> str:
    """Tool-call arguments as Python's json.dumps renders them (what most agents send)."""
    return json.dumps(obj, ensure_ascii=False)


def write_text(path: Path, text: str) -> None:
    path.write_bytes(text.encode("utf-8"))


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


@dataclass(frozen=True)
class FakeSecrets:
    """Realistically shaped, entirely fake credentials for the `.env` the agent reads."""

    openai: str
    aws_id: str
    aws_secret: str
    github: str
    pg_password: str
    jwt: str
    stripe: str
    webhook: str


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")


def make_secrets(rng: random.Random) -> FakeSecrets:
    alnum = string.ascii_letters + string.digits
    upper = string.ascii_uppercase + string.digits

    def pick(chars: str, n: int) -> str:
        return "".join(rng.choice(chars) for _ in range(n))

    header = _b64url(b'{"alg":"HS256","typ":"JWT"}')
    payload = _b64url(
        b'{"sub":"svc-ledgerline","role":"service","iat":1757930400,"exp":1789466400}'
    )
    sig = _b64url(bytes(rng.getrandbits(8) for _ in range(32)))
    return FakeSecrets(
        openai="sk-proj-" + pick(alnum + "-_", 48),
        aws_id="AKIA" + pick(upper, 16),
        aws_secret=pick(alnum + "/+", 40),
        github="ghp_" + pick(alnum, 36),
        pg_password=pick(alnum, 20),
        jwt=f"{header}.{payload}.{sig}",
        stripe="sk_test_51" + pick(alnum, 60),
        webhook="whsec_" + pick(alnum, 32),
    )


def env_file(s: FakeSecrets) -> str:
    return _text("text/env_file.txt").format(**vars(s))


# ========================================================================= virtual repo


class Repo:
    """The project's files as text, edited in step with the story so reads stay consistent."""

    def __init__(self, files: dict[str, str]) -> None:
        self.files = dict(files)

    def text(self, path: str) -> str:
        return self.files[path]

    def lines(self, path: str) -> list[str]:
        return (
            self.files[path].split("\n")[:-1]
            if self.files[path].endswith("\n")
            else self.files[path].split("\n")
        )

    def numbered(
        self, path: str, offset: int = 1, limit: int | None = None, arrow: bool = False
    ) -> str:
        lines = self.lines(path)
        end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
        sep = "→" if arrow else "|"
        return "\n".join(f"{i:>6}{sep}{lines[i - 1]}" for i in range(offset, end + 1))

    def find_line(self, path: str, needle: str) -> int:
        for i, line in enumerate(self.lines(path), start=1):
            if needle in line:
                return i
        raise KeyError(f"{needle!r} not in {path}")

    def patch(self, path: str, old: str, new: str) -> str:
        text = self.files[path]
        if text.count(old) != 1:
            raise ValueError(f"patch for {path} matches {text.count(old)} times: {old[:60]!r}")
        updated = text.replace(old, new)
        self.files[path] = updated
        return self.diff(path, text, updated)

    @staticmethod
    def diff(path: str, before: str, after: str) -> str:
        return "\n".join(
            difflib.unified_diff(
                before.splitlines(),
                after.splitlines(),
                fromfile=f"a/{path}",
                tofile=f"b/{path}",
                lineterm="",
            )
        )

    def patch_many(self, path: str, edits: Sequence[tuple[str, str]]) -> str:
        """Apply several unique replacements to one file; return one unified diff."""
        before = self.files[path]
        text = before
        for old, new in edits:
            if text.count(old) != 1:
                raise ValueError(f"edit for {path} matches {text.count(old)} times: {old[:60]!r}")
            text = text.replace(old, new)
        self.files[path] = text
        return self.diff(path, before, text)

    def write(self, path: str, text: str) -> None:
        self.files[path] = text


# ===================================================================== project sources

#: The project's files at the start of every story (data/ledgerline/), in this order.
PROJECT_FILES: dict[str, str] = {
    path: _text(f"ledgerline/{path}")
    for path in (
        "src/app/billing/invoice.py",
        "src/app/utils/money.py",
        "src/app/billing/tax.py",
        "src/app/payments/client.py",
        "src/app/payments/webhooks.py",
        "src/app/billing/dunning.py",
        "src/app/billing/proration.py",
        "src/app/api/schemas.py",
        "src/app/config.py",
        "src/app/cli.py",
        "src/app/db/models.py",
        "src/app/api/routes_invoices.py",
        "tests/conftest.py",
        "pytest.ini",
    )
}


# ============================================================================ test suite

# module -> tests; "name[a|b|c]" expands to parametrized ids.
_INVENTORY_SPEC: list[list[Any]] = _json("test_inventory.json")


def _expand(name: str) -> list[str]:
    if "[" not in name:
        return [name]
    base, params = name[:-1].split("[", 1)
    return [f"{base}[{p}]" for p in params.split("|")]


def build_inventory() -> list[str]:
    out: list[str] = []
    for module, names in _INVENTORY_SPEC:
        for name in names:
            out.extend(f"{module}::{n}" for n in _expand(name))
    return out


@dataclass
class Bug:
    """One cause of red tests: the failing ids, pytest's report, and the fix."""

    key: str
    tests: tuple[str, ...]
    #: The body pytest prints under a test's header: text, per-test text, or a function
    #: of (repo, test id) so source excerpts always match the current file.
    block: str | Callable[[Repo, str], str]
    where: str | Callable[[Repo, str], str]  # "tests/...py:31: AssertionError" (+ captured log)
    short: str | Callable[[str], str]  # short test summary reason
    error: bool = False  # an error at setup rather than a failure

    def render(self, repo: Repo, test: str) -> tuple[str, str, str]:
        block = self.block(repo, test) if callable(self.block) else self.block
        where = self.where(repo, test) if callable(self.where) else self.where
        short = self.short(test) if callable(self.short) else self.short
        return block, where, short


@dataclass
class Suite:
    inventory: list[str]
    rng: random.Random
    repo: Repo
    bugs: dict[str, Bug] = field(default_factory=dict)
    active: set[str] = field(default_factory=set)
    skipped: tuple[str, ...] = (
        "tests/test_migrations.py::test_downgrade_one",
        "tests/billing/test_invoice_repository.py::test_lines_keep_order",
    )

    def add(self, bug: Bug, active: bool = True) -> None:
        for t in bug.tests:
            if t not in self.inventory:
                raise KeyError(f"{bug.key}: {t} is not in the inventory")
        self.bugs[bug.key] = bug
        if active:
            self.active.add(bug.key)

    def fix(self, key: str) -> None:
        self.active.discard(key)

    def failing(self) -> dict[str, Bug]:
        out: dict[str, Bug] = {}
        for key in sorted(self.active):
            for t in self.bugs[key].tests:
                out[t] = self.bugs[key]
        return out

    def tally(self, targets: Sequence[str] = ("tests",)) -> dict[str, int]:
        """Counts a run over ``targets`` would report (no randomness consumed)."""
        selected = [t for t in self.inventory if any(t == x or t.startswith(x) for x in targets)]
        failing = self.failing()
        bad = [t for t in selected if t in failing]
        errors = sum(1 for t in bad if failing[t].error)
        skipped = sum(1 for t in selected if t in self.skipped and t not in failing)
        return {
            "failed": len(bad) - errors,
            "errors": errors,
            "skipped": skipped,
            "passed": len(selected) - len(bad) - skipped,
        }

    def duration(self, n: int) -> str:
        return f"{n * self.rng.uniform(0.012, 0.03) + 0.4:.2f}s"

    def run(self, targets: Sequence[str] = ("tests",), stop_first: bool = False) -> tuple[str, int]:
        """``pytest -q`` over ``targets``: progress dots, failure reports, summary."""
        selected = [t for t in self.inventory if any(t == x or t.startswith(x) for x in targets)]
        failing = self.failing()
        chars: list[str] = []
        bad: list[str] = []
        for t in selected:
            if t in failing:
                chars.append("E" if failing[t].error else "F")
                bad.append(t)
                if stop_first:
                    break
            elif t in self.skipped:
                chars.append("s")
            else:
                chars.append(".")
        lines: list[str] = []
        total = len(selected)
        for start in range(0, len(chars), 72):
            chunk = "".join(chars[start : start + 72])
            pct = round(100 * min(start + 72, len(chars)) / max(total, 1))
            lines.append(f"{chunk:<72} [{pct:>3}%]")
        out = "\n".join(lines)
        if bad:
            out += self._reports(bad, failing, selected)
        elif any(c == "s" for c in chars):
            out += "\n" + " short test summary info ".center(80, "=") + "\n"
            out += "\n".join(self._skip_lines(selected))
        n_fail = sum(1 for t in bad if not failing[t].error)
        n_err = len(bad) - n_fail
        n_skip = sum(1 for c in chars if c == "s")
        n_pass = sum(1 for c in chars if c == ".")
        parts = []
        if n_fail:
            parts.append(f"{n_fail} failed")
        parts.append(f"{n_pass} passed")
        if n_skip:
            parts.append(f"{n_skip} skipped")
        if n_err:
            parts.append(f"{n_err} error" + ("s" if n_err > 1 else ""))
        if stop_first and bad:
            out += (
                "\n!!!!!!!!!!!!!!!!!!!!!!!!!! stopping after 1 failures !!!!!!!!!!!!!!!!!!!!!!!!!!!"
            )
        out += f"\n{', '.join(parts)} in {self.duration(len(chars))}"
        return out, (1 if bad else 0)

    def _reports(
        self, bad: Sequence[str], failing: dict[str, Bug], selected: Sequence[str] | None = None
    ) -> str:
        if not bad:
            return ""
        out: list[str] = []
        errors = [t for t in bad if failing[t].error]
        fails = [t for t in bad if not failing[t].error]
        rendered = {t: failing[t].render(self.repo, t) for t in bad}
        if errors:
            out.append("\n" + " ERRORS ".center(80, "="))
            for t in errors:
                name = t.split("::", 1)[1]
                block, where, _ = rendered[t]
                out.append(f" ERROR at setup of {name} ".center(80, "_"))
                out.extend((block, "", where))
        if fails:
            out.append(("" if errors else "\n") + " FAILURES ".center(80, "="))
            for t in fails:
                name = t.split("::", 1)[1]
                block, where, _ = rendered[t]
                out.append(f" {name} ".center(80, "_"))
                out.extend(("", block, "", where))
        out.append(" short test summary info ".center(80, "="))
        out.extend(self._skip_lines(selected))
        for t in errors:
            out.append(f"ERROR {t} - {rendered[t][2]}")
        for t in fails:
            out.append(f"FAILED {t} - {rendered[t][2]}")
        return "\n".join(out)

    def _skip_lines(self, selected: Sequence[str] | None = None) -> list[str]:
        return [
            f"SKIPPED [1] {t.split('::')[0]}:{31 if 'migrations' in t else 52}: needs the postgres container"
            for t in self.skipped
            if selected is None or t in selected
        ]

    def verbose_log(self, total_lines: int) -> tuple[str, int]:
        """``pytest -vv --log-cli-level=DEBUG -p randomly ... | tail -n total_lines``."""
        rng = self.rng
        failing = self.failing()
        order = list(self.inventory)
        rng.shuffle(order)
        lines = [
            "============================= test session starts ==============================",
            "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0 -- /home/maya/src/ledgerline/.venv/bin/python",
            "cachedir: .pytest_cache",
            "Using --randomly-seed=3127904561",
            "rootdir: /home/maya/src/ledgerline",
            "configfile: pytest.ini",
            "plugins: randomly-3.15.0, anyio-4.6.0, cov-5.0.0, freezegun-0.4.2",
            f"collected {len(order)} items",
            "",
        ]
        bad: list[str] = []
        for i, t in enumerate(order, start=1):
            lines.append(f"{t} ")
            lines.append("-" * 32 + " live log setup " + "-" * 32)
            lines.extend(_log_lines(rng, t, "setup"))
            lines.append("-" * 33 + " live log call " + "-" * 32)
            lines.extend(_log_lines(rng, t, "call"))
            pct = f"[{round(100 * i / len(order)):>3}%]"
            if t in failing:
                bad.append(t)
                word = "FAILED"
            elif t in self.skipped:
                word = "SKIPPED (needs the postgres container)"
            else:
                word = "PASSED"
            lines.append(f"{word:<72} {pct}")
            if rng.random() < 0.3:
                lines.append("-" * 31 + " live log teardown " + "-" * 30)
                lines.extend(_log_lines(rng, t, "teardown"))
        report = self._reports(bad, failing).strip("\n").split("\n")
        lines.extend(report)
        n_fail = len(bad)
        n_skip = sum(1 for t in order if t in self.skipped)
        summary = f"{n_fail} failed, {len(order) - n_fail - n_skip} passed, {n_skip} skipped in 61.84s (0:01:01)"
        lines.append(f" {summary} ".center(80, "="))
        if len(lines) < total_lines:
            raise ValueError(f"verbose log too short: {len(lines)} < {total_lines}")
        tail = lines[-total_lines:]
        return "\n".join(tail), (1 if bad else 0)


_LOG_TEMPLATES: dict[str, list[str]] = _json("log_templates.json")


def _log_lines(rng: random.Random, test: str, phase: str) -> list[str]:
    area = test.split("/")[1] if test.count("/") > 1 else "other"
    if area not in _LOG_TEMPLATES:
        area = "other"
    lo, hi = {"setup": (1, 3), "call": (1, 5), "teardown": (1, 2)}[phase]
    out = []
    for _ in range(rng.randint(lo, hi)):
        a = rng.randint(1000, 99999) / 100
        b = round(a * 0.0725, 2)
        out.append(
            rng.choice(_LOG_TEMPLATES[area]).format(
                n=rng.randint(40, 330),
                h="".join(rng.choice("0123456789abcdef") for _ in range(8)),
                h2="".join(rng.choice("0123456789abcdef") for _ in range(6)),
                a=f"{a:.2f}",
                b=f"{b:.2f}",
                c=f"{a + b:.2f}",
                seq=f"{rng.randint(1, 400):04d}",
                s=f"{rng.uniform(0.001, 2.5):.4f}",
                ts=1757927524 + rng.randint(0, 500),
                k=rng.randint(1, 4),
            )
        )
    return out


# ============================================================================ bug catalogue


def frame(repo: Repo, path: str, needle: str, errors: Sequence[str], header: str = "") -> str:
    """A pytest traceback frame: the enclosing function up to the failing line, then E lines."""
    lines = repo.lines(path)
    at = repo.find_line(path, needle)
    start = at
    while start > 1 and not lines[start - 1].lstrip().startswith(("def ", "async def ")):
        start -= 1
    if start > 1 and lines[start - 2].strip() == ")":
        while start > 1 and not lines[start - 2].lstrip().startswith("@"):
            start -= 1
    while start > 1 and lines[start - 2].lstrip().startswith("@"):
        start -= 1
    body = []
    for n in range(start, at + 1):
        line = lines[n - 1]
        body.append((">   " if n == at else "    ") + line if line else "")
    out = ([header, ""] if header else []) + body
    out += [f"E       {e}" for e in errors]
    return "\n".join(out)


def loc(repo: Repo, path: str, needle: str, kind: str) -> str:
    return f"{path}:{repo.find_line(path, needle)}: {kind}"


SEP_FRAME = "_ " * 40


TEST_SOURCES: dict[str, str] = {
    path: _text(f"ledgerline/{path}")
    for path in (
        "tests/utils/test_money.py",
        "tests/payments/test_webhooks.py",
    )
}


def demo_bugs(repo: Repo) -> list[Bug]:
    """The causes of the red suite the demo session works through, in fix order."""
    money = "src/app/utils/money.py"

    def half_up_block(r: Repo, t: str) -> str:
        param = t.split("[", 1)[1].rstrip("]")
        amount, expected = param.split("-")
        got = {"10.005": 1000, "0.125": 12, "0.005": 0}[amount]
        return f"amount = '{amount}', expected = {expected}\n\n" + _test_frame(
            "tests/utils/test_money.py",
            "assert to_cents(Decimal(amount)) == expected",
            [
                f"AssertionError: assert {got} == {expected}",
                f" +  where {got} = to_cents(Decimal('{amount}'))",
            ],
        )

    def line_total_block(r: Repo, t: str) -> str:
        return (
            "invoice_factory = <function invoice_factory.<locals>.make at 0x7f3b2c1e5ee0>\n\n"
            "    def test_line_total_rounds_half_up(invoice_factory):\n"
            '        inv = invoice_factory(lines=[("Setup fee (split)", "3", "5.555")])\n'
            '>       assert inv.lines[0].subtotal("USD") == Decimal("16.67")\n'
            "E       AssertionError: assert Decimal('16.66') == Decimal('16.67')\n"
            "E        +  where Decimal('16.66') = <bound method LineItem.subtotal of LineItem("
            "description='Setup fee (split)', quantity=Decimal('3'), unit_price=Decimal('5.555'), "
            "tax_code='standard', sku=None, discountable=True)>('USD')"
        )

    def tax_rate_block(r: Repo, t: str) -> str:
        region = t.split("[", 1)[1].rstrip("]")
        base, expected, got, rate, name = {
            "US-CA": (
                "10.00",
                "0.73",
                "0.72",
                "0.07249999999999999500399638918679556809365749359130859375",
                "California",
            ),
            "US-NY": (
                "20.00",
                "1.78",
                "1.77",
                "0.08874999999999999555910790149937383830547332763671875",
                "New York",
            ),
        }[region]
        return (
            f"region = '{region}', base = '{base}', expected = '{expected}'\n"
            "tax_calculator = <app.billing.tax.TaxCalculator object at 0x7f3b2b9d6c10>\n\n"
            "    @pytest.mark.parametrize(\n"
            '        ("region", "base", "expected"),\n'
            '        [("US-CA", "10.00", "0.73"), ("US-NY", "20.00", "1.78")],\n'
            '        ids=["US-CA", "US-NY"],\n'
            "    )\n"
            "    def test_state_rate_rounds_half_up(region, base, expected, tax_calculator):\n"
            '        lines = tax_calculator.lines_for(f"cus_{region}", {"digital": Decimal(base)}, "USD")\n'
            ">       assert lines[0].amount == Decimal(expected)\n"
            f"E       AssertionError: assert Decimal('{got}') == Decimal('{expected}')\n"
            f"E        +  where Decimal('{got}') = TaxLine(code='digital', name='{name}', rate=Decimal('{rate}'), "
            f"taxable=Decimal('{base}'), amount=Decimal('{got}')).amount"
        )

    def exempt_block(r: Repo, t: str) -> str:
        tax = "src/app/billing/tax.py"
        return (
            "tax_calculator = <app.billing.tax.TaxCalculator object at 0x7f3b2b9d6c10>\n\n"
            "    def test_exempt_customer_has_zero_tax(tax_calculator):\n"
            '>       assert tax_calculator.total_tax("cus_exempt_501c3", {"standard": Decimal("120.00")}, "USD") == Decimal("0.00")\n\n'
            "tests/billing/test_tax.py:58: \n"
            f"{SEP_FRAME}\n\n"
            "self = <app.billing.tax.TaxCalculator object at 0x7f3b2b9d6c10>, customer_id = 'cus_exempt_501c3'\n"
            "taxable = {'standard': Decimal('120.00')}, currency = 'USD'\n\n"
            + frame(r, tax, "return quantize(sum(", [])
            + f"\n\n{tax}:{r.find_line(tax, 'return quantize(sum(')}: \n"
            f"{SEP_FRAME}\n\n"
            "amount = 0, currency = 'USD'\n\n"
            + frame(
                r,
                money,
                "return amount.quantize(step",
                ["AttributeError: 'int' object has no attribute 'quantize'"],
            )
        )

    def schema_block(r: Repo, t: str) -> str:
        cur = t.split("[", 1)[1].rstrip("]")
        exp = {
            "USD": ("86.50", "6.27", "92.77", "92.77"),
            "EUR": ("86.50", "16.44", "102.94", "102.94"),
            "JPY": ("8650", "865", "9515", "9515"),
        }[cur]
        got = [str(float(x)).removesuffix(".0") if cur != "JPY" else str(float(x)) for x in exp]
        keys = ("subtotal", "tax_total", "total", "amount_due")
        want = ", ".join(f"'{k}': '{v}'" for k, v in sorted(zip(keys, exp, strict=True)))
        have = ", ".join(f"'{k}': {v}" for k, v in sorted(zip(keys, got, strict=True)))
        diffs = [
            f"{{'{k}': {g}}} != {{'{k}': '{e}'}}" for k, g, e in zip(keys, got, exp, strict=True)
        ]
        return (
            f"client = <starlette.testclient.TestClient object at 0x7f3b2a8e0d90>, currency = '{cur}'\n"
            "seeded_invoice = <function seeded_invoice.<locals>.make at 0x7f3b2a8e1f80>\n\n"
            '    @pytest.mark.parametrize("currency", ["USD", "EUR", "JPY"])\n'
            "    def test_get_invoice_returns_string_amounts(client, currency, seeded_invoice):\n"
            "        inv = seeded_invoice(currency)\n"
            '        body = client.get(f"/v1/invoices/{inv.id}").json()\n'
            "        expected = EXPECTED_TOTALS[currency]\n"
            ">       assert {k: body[k] for k in expected} == expected\n"
            f"E       AssertionError: assert {{{have}}} == {{{want}}}\n"
            "E         \n"
            "E         Differing items:\n" + "\n".join(f"E         {d}" for d in diffs) + "\n"
            "E         Use -v to get more diff"
        )

    def openapi_block(t: str) -> str:
        model, fld = t.split("[", 1)[1].rstrip("]").split(".")
        return (
            f"openapi_schema = {{'components': {{'schemas': {{'InvoiceOut': {{...}}, 'LineOut': {{...}}}}}}, 'info': {{...}}, 'openapi': '3.1.0', 'paths': {{...}}}}\n"
            f"field = '{model}.{fld}'\n\n"
            '    @pytest.mark.parametrize("field", MONEY_FIELDS)\n'
            "    def test_money_fields_are_strings(openapi_schema, field):\n"
            '        model, name = field.split(".")\n'
            '        prop = openapi_schema["components"]["schemas"][model]["properties"][name]\n'
            '>       assert prop["type"] == "string"\n'
            "E       AssertionError: assert 'number' == 'string'\n"
            "E         \n"
            "E         - string\n"
            "E         + number"
        )

    def minor_block(r: Repo, t: str) -> str:
        amount, cur, minor = t.split("[", 1)[1].rstrip("]").split("-")
        sent = {"19.99": "1998", "0.29": "28", "1200": "120000"}[amount]
        return (
            "respx_mock = <respx.router.MockRouter object at 0x7f3b2a1c9e50>\n"
            "payments = <app.payments.client.PaymentsClient object at 0x7f3b2a1cb0d0>\n"
            f"amount = '{amount}', currency = '{cur}', minor = {minor}\n\n"
            "    @pytest.mark.parametrize(\n"
            '        ("amount", "currency", "minor"),\n'
            '        [("19.99", "USD", 1999), ("0.29", "EUR", 29), ("1200", "JPY", 1200)],\n'
            '        ids=["19.99-USD-1999", "0.29-EUR-29", "1200-JPY-1200"],\n'
            "    )\n"
            "    def test_charge_sends_minor_units(respx_mock, payments, amount, currency, minor):\n"
            '        route = respx_mock.post("/v1/payment_intents").respond(200, json=_intent(minor, currency))\n'
            '        payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal(amount), currency=currency)\n'
            "        sent = dict(urllib.parse.parse_qsl(route.calls.last.request.content.decode()))\n"
            '>       assert sent["amount"] == str(minor)\n'
            f"E       AssertionError: assert '{sent}' == '{minor}'\n"
            "E         \n"
            f"E         - {minor}\n"
            f"E         + {sent}"
        )

    def webhook_block(r: Repo, t: str) -> str:
        name = t.split("::", 1)[1].split("[", 1)[0]
        src = TEST_SOURCES["tests/payments/test_webhooks.py"].split("\n")
        start = next(i for i, line in enumerate(src) if line.startswith(f"def {name}("))
        body = ["    " + line if line else "" for line in src[start - 1 : start + 4]]
        body[-1] = ">   " + body[-1][4:]
        if name == "test_payment_succeeded_marks_invoice_paid":
            err = [
                "AssertionError: assert <InvoiceStatus.OPEN: 'open'> is <InvoiceStatus.PAID: 'paid'>",
                " +  where <InvoiceStatus.OPEN: 'open'> = Invoice(id='inv_7f00c2d9a1b34e58', customer_id='cus_test', "
                "currency='JPY', status=<InvoiceStatus.OPEN: 'open'>, number='INV-2025-0001', ...).status",
            ]
        else:
            err = [
                "AssertionError: assert Decimal('9465') == (Decimal('9515') - Decimal('5000'))",
                " +  where Decimal('9465') = Totals(subtotal=Decimal('8650'), discount=Decimal('0'), ..., amount_due=Decimal('9465')).amount_due",
            ]
        head = f"open_invoice = <function open_invoice.<locals>.make at 0x7f3b29f0a8b0>, invoice_service = <app.billing.invoice.InvoiceService object at 0x7f3b29f3c590>\ncurrency = 'jpy', amount = {9515 if 'paid' in name else 5000}"
        return head + "\n\n" + "\n".join(body) + "\n" + "\n".join(f"E       {e}" for e in err)

    def repo_block(r: Repo, t: str) -> str:
        return (
            "session = <sqlalchemy.orm.session.Session object at 0x7f3b2a0f4d10>\n"
            "invoice_factory = <function invoice_factory.<locals>.make at 0x7f3b2a0f65c0>\n\n"
            "    def test_roundtrip_preserves_decimal(session, invoice_factory):\n"
            "        repo = SqlInvoiceRepository(session)\n"
            '        inv = invoice_factory(amount_paid=Decimal("19.99"))\n'
            "        repo.save(inv)\n"
            "        session.expire_all()\n"
            "        loaded = repo.get(inv.id)\n"
            ">       assert isinstance(loaded.amount_paid, Decimal)\n"
            "E       AssertionError: assert False\n"
            "E        +  where False = isinstance(19.99, Decimal)\n"
            "E        +    where 19.99 = Invoice(id='inv_test0001', customer_id='cus_test', currency='USD', "
            "status=<InvoiceStatus.DRAFT: 'draft'>, ...).amount_paid"
        )

    def format_block(r: Repo, t: str) -> str:
        amount, cur, expected = _money_param(t)
        got = {"1234.5": "$1,234.5", "-5": "-€5", "0.5": "£0.5"}[amount]
        return (
            f"amount = '{amount}', currency = '{cur}', expected = '{expected}'\n\n"
            + _test_frame(
                "tests/utils/test_money.py",
                "assert format_money(Decimal(amount), currency) == expected",
                [
                    f"AssertionError: assert '{got}' == '{expected}'",
                    "",
                    f"  - {expected}",
                    f"  + {got}",
                ],
            )
        )

    def proration_block(r: Repo, t: str) -> str:
        calls = {
            "test_mid_cycle_upgrade_prorates": ('"49.00"', '"99.00"', "date(2025, 9, 16)", "16"),
            "test_downgrade_credit_is_negative": ('"99.00"', '"49.00"', "date(2025, 9, 21)", "21"),
            "test_change_on_first_day_is_full_difference": (
                '"49.00"',
                '"99.00"',
                "date(2025, 9, 1)",
                "1",
            ),
            "test_change_on_last_day_is_zero": ('"49.00"', '"99.00"', "date(2025, 10, 1)", "1"),
        }
        name = t.split("::", 1)[1]
        old, new, changed, day = calls[name]
        month = "10" if "last_day" in name else "9"
        return (
            f"    def {name}():\n"
            f'>       amount = prorate(Decimal({old}), Decimal({new}), date(2025, 9, 1), date(2025, 10, 1), {changed}, "USD")\n\n'
            f"tests/billing/test_proration.py:{ {'test_mid_cycle_upgrade_prorates': 12, 'test_downgrade_credit_is_negative': 17, 'test_change_on_first_day_is_full_difference': 22, 'test_change_on_last_day_is_zero': 26}[name] }: \n"
            f"{SEP_FRAME}\n\n"
            f"old_price = Decimal({old.strip(chr(34))!r}), new_price = Decimal({new.strip(chr(34))!r}), start = datetime.date(2025, 9, 1)\n"
            f"end = datetime.date(2025, 10, 1), changed_on = datetime.date(2025, {month}, {day}), currency = 'USD'\n\n"
            + frame(
                r,
                "src/app/billing/proration.py",
                "return quantize((new_price - old_price) * ratio",
                ["TypeError: unsupported operand type(s) for *: 'decimal.Decimal' and 'float'"],
            )
        )

    def dunning_block(r: Repo, t: str) -> str:
        name = t.split("::", 1)[1]
        call = "is_overdue(inv)" if "grace" in name else "reminders_for([inv])"
        return (
            "invoice_factory = <function invoice_factory.<locals>.make at 0x7f3b29e1d120>\n\n"
            '    @freeze_time("2025-09-20 12:00:00")\n'
            f"    def {name}(invoice_factory):\n"
            "        inv = invoice_factory(status=InvoiceStatus.OPEN, due_at=datetime(2025, 9, 10, tzinfo=UTC))\n"
            f">       assert {call}\n\n"
            f"tests/billing/test_dunning.py:{21 if 'grace' in name else 27}: \n"
            f"{SEP_FRAME}\n\n"
            f"invoice = Invoice(id='inv_test0001', customer_id='cus_test', currency='USD', status=<InvoiceStatus.OPEN: 'open'>, ...)\n"
            "now = FakeDatetime(2025, 9, 20, 12, 0)\n\n"
            + frame(
                r,
                "src/app/billing/dunning.py",
                "return invoice.status is InvoiceStatus.OPEN and invoice.due_at is not None and now >",
                ["TypeError: can't compare offset-naive and offset-aware datetimes"],
            )
        )

    def settings_block(r: Repo, t: str) -> str:
        return (
            "monkeypatch = <_pytest.monkeypatch.MonkeyPatch object at 0x7f3b2a3e1c50>\n\n"
            + frame(
                r,
                "tests/conftest.py",
                "return Settings(_env_file=None)",
                [
                    "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
                    "stripe_webhook_secret",
                    "  Field required [type=missing, input_value={'database_url': 'sqlite...y:', "
                    "'stripe_api_key': 'sk_test_dummy'}, input_type=dict]",
                    "    For further information visit https://errors.pydantic.dev/2.9/v/missing",
                ],
            )
        )

    def flaky_block(r: Repo, t: str) -> str:
        return (
            "open_invoice = <function open_invoice.<locals>.make at 0x7f3b29f0a8b0>, invoice_service = "
            "<app.billing.invoice.InvoiceService object at 0x7f3b29f3c590>\n\n"
            + _test_frame(
                "tests/payments/test_webhooks.py",
                'assert handle_event(event, invoice_service) == "applied"',
                [
                    "AssertionError: assert 'duplicate' == 'applied'",
                    "",
                    "  - applied",
                    "  + duplicate",
                ],
            )
        )

    def export_where(r: Repo, t: str) -> str:
        n = r.find_line("src/app/api/routes_invoices.py", "json.dumps(row")
        return (
            "tests/api/test_routes_invoices.py:141: AssertionError\n"
            + " Captured log call ".center(80, "-")
            + "\nERROR    app.main:main.py:58 unhandled error on GET /v1/invoices/export.csv\n"
            "Traceback (most recent call last):\n"
            '  File "/home/maya/src/ledgerline/.venv/lib/python3.11/site-packages/starlette/middleware/errors.py", line 164, in __call__\n'
            "    await self.app(scope, receive, _send)\n"
            '  File "/home/maya/src/ledgerline/.venv/lib/python3.11/site-packages/fastapi/routing.py", line 212, in run_endpoint_function\n'
            "    return await run_in_threadpool(dependant.call, **values)\n"
            f'  File "/home/maya/src/ledgerline/src/app/api/routes_invoices.py", line {n}, in export_csv\n'
            '    audit_log.info("export row %s", json.dumps(row))\n'
            '  File "/usr/lib/python3.11/json/__init__.py", line 231, in dumps\n'
            "    return _default_encoder.encode(obj)\n"
            '  File "/usr/lib/python3.11/json/encoder.py", line 180, in default\n'
            "    raise TypeError(f'Object of type {o.__class__.__name__} '\n"
            "TypeError: Object of type Decimal is not JSON serializable"
        )

    return [
        Bug(
            "money_rounding",
            (
                "tests/utils/test_money.py::test_to_cents_rounds_half_up[10.005-1001]",
                "tests/utils/test_money.py::test_to_cents_rounds_half_up[0.125-13]",
                "tests/utils/test_money.py::test_to_cents_rounds_half_up[0.005-1]",
                "tests/billing/test_invoice.py::test_line_total_rounds_half_up",
            ),
            lambda r, t: line_total_block(r, t) if "invoice" in t else half_up_block(r, t),
            lambda r, t: (
                "tests/billing/test_invoice.py:44: AssertionError"
                if "invoice" in t
                else "tests/utils/test_money.py:24: AssertionError"
            ),
            lambda t: (
                "AssertionError: assert Decimal('16.66') == Decimal('16.67')"
                if "invoice" in t
                else f"AssertionError: assert {dict(a='1000', b='12', c='0')[{'10.005': 'a', '0.125': 'b', '0.005': 'c'}[t.split('[')[1].split('-')[0]]]} == {t.split('-')[-1].rstrip(']')}"
            ),
        ),
        Bug(
            "tax_rate_float",
            (
                "tests/billing/test_tax.py::test_state_rate_rounds_half_up[US-CA]",
                "tests/billing/test_tax.py::test_state_rate_rounds_half_up[US-NY]",
            ),
            tax_rate_block,
            "tests/billing/test_tax.py:39: AssertionError",
            lambda t: (
                "AssertionError: assert Decimal('0.72') == Decimal('0.73')"
                if "CA" in t
                else "AssertionError: assert Decimal('1.77') == Decimal('1.78')"
            ),
        ),
        Bug(
            "tax_exempt_sum",
            ("tests/billing/test_tax.py::test_exempt_customer_has_zero_tax",),
            exempt_block,
            lambda r, t: loc(r, money, "return amount.quantize(step", "AttributeError"),
            "AttributeError: 'int' object has no attribute 'quantize'",
        ),
        Bug(
            "export_json",
            ("tests/api/test_routes_invoices.py::test_export_csv_includes_totals",),
            "client = <starlette.testclient.TestClient object at 0x7f3b2a8e0d90>\n"
            "seeded_invoices = ['inv_9c1f2a7b3d4e5f60', 'inv_0b8e7d6c5a4f3e21']\n\n"
            "    def test_export_csv_includes_totals(client, seeded_invoices):\n"
            '        resp = client.get("/v1/invoices/export.csv", params={"month": "2025-09"})\n'
            ">       assert resp.status_code == 200\n"
            "E       assert 500 == 200\n"
            "E        +  where 500 = <Response [500 Internal Server Error]>.status_code",
            export_where,
            "assert 500 == 200",
        ),
        Bug(
            "schema_floats",
            tuple(
                f"tests/api/test_routes_invoices.py::test_get_invoice_returns_string_amounts[{c}]"
                for c in ("USD", "EUR", "JPY")
            )
            + tuple(
                f"tests/api/test_openapi.py::test_money_fields_are_strings[{f}]"
                for f in (
                    "InvoiceOut.subtotal",
                    "InvoiceOut.tax_total",
                    "InvoiceOut.total",
                    "InvoiceOut.amount_due",
                )
            ),
            lambda r, t: openapi_block(t) if "openapi" in t else schema_block(r, t),
            lambda r, t: (
                "tests/api/test_openapi.py:40: AssertionError"
                if "openapi" in t
                else "tests/api/test_routes_invoices.py:63: AssertionError"
            ),
            lambda t: (
                "AssertionError: assert 'number' == 'string'"
                if "openapi" in t
                else "AssertionError: assert {'amount_due': ..."
            ),
        ),
        Bug(
            "client_minor_units",
            tuple(
                f"tests/payments/test_client.py::test_charge_sends_minor_units[{p}]"
                for p in ("19.99-USD-1999", "0.29-EUR-29", "1200-JPY-1200")
            ),
            minor_block,
            "tests/payments/test_client.py:48: AssertionError",
            lambda t: {
                "19.99": "AssertionError: assert '1998' == '1999'",
                "0.29": "AssertionError: assert '28' == '29'",
                "1200": "AssertionError: assert '120000' == '1200'",
            }[t.split("[")[1].split("-")[0]],
        ),
        Bug(
            "webhook_minor_units",
            (
                "tests/payments/test_webhooks.py::test_payment_succeeded_marks_invoice_paid[JPY]",
                "tests/payments/test_webhooks.py::test_partial_payment_keeps_invoice_open[JPY]",
            ),
            webhook_block,
            lambda r, t: (
                "tests/payments/test_webhooks.py:22: AssertionError"
                if "paid" in t
                else "tests/payments/test_webhooks.py:29: AssertionError"
            ),
            lambda t: (
                "AssertionError: assert <InvoiceStatus.OPEN: 'open'> is <InvoiceStatus.PAID: 'paid'>"
                if "paid" in t
                else "AssertionError: assert Decimal('9465') == (Decimal('9515') - Decimal('5000'))"
            ),
        ),
        Bug(
            "numeric_asdecimal",
            ("tests/billing/test_invoice_repository.py::test_roundtrip_preserves_decimal",),
            repo_block,
            "tests/billing/test_invoice_repository.py:31: AssertionError",
            "AssertionError: assert False",
        ),
        Bug(
            "format_money",
            tuple(
                f"tests/utils/test_money.py::test_format_money[{p}]"
                for p in ("1234.5-USD-$1,234.50", "-5-EUR--€5.00", "0.5-GBP-£0.50")
            ),
            format_block,
            "tests/utils/test_money.py:33: AssertionError",
            lambda t: {
                "1234.5": "AssertionError: assert '$1,234.5' == '$1,234.50'",
                "-5": "AssertionError: assert '-€5' == '-€5.00'",
                "0.5": "AssertionError: assert '£0.5' == '£0.50'",
            }[_money_param(t)[0]],
        ),
        Bug(
            "proration_float",
            tuple(
                f"tests/billing/test_proration.py::{n}"
                for n in (
                    "test_mid_cycle_upgrade_prorates",
                    "test_downgrade_credit_is_negative",
                    "test_change_on_first_day_is_full_difference",
                    "test_change_on_last_day_is_zero",
                )
            ),
            proration_block,
            lambda r, t: loc(
                r,
                "src/app/billing/proration.py",
                "return quantize((new_price - old_price) * ratio",
                "TypeError",
            ),
            "TypeError: unsupported operand type(s) for *: 'decimal.Decimal' and 'float'",
        ),
        Bug(
            "naive_datetime",
            (
                "tests/billing/test_dunning.py::test_overdue_after_grace_period",
                "tests/billing/test_dunning.py::test_reminder_schedule",
            ),
            dunning_block,
            lambda r, t: loc(
                r, "src/app/billing/dunning.py", "now > invoice.due_at + GRACE", "TypeError"
            ),
            "TypeError: can't compare offset-naive and offset-aware datetimes",
        ),
        Bug(
            "settings_webhook_secret",
            ("tests/api/test_health.py::test_readiness_reports_db",),
            settings_block,
            lambda r, t: loc(
                r, "tests/conftest.py", "return Settings(_env_file=None)", "ValidationError"
            ),
            "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
            error=True,
        ),
        Bug(
            "flaky_dedupe",
            ("tests/payments/test_webhooks.py::test_duplicate_events_are_ignored",),
            flaky_block,
            "tests/payments/test_webhooks.py:35: AssertionError",
            "AssertionError: assert 'duplicate' == 'applied'",
        ),
    ]


def _money_param(test: str) -> tuple[str, str, str]:
    """Split a ``test_format_money[amount-CUR-expected]`` id (amounts may be negative)."""
    param = test.split("[", 1)[1].rstrip("]")
    amount, rest_ = (param[1:].split("-", 1)) if param.startswith("-") else param.split("-", 1)
    if param.startswith("-"):
        amount = "-" + amount
    cur, expected = rest_.split("-", 1)
    return amount, cur, expected


def _test_frame(path: str, needle: str, errors: Sequence[str]) -> str:
    return frame(Repo(TEST_SOURCES), path, needle, errors)


# ================================================================= Hermes: tools & prompt


def _fn(
    name: str, description: str, properties: dict[str, Any], required: Sequence[str]
) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": list(required)},
        },
    }


HERMES_TOOLS: list[dict[str, Any]] = _json("hermes_tools.json")

_SKILLS: list[list[str]] = _json("hermes_skills.json")


def hermes_system_prompt() -> str:
    skills = "\n".join(f"    - {cat}/{name}: {desc}" for cat, name, desc in _SKILLS)
    return _text("text/hermes_system_prompt.txt").format(cwd=CWD, skills=skills)


# ============================================================================ Hermes log


def term(output: str, exit_code: int = 0) -> str:
    return json.dumps({"output": output, "exit_code": exit_code, "error": None}, ensure_ascii=False)


def read_out(repo: Repo, path: str, offset: int = 1, limit: int | None = None) -> str:
    total = len(repo.lines(path))
    body: dict[str, Any] = {
        "content": repo.numbered(path, offset, limit),
        "total_lines": total,
        "file_size": len(repo.text(path).encode()),
        "truncated": limit is not None and offset - 1 + limit < total,
    }
    if body["truncated"]:
        body["hint"] = (
            f"Use offset={offset + limit} to continue reading (showing {offset}-{offset + limit - 1} of {total} lines)"
        )
    return json.dumps(body, ensure_ascii=False)


def patch_out(repo: Repo, path: str, old: str, new: str) -> str:
    diff = repo.patch(path, old, new)
    return json.dumps({"success": True, "diff": diff, "files_modified": [path]}, ensure_ascii=False)


def search_out(matches: Sequence[tuple[str, int, str]], total: int | None = None) -> str:
    return json.dumps(
        {
            "total_count": total if total is not None else len(matches),
            "matches": [{"path": p, "line": n, "content": c} for p, n, c in matches],
        },
        ensure_ascii=False,
    )


def grep_repo(repo: Repo, needle: str, paths: Iterable[str]) -> list[tuple[str, int, str]]:
    out = []
    for path in paths:
        for i, line in enumerate(repo.lines(path), start=1):
            if needle in line:
                out.append((path, i, line.strip()))
    return out


Call = tuple[str, Any, str]  # (tool name, arguments as dict or raw string, result content)


class HermesLog:
    """Builds a Hermes session log message by message and counts what it built."""

    def __init__(self, ids: Ids, clock: Clock) -> None:
        self.ids = ids
        self.clock = clock
        self.messages: list[dict[str, Any]] = []
        self.tool_calls = 0
        self.images = 0
        self.compactions: list[dict[str, Any]] = []

    def user(self, content: str | list[dict[str, Any]]) -> int:
        self.clock.tick(20, 140)
        if isinstance(content, list):
            self.images += sum(1 for p in content if p.get("type") == "image_url")
        elif content.startswith((SUMMARY_PREFIX, LEGACY_SUMMARY_PREFIX)):
            self.compactions.append(
                {"index": len(self.messages), "trigger": "unknown", "pre_tokens": None}
            )
        self.messages.append({"role": "user", "content": content})
        return len(self.messages) - 1

    def assistant(self, text: str | None, *calls: Call, reasoning: str | None = None) -> list[str]:
        self.clock.tick(2, 12)
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": text or "",
            "reasoning": reasoning,
            "finish_reason": "tool_calls" if calls else "stop",
        }
        ids: list[str] = []
        if calls:
            msg["tool_calls"] = []
            for name, args, _ in calls:
                cid = self.ids.toolu()
                ids.append(cid)
                raw = args if isinstance(args, str) else dumps_args(args)
                msg["tool_calls"].append(
                    {
                        "id": cid,
                        "call_id": cid,
                        "type": "function",
                        "function": {"name": name, "arguments": raw},
                    }
                )
        self.messages.append(msg)
        self.tool_calls += len(calls)
        for cid, (name, _, result) in zip(ids, calls, strict=True):
            self.clock.tick(0.3, 9)
            self.messages.append(
                {
                    "role": "tool",
                    "content": result,
                    "tool_call_id": cid,
                    "name": name,
                    "tool_name": name,
                }
            )
        return ids


# ================================================================================ demo.json

FIRST_ASK = _text("text/first_ask.txt")

CHANGELOG_MD = _text("ledgerline/CHANGELOG.md")

SETTLEMENTS_HEAD = _text("text/settlements_head.txt")


def build_demo(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("demo")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 16, 8, 41, 7, 118233, tzinfo=UTC), rng)
    repo = Repo(PROJECT_FILES)
    repo.write("CHANGELOG.md", CHANGELOG_MD)
    secrets = make_secrets(rng_for("demo-secrets"))
    repo.write(".env", env_file(secrets))
    suite = Suite(build_inventory(), rng_for("demo-suite"), repo)
    for bug in demo_bugs(repo):
        suite.add(bug, active=bug.key != "flaky_dedupe")
    h = HermesLog(ids, clock)
    marks: dict[str, Any] = {"invoice_reads": []}

    # -- call builders (evaluated in story order, so outputs follow the edits) ---------
    def sh(command: str, output: str, code: int = 0, **extra: Any) -> Call:
        return ("terminal", {"command": command, **extra}, term(output, code))

    def pytest(*targets: str, flags: str = "-q") -> Call:
        output, code = suite.run(targets or ("tests",), stop_first="-x" in flags)
        cmd = f"python -m pytest {flags} {' '.join(targets)}".rstrip()
        return sh(cmd, output, code)

    def read(path: str, offset: int | None = None, limit: int | None = None) -> Call:
        args: dict[str, Any] = {"path": path}
        if offset is not None:
            args["offset"] = offset
        if limit is not None:
            args["limit"] = limit
        return ("read_file", args, read_out(repo, path, offset or 1, limit))

    def edit(path: str, old: str, new: str) -> Call:
        args = {"mode": "replace", "path": path, "old_string": old, "new_string": new}
        return ("patch", args, patch_out(repo, path, old, new))

    def edit_many(path: str, edits: Sequence[tuple[str, str]]) -> Call:
        diff = repo.patch_many(path, edits)
        out = json.dumps(
            {"success": True, "diff": diff, "files_modified": [path]}, ensure_ascii=False
        )
        return ("patch", {"mode": "patch", "patch": diff + "\n"}, out)

    def search(
        pattern: str, needle: str, paths: Sequence[str], path: str = "src", glob: str = "*.py"
    ) -> Call:
        hits = grep_repo(repo, needle, paths)
        return (
            "search_files",
            {"pattern": pattern, "path": path, "file_glob": glob},
            search_out(hits),
        )

    def todo(items: Sequence[tuple[str, str, str]], merge: bool = False) -> Call:
        todos = [{"id": i, "content": c, "status": st} for i, c, st in items]
        counts = {
            k: sum(1 for _, _, st in items if st == k)
            for k in ("pending", "in_progress", "completed")
        }
        args: dict[str, Any] = {"todos": todos}
        if merge:
            args["merge"] = True
        return (
            "todo",
            args,
            json.dumps(
                {"todos": todos, "summary": {"total": len(todos), **counts}}, ensure_ascii=False
            ),
        )

    def git_diff_file(path: str, before: str) -> Call:
        return sh(
            f"git diff {path}",
            f"diff --git a/{path} b/{path}\nindex 3f1c2a9..8e0b7d4 100644\n"
            + Repo.diff(path, before, repo.text(path)),
        )

    def summary_line(t: dict[str, int]) -> str:
        parts = [f"{t['failed']} failed"] if t["failed"] else []
        parts.append(f"{t['passed']} passed")
        if t["skipped"]:
            parts.append(f"{t['skipped']} skipped")
        if t["errors"]:
            parts.append(f"{t['errors']} error")
        return ", ".join(parts)

    plan = [
        ("1", "Reproduce the failures and group them by cause", "completed"),
        ("2", "Fix invoice.py float math (discounts, line subtotals)", "completed"),
        ("3", "Fix money.py rounding + formatting", "in_progress"),
        ("4", "Tax: default rate + exempt customers", "pending"),
        ("5", "Proration and dunning", "pending"),
        ("6", "Payments client + webhooks minor units", "pending"),
        ("7", "API schemas/export + settings", "pending"),
        ("8", "Repository Numeric(asdecimal) + full run, lint, mypy", "pending"),
    ]

    # ------------------------------------------------------------------ protected head
    h.user(FIRST_ASK)
    h.assistant(
        "I'll start by looking at what #412 changed and the state of the working tree.",
        sh(
            "git log --oneline -12",
            "4e1c9a7 (HEAD -> fix/decimal-migration, origin/main, origin/HEAD, main) Switch money handling to Decimal (#412)\n"
            "b83f0d2 Bump httpx to 0.27.2 (#409)\n"
            "1d7e55a Credit notes: credit whole lines incl. tax (#398)\n"
            "c02f9b1 reconcile CLI: compare settled amounts with invoice totals (#401)\n"
            "9a4be3c Dunning: skip invoices paid during grace period (#395)\n"
            "77e0c18 ci: add Python 3.12 to the test matrix (#393)\n"
            "e5b2d90 Webhooks: tolerate clock skew of 5 minutes (#390)\n"
            "0c9f3a2 Export CSV endpoint for finance (#388)\n"
            "5ab81e7 pytest: turn warnings into errors (#385)\n"
            "f1d04c6 Proration for mid-cycle plan changes (#381)\n"
            "2e6a7b9 Tax: per-region rates, reverse charge for EU B2B (#377)\n"
            "8c3d1f0 Release 2.13.1",
        ),
        sh("git status", "On branch fix/decimal-migration\nnothing to commit, working tree clean"),
        reasoning="Start with history and a clean baseline; #412 is the suspect. Run both read-only commands at once.",
    )
    first = {"failed": 47, "errors": 1, "skipped": 2}
    first["passed"] = len(suite.inventory) - 47 - 1 - 2
    h.assistant(
        "#412 is the only money-related change since the last green run. Planning the work before I dig in.",
        todo([(i, c, "in_progress" if i == "1" else "pending") for i, c, _ in plan]),
    )
    now_tally = suite.tally()
    h.user(
        f"{SUMMARY_PREFIX} Earlier turns of this conversation were compacted to free context space. "
        "The summary below records work that was ALREADY DONE; it is background reference, not new "
        "instructions. Do not redo finished steps or answer requests quoted in it. Respond only to "
        "messages that appear after this summary; the most recent user message is the active request.\n\n"
        "## Active Task\n"
        f'User (verbatim): "{FIRST_ASK}"\n\n'
        "## Goal & Constraints\n"
        "- Make `make test` (python -m pytest -q) green on branch fix/decimal-migration.\n"
        "- Do not change InvoiceService's public methods; keep ROUND_HALF_UP (FIN-212).\n"
        "- AGENTS.md money rules: Decimal only, rounding only in app.utils.money.quantize, minor units via "
        "to_cents/from_cents, API money as strings.\n"
        "- No commits until the user has reviewed the diff; ask before anything that talks to GitHub.\n\n"
        "## Completed Actions\n"
        f"1. Ran `python -m pytest -q` at 08:44 → {summary_line(first)}.\n"
        "2. src/app/billing/invoice.py: Discount.applied_to computed `float(self.percent) / 100` → now "
        "`base * self.percent / HUNDRED` in Decimal; LineItem.subtotal() now takes the currency and "
        "quantizes; compute_totals() sums with a ZERO start so empty invoices stay Decimal.\n"
        "3. src/app/billing/invoice.py: LineItem.__post_init__ now raises TypeError on float amounts "
        "(tests/billing/test_invoice.py::test_add_line_rejects_float_amounts covers it).\n"
        "4. tests/conftest.py: invoice_factory built LineItems from float literals → now Decimal strings.\n"
        f"5. Re-ran the suite → {summary_line(now_tally)}.\n\n"
        "## In Progress / Blocked\n"
        "- Remaining failures, grouped by suspected cause: utils/money.py (quantize uses ROUND_HALF_EVEN; "
        "format_money drops trailing zeros), billing/tax.py (default_tax_rate arrives as float; "
        "total_tax on an exempt customer), billing/proration.py (float ratio), billing/dunning.py "
        "(naive utcnow vs aware due_at), payments/client.py (amount * 100 via float), "
        "payments/webhooks.py (amount_received / 100), api/schemas.py (money typed float), "
        "api/routes_invoices.py (json.dumps of Decimal in export), db/models.py (Numeric asdecimal=False), "
        "tests/api/test_health.py setup error (Settings requires STRIPE_WEBHOOK_SECRET).\n\n"
        "## Key Decisions Made\n"
        "- Fix production code rather than loosening tests, unless a test encodes float behaviour.\n"
        "- One cause at a time: narrow test run, fix, re-run, then widen.\n\n"
        "## Remaining Work\n"
        "- Work through the groups above, then the full suite, `make lint`, `make type`, and a summary of "
        "the diff for the user.\n\n"
        "## Relevant Files\n"
        "src/app/utils/money.py, src/app/billing/{invoice,tax,proration,dunning}.py, "
        "src/app/payments/{client,webhooks}.py, src/app/api/{schemas,routes_invoices}.py, src/app/config.py, "
        "src/app/db/models.py, tests/conftest.py, pytest.ini"
    )

    # ----------------------------------------------------------- after the compaction
    h.assistant(
        "Picking up from the summary. Let me confirm the working tree matches it before continuing.",
        sh("git status --short", " M src/app/billing/invoice.py\n M tests/conftest.py"),
        sh(
            "git diff --stat",
            " src/app/billing/invoice.py | 38 ++++++++++++++++++++++++--------------\n"
            " tests/conftest.py          |  6 +++---\n"
            " 2 files changed, 27 insertions(+), 17 deletions(-)",
        ),
        reasoning="The summary says invoice.py and conftest.py were edited; verify that with git before trusting it.",
    )
    h.assistant("Matches. Running the full suite to get the current failure list.", pytest())
    h.assistant(
        "Re-reading the test configuration and fixtures, since several failures are in fixtures and warning "
        "handling.",
        read("pytest.ini"),
        read("tests/conftest.py"),
        reasoning="pytest.ini has filterwarnings=error per memory; conftest holds app_settings and invoice_factory.",
    )
    h.assistant(
        None,
        (
            "todo",
            {},
            json.dumps(
                {
                    "todos": [
                        {"id": i, "content": c, "status": "completed" if i in "12" else "pending"}
                        for i, c, _ in plan
                    ],
                    "summary": {"total": 8, "pending": 6, "in_progress": 0, "completed": 2},
                }
            ),
        ),
    )
    h.assistant(
        f"{summary_line(suite.tally())}. They fall into the groups from the summary; the biggest is rounding "
        "in money.py, which several other groups depend on, so I'll start there.",
        todo(plan),
    )

    # -- money.py: rounding ------------------------------------------------------------
    repo.write("tests/utils/test_money.py", TEST_SOURCES["tests/utils/test_money.py"])
    h.assistant(None, read("src/app/utils/money.py"), read("tests/utils/test_money.py"))
    h.assistant(
        "The tests expect half-up (`10.005 → 1001`). Checking what #412 did to this function.",
        sh(
            "git show 4e1c9a7 -- src/app/utils/money.py | head -40",
            "commit 4e1c9a7d2b61f0e3a9c58e4b7d10f2a6c3e9b815\n"
            "Author: Jonas Berg <jonas@ledgerline.dev>\n"
            "Date:   Mon Sep 15 17:21:44 2025 +0200\n\n"
            "    Switch money handling to Decimal (#412)\n\n"
            "diff --git a/src/app/utils/money.py b/src/app/utils/money.py\n"
            "index 5d0e7a1..b2f9c44 100644\n"
            "--- a/src/app/utils/money.py\n"
            "+++ b/src/app/utils/money.py\n"
            "@@ -1,20 +1,28 @@\n"
            '-"""Money helpers."""\n'
            '+"""Money helpers. Amounts are Decimal; minor units are ints; floats never appear."""\n'
            " \n"
            " from __future__ import annotations\n"
            " \n"
            "-ZERO = 0.0\n"
            "+from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal\n"
            "+\n"
            '+ZERO = Decimal("0")\n'
            " \n"
            '-def quantize(amount: float, currency: str = "USD") -> float:\n'
            "-    return round(amount + 1e-9, exponent(currency))\n"
            '+def quantize(amount: Decimal, currency: str = "USD") -> Decimal:\n'
            '+    """Round ``amount`` to the currency\'s minor unit."""\n'
            "+    step = Decimal(1).scaleb(-exponent(currency))\n"
            "+    return amount.quantize(step, rounding=ROUND_HALF_EVEN)",
        ),
    )
    h.assistant(
        "`quantize` rounds with ROUND_HALF_EVEN (banker's rounding): 10.005 → 10.00 and 0.125 → 0.12, "
        "while FIN-212 says half-up. Checking nothing else relies on the even mode before changing it.",
        search(
            "ROUND_HALF_EVEN",
            "ROUND_HALF_EVEN",
            sorted(p for p in repo.files if p.startswith("src/")),
        ),
        reasoning="If another module quantizes on its own with HALF_EVEN that would contradict AGENTS.md; grep first.",
    )
    h.assistant(
        "Only money.py uses it. Switching quantize to ROUND_HALF_UP.",
        edit(
            "src/app/utils/money.py",
            "    return amount.quantize(step, rounding=ROUND_HALF_EVEN)",
            "    return amount.quantize(step, rounding=ROUND_HALF_UP)",
        ),
    )
    suite.fix("money_rounding")
    h.assistant(None, pytest("tests/utils/test_money.py", "tests/billing/test_invoice.py"))
    h.assistant(
        "Rounding is fixed (test_to_cents_rounds_half_up and test_line_total_rounds_half_up pass). The three "
        "format_money failures are the second money.py bug: `format(Decimal('1234.5'), ',')` keeps the "
        "value's own exponent, so nothing pads to the currency's minor digits. Quantizing before formatting "
        "fixes USD/EUR/GBP and leaves JPY at zero decimals.",
        edit(
            "src/app/utils/money.py",
            '    return f"{sign}{symbol}{abs(amount):,}"',
            '    return f"{sign}{symbol}{quantize(abs(amount), currency):,}"',
        ),
    )
    suite.fix("format_money")
    h.assistant(None, pytest("tests/utils/test_money.py", "tests/utils/test_money_roundtrip.py"))
    h.assistant(
        "Green. ROUND_HALF_EVEN is now an unused import; checking lint on the module.",
        sh(
            "ruff check src/app/utils/money.py",
            "src/app/utils/money.py:5:21: F401 [*] `decimal.ROUND_HALF_EVEN` imported but unused\n"
            "  |\n"
            "3 | from __future__ import annotations\n"
            "4 | \n"
            "5 | from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal\n"
            "  |                     ^^^^^^^^^^^^^^^ F401\n"
            "  |\n"
            "  = help: Remove unused import: `decimal.ROUND_HALF_EVEN`\n\n"
            "Found 1 error.\n"
            "[*] 1 fixable with the `--fix` option.",
            1,
        ),
    )
    h.assistant(
        None,
        edit(
            "src/app/utils/money.py",
            "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal",
            "from decimal import ROUND_HALF_UP, Decimal",
        ),
    )
    h.assistant(
        None,
        sh(
            "ruff check src/app/utils/money.py && ruff format --check src/app/utils/money.py",
            "All checks passed!\n1 file already formatted",
        ),
    )
    h.user("Out of curiosity, why did HALF_EVEN get in there at all? Was that deliberate?")
    h.assistant(
        None,
        sh(
            "gh pr view 412 --json title,body,reviews --jq '.body' | sed -n '1,25p'",
            "Moves every money value from float to Decimal.\n\n"
            "- `quantize()` now uses `Decimal.quantize` instead of `round(x + 1e-9)`; Python's `round()` was already "
            "banker's rounding, so I kept ROUND_HALF_EVEN to avoid changing results in this PR.\n"
            "- API schemas unchanged (follow-up).\n- Webhooks/client unchanged (follow-up).\n\n"
            "Tests: updated the money tests; billing tests need a second pass.",
        ),
    )
    h.assistant(
        "It was deliberate but based on a misreading. The PR description says Python's `round()` was "
        "already banker's rounding, so HALF_EVEN preserved behaviour. But the old code was "
        "`round(amount + 1e-9, ...)`: the `+ 1e-9` nudged exact halves upward, so the float version "
        "effectively rounded half-up for positive amounts — which is why the existing half-up tests passed "
        "before #412. Keeping HALF_EVEN therefore *changed* results, and contradicts FIN-212. The PR also "
        "lists the schema and payments work as follow-ups, which explains most of the other failures."
    )
    h.assistant(
        None,
        todo(
            [
                (i, c, "completed" if i in "123" else "in_progress" if i == "4" else st)
                for i, c, st in plan
            ]
        ),
    )

    # -- tax ---------------------------------------------------------------------------
    h.assistant("Next: tax.", pytest("tests/billing/test_tax.py"))
    h.assistant(
        "Three failures, two causes. Reading the calculator and the settings it gets the default rate from.",
        read("src/app/billing/tax.py"),
        read("src/app/config.py"),
        reasoning="US-CA expects 0.73 and gets 0.72: the rate in the repr is 0.0724999… — a float turned into Decimal. "
        "The exempt failure is sum() starting at int 0.",
    )
    tax_before = repo.text("src/app/billing/tax.py")
    h.assistant(
        "Both confirmed:\n"
        "1. `Settings.default_tax_rate` is a `float`, and `rate_for` wraps it in `Decimal(...)`, which "
        "captures the binary error: `Decimal(0.0725)` is 0.07249999999999999500…, so 10.00 × rate rounds to "
        '0.72. The fix belongs in Settings — pydantic parses the env string "0.0725" straight into an exact '
        "Decimal.\n"
        "2. `total_tax` does `sum(line.amount ...)` with no start value; for an exempt customer there are "
        "no lines, so it returns int 0 and `quantize(0)` fails.",
        edit_many(
            "src/app/config.py",
            [
                (
                    "from functools import lru_cache\n",
                    "from decimal import Decimal\nfrom functools import lru_cache\n",
                ),
                (
                    "    default_tax_rate: float = Field(0.0, ge=0, le=0.3)",
                    '    default_tax_rate: Decimal = Field(Decimal("0"), ge=0, le=Decimal("0.3"))',
                ),
            ],
        ),
    )
    h.assistant(
        None,
        edit(
            "src/app/billing/tax.py",
            "        return Decimal(self._settings.default_tax_rate)",
            "        return self._settings.default_tax_rate",
        ),
    )
    h.assistant(
        None,
        edit(
            "src/app/billing/tax.py",
            "        return quantize(sum(line.amount for line in lines), currency)",
            "        return quantize(sum((line.amount for line in lines), ZERO), currency)",
        ),
    )
    h.assistant(
        None,
        edit(
            "src/app/billing/tax.py",
            "from app.utils.money import quantize",
            "from app.utils.money import ZERO, quantize",
        ),
    )
    suite.fix("tax_rate_float")
    suite.fix("tax_exempt_sum")
    h.assistant(None, pytest("tests/billing/test_tax.py", "tests/billing/test_tax_matrix.py"))
    h.assistant(
        "All tax tests pass, including the 124-case rate matrix. Reviewing the tax diff.",
        git_diff_file("src/app/billing/tax.py", tax_before),
    )
    h.user("Does Texas still come out right? TX is our biggest state by volume.")
    h.assistant(
        None,
        sh(
            "python -m pytest -q -k 'US-TX'",
            "...                                                                      [100%]\n3 passed, "
            f"{len(suite.inventory) - 3} deselected in 0.38s",
        ),
    )
    h.assistant(
        "Yes — all three TX cases pass (the exact-rate test and both tax-matrix codes). Texas has an explicit "
        "rate in the region table, so it never went through the float default; the default-rate bug only "
        "affected regions and tax codes without their own entry, such as digital goods in CA and NY."
    )
    repo.write(
        ".env.example",
        "APP_ENV=development\nDATABASE_URL=postgresql+psycopg://ledgerline:ledgerline@localhost:5432/ledgerline_dev\n"
        "REDIS_URL=redis://localhost:6379/2\nSTRIPE_API_KEY=sk_test_...\nSTRIPE_SIGNING_SECRET=whsec_...\n"
        "DEFAULT_TAX_RATE=0.0725\nINVOICE_BUCKET=ledgerline-invoices-dev\n",
    )
    h.assistant(
        "`default_tax_rate` is now parsed as Decimal from the environment. Making sure the documented "
        "example value is a plain decimal string pydantic can parse exactly.",
        read(".env.example"),
    )
    h.assistant(
        "`DEFAULT_TAX_RATE=0.0725` parses exactly as `Decimal('0.0725')`. (Noting for later: .env.example also "
        "uses `STRIPE_SIGNING_SECRET`.)",
        todo(
            [
                (i, c, "completed" if i in "1234" else "in_progress" if i == "5" else st)
                for i, c, st in plan
            ]
        ),
    )

    # -- proration -----------------------------------------------------------------------
    h.assistant(None, pytest("tests/billing/test_proration.py", flags="-q -x"))
    h.assistant(None, read("src/app/billing/proration.py"))
    h.assistant(
        "`days_left / days_in_period` is true division of two ints, so `ratio` is a float and "
        "`Decimal * float` raises. Making the ratio a Decimal keeps full precision until quantize.",
        edit(
            "src/app/billing/proration.py",
            "    ratio = days_left / days_in_period\n",
            "    ratio = Decimal(days_left) / Decimal(days_in_period)\n",
        ),
    )
    suite.fix("proration_float")
    h.assistant(None, pytest("tests/billing/test_proration.py"))
    prorate_tests = (
        "from datetime import date\nfrom decimal import Decimal\n\nimport pytest\n\nfrom app.billing.proration import prorate\n\n\n"
        "def test_mid_cycle_upgrade_prorates():\n"
        '    amount = prorate(Decimal("49.00"), Decimal("99.00"), date(2025, 9, 1), date(2025, 10, 1), date(2025, 9, 16), "USD")\n'
        '    assert amount == Decimal("25.00")\n'
    )
    repo.write("tests/billing/test_proration.py", prorate_tests)
    h.assistant(
        "Green. The existing tests only cover USD; AGENTS.md asks for a zero-decimal currency whenever money "
        "is involved, and proration is exactly where yen rounding could go wrong.",
        read("tests/billing/test_proration.py", 1, 12),
    )
    h.assistant(
        None,
        edit(
            "tests/billing/test_proration.py",
            '    assert amount == Decimal("25.00")\n',
            '    assert amount == Decimal("25.00")\n\n\n'
            "@pytest.mark.parametrize(\n"
            '    ("currency", "old", "new", "expected"),\n'
            '    [("USD", "10.00", "20.00", "3.33"), ("JPY", "1000", "2000", "333"), ("KRW", "10000", "25000", "5000")],\n'
            ")\n"
            "def test_prorate_rounds_to_currency_minor_unit(currency, old, new, expected):\n"
            "    amount = prorate(Decimal(old), Decimal(new), date(2025, 9, 1), date(2025, 10, 1), date(2025, 9, 21), currency)\n"
            "    assert amount == Decimal(expected)\n",
        ),
    )
    suite.inventory.extend(
        f"tests/billing/test_proration.py::test_prorate_rounds_to_currency_minor_unit[{c}]"
        for c in ("USD-10.00-20.00-3.33", "JPY-1000-2000-333", "KRW-10000-25000-5000")
    )
    h.assistant(None, pytest("tests/billing/test_proration.py", flags="-q -k currency_minor_unit"))

    # -- first read of invoice.py ------------------------------------------------------
    h.assistant(
        "Before moving to payments I want the current invoice.py in view: the summary says it was edited, "
        "and the client and webhook code both go through `compute_totals` / `record_payment`.",
        read("src/app/billing/invoice.py"),
        reasoning="Read the whole module once; it is about 400 lines and I need compute_totals, record_payment and the credit-note path.",
    )
    marks["invoice_reads"].append(len(h.messages) - 1)
    h.assistant(
        "invoice.py is consistent: all arithmetic is Decimal, rounding goes through `quantize(…, currency)`, "
        "and `record_payment` quantizes incoming amounts to the invoice currency. So the payment failures "
        "come from the callers. Looking for float conversions in src/.",
        search("float\\(", "float(", sorted(p for p in repo.files if p.startswith("src/"))),
    )

    # -- payments client ---------------------------------------------------------------
    start = repo.find_line("src/app/payments/client.py", "def charge(")
    h.assistant(
        "One hit, in `PaymentsClient.charge`. Reading it alongside the failing tests.",
        read("src/app/payments/client.py", start - 2, 16),
        pytest("tests/payments/test_client.py"),
    )
    client_before = repo.text("src/app/payments/client.py")
    h.assistant(
        "`int(float(amount) * 100)` has two bugs: 19.99 × 100 is 1998.9999… in binary and `int()` "
        "truncates to 1998; and JPY has no minor unit, so ¥1200 was sent as 120000 (a 100× overcharge in "
        "production if anyone bills in yen). `to_cents` handles both.",
        edit(
            "src/app/payments/client.py",
            "        amount_minor = int(float(amount) * 100)\n",
            "        amount_minor = to_cents(amount, currency)\n",
        ),
    )
    h.assistant(
        None,
        edit(
            "src/app/payments/client.py",
            "from app.config import Settings\n",
            "from app.config import Settings\nfrom app.utils.money import to_cents\n",
        ),
    )
    suite.fix("client_minor_units")
    h.assistant(
        None, pytest("tests/payments/test_client.py", "tests/payments/test_client_errors.py")
    )
    h.assistant(None, git_diff_file("src/app/payments/client.py", client_before))
    h.assistant(
        "`refund` takes `amount_minor` directly, so it depends on its callers converting correctly. "
        "Checking who calls it.",
        search("refund\\(", "refund(", sorted(p for p in repo.files if p.startswith("src/"))),
    )
    h.assistant(
        None,
        sh(
            "rg -n 'refund\\(' src tests",
            "src/app/payments/client.py:50:    def refund(self, *, charge_id: str, amount_minor: int | None = None) -> dict[str, Any]:\n"
            "src/app/billing/refunds.py:31:        self._payments.refund(charge_id=note.charge_id, amount_minor=to_cents(note.amount, invoice.currency))\n"
            'tests/payments/test_client.py:97:    payments.refund(charge_id="pi_1", amount_minor=500)',
        ),
    )
    h.assistant(
        "The only production caller (billing/refunds.py) already converts with `to_cents`, so refunds were "
        "never affected."
    )

    h.assistant(
        None,
        todo(
            [
                (i, c, "completed" if i in "1234" else "in_progress" if i == "5" else st)
                for i, c, st in plan
            ]
        ),
    )

    # -- CI screenshot (image 1) -----------------------------------------------------------
    h.user(
        [
            {
                "type": "text",
                "text": "FYI this is what the Actions run on the PR looks like — the 3.12 job is red too, and the "
                "first failure there is in test_dunning. Same root cause or something else?",
            },
            {
                "type": "image_url",
                "image_url": {"url": data_url(png_ci_dashboard(rng_for("demo-png-ci")))},
            },
        ]
    )
    h.assistant(
        "From the screenshot: test (3.11) and test (3.12) are both red, lint is green. The 3.12 job stops in "
        "tests/billing/test_dunning.py. That's a separate cause from the Decimal change, though related in "
        "spirit: dunning.py uses `datetime.utcnow()`, which returns a naive datetime. Locally on 3.11 that "
        "fails as a naive-vs-aware comparison against `due_at`; on 3.12 `utcnow()` is also deprecated, and "
        "with `filterwarnings = error` the DeprecationWarning fails the test before the comparison. One fix "
        "covers both.",
        read("src/app/billing/dunning.py"),
    )
    h.assistant(
        None,
        edit_many(
            "src/app/billing/dunning.py",
            [
                (
                    "from datetime import datetime, timedelta",
                    "from datetime import UTC, datetime, timedelta",
                ),
                (
                    "def is_overdue(invoice: Invoice, now: datetime | None = None) -> bool:\n    now = now or datetime.utcnow()",
                    "def is_overdue(invoice: Invoice, now: datetime | None = None) -> bool:\n    now = now or datetime.now(UTC)",
                ),
                (
                    "def reminders_for(invoices: Iterable[Invoice], now: datetime | None = None) -> list[Reminder]:\n    now = now or datetime.utcnow()",
                    "def reminders_for(invoices: Iterable[Invoice], now: datetime | None = None) -> list[Reminder]:\n    now = now or datetime.now(UTC)",
                ),
            ],
        ),
    )
    suite.fix("naive_datetime")
    h.assistant(
        "Checking on both interpreters, since 3.12 is the one CI complained about.",
        pytest("tests/billing/test_dunning.py"),
        sh(
            "uv run --python 3.12 --with-requirements requirements-dev.txt python -m pytest -q tests/billing/test_dunning.py",
            "Installed 41 packages in 212ms\n....                                                                     [100%]\n4 passed in 0.31s",
        ),
    )
    h.assistant(
        None,
        sh(
            'git diff --stat src/app/billing/dunning.py && python -W error -c "import app.billing.dunning as d; from app.billing.invoice import Invoice; print(d.reminders_for([]))"',
            " src/app/billing/dunning.py | 6 +++---\n 1 file changed, 3 insertions(+), 3 deletions(-)\n[]",
        ),
    )
    h.assistant(
        "Passing on 3.11 and 3.12. Checking the CI workflow in case the 3.12 job does anything else differently.",
        sh(
            "sed -n '1,60p' .github/workflows/ci.yml",
            "name: ci\non:\n  push:\n    branches: [main]\n  pull_request:\n\njobs:\n  lint:\n    runs-on: ubuntu-latest\n"
            "    steps:\n      - uses: actions/checkout@v4\n      - uses: astral-sh/setup-uv@v3\n      - run: uv run --frozen make lint\n\n"
            '  test:\n    runs-on: ubuntu-latest\n    strategy:\n      fail-fast: false\n      matrix:\n        python: ["3.11", "3.12"]\n'
            "    services:\n      postgres:\n        image: postgres:16\n        env:\n          POSTGRES_PASSWORD: postgres\n"
            '        ports: ["5432:5432"]\n    steps:\n      - uses: actions/checkout@v4\n      - uses: astral-sh/setup-uv@v3\n'
            "      - run: uv python install ${{ matrix.python }}\n      - run: uv sync --frozen --python ${{ matrix.python }}\n"
            "      - run: uv run --frozen python -m pytest -q -m 'not slow'\n        env:\n          DATABASE_URL: sqlite+pysqlite:///:memory:\n"
            '          STRIPE_API_KEY: sk_test_ci\n          DEFAULT_TAX_RATE: "0.0725"',
        ),
    )
    h.assistant(
        "Same command on both versions, no webhook secret in the CI env — so the settings error will show up "
        "in CI as well; the fixture change I make for it will cover CI too. Checking for other utcnow calls.",
        search(
            "utcnow",
            "utcnow",
            sorted(p for p in repo.files if p.startswith(("src/", "tests/"))),
            path=".",
        ),
    )
    h.assistant(
        "No other `utcnow()` calls. Moving on to the API layer.",
        todo(
            [
                (i, c, "completed" if i in "12345" else "in_progress" if i == "6" else st)
                for i, c, st in plan
            ]
        ),
    )

    # -- API: schemas + export ----------------------------------------------------------------
    h.assistant(None, pytest("tests/api"))
    h.assistant(
        "Three causes in tests/api: money typed as float in the response schema (string-amount and OpenAPI "
        "tests), the CSV export crashing on `json.dumps` of a Decimal, and the settings error. Reading the "
        "schema and the router together.",
        read("src/app/api/schemas.py"),
        read("src/app/api/routes_invoices.py"),
    )
    h.assistant(
        None,
        sh(
            'python -c "import pydantic, fastapi; print(pydantic.VERSION, fastapi.__version__)"',
            "2.9.2 0.115.0",
        ),
    )
    h.assistant(
        "pydantic 2.9. Checking how it serialises Decimal by default before choosing between a custom type "
        "and a serializer.",
        (
            "web_extract",
            {"urls": ["https://docs.pydantic.dev/2.9/concepts/serialization/"]},
            json.dumps(
                {
                    "results": [
                        {
                            "url": "https://docs.pydantic.dev/2.9/concepts/serialization/",
                            "title": "Serialization - Pydantic",
                            "content": '# Serialization\n\n## model_dump and model_dump_json\n\n`model_dump()` returns Python objects; `model_dump(mode="json")` and `model_dump_json()` return only JSON-compatible types. In JSON mode a `Decimal` is emitted as a string holding its exact value (`Decimal(\'86.5\')` becomes `"86.5"`), so trailing zeros are only present if the value carries them.\n\n## Custom serializers\n\n`@field_serializer("a", "b")` on a method registers a plain serializer for the named fields. The method receives the field value (and optionally an info object) and its return value replaces the field in the output. Serializers run in both Python and JSON mode unless `when_used` restricts them. The return annotation, when present, is used to build the JSON schema of the serialized output.\n\n## JSON Schema\n\nFields typed `Decimal` are described as `anyOf: [number, string]` in validation mode and as `string` in serialization mode.',
                        }
                    ]
                },
                ensure_ascii=False,
            ),
        ),
    )
    h.assistant(
        "The schema declares `float`, so pydantic coerces the Decimal totals into floats and the JSON carries "
        '`86.5` instead of `"86.50"`. Typing them as Decimal and serialising through `quantize` gives the '
        "currency's exact digits and makes the OpenAPI type `string`.",
        edit_many(
            "src/app/api/schemas.py",
            [
                (
                    "from datetime import date, datetime\n",
                    "from datetime import date, datetime\nfrom decimal import Decimal\n",
                ),
                (
                    "from pydantic import BaseModel, ConfigDict\n",
                    "from pydantic import BaseModel, ConfigDict, field_serializer\n\nfrom app.utils.money import quantize\n",
                ),
                (
                    "    subtotal: float\n    tax_total: float\n    total: float\n    amount_due: float\n",
                    "    subtotal: Decimal\n    tax_total: Decimal\n    total: Decimal\n    amount_due: Decimal\n",
                ),
                (
                    "    lines: list[LineOut]\n",
                    "    lines: list[LineOut]\n\n"
                    '    @field_serializer("subtotal", "tax_total", "total", "amount_due")\n'
                    "    def _money(self, value: Decimal):\n"
                    "        return str(quantize(value, self.currency))\n",
                ),
            ],
        ),
    )
    h.assistant(
        "The export writes an audit line with `json.dumps(row)`; row holds Decimals. `default=str` keeps the "
        "audit log exact without touching the CSV itself.",
        edit(
            "src/app/api/routes_invoices.py",
            '        audit_log.info("export row %s", json.dumps(row))',
            '        audit_log.info("export row %s", json.dumps(row, default=str))',
        ),
    )
    suite.fix("schema_floats")
    suite.fix("export_json")
    h.assistant(None, pytest("tests/api"))
    h.assistant(
        "The finalize endpoint should map CreditExceedsTotal the same way; tightening the except clause.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/api/routes_invoices.py",
                "old_string": "    except InvoiceError as exc:\n        raise HTTPException(409, str(exc))",
                "new_string": "    except InvoiceError as exc:  # includes CreditExceedsTotal\n        raise HTTPException(409, str(exc))",
            },
            json.dumps(
                {
                    "success": False,
                    "error": "old_string not found in src/app/api/routes_invoices.py. The closest match differs in: "
                    "'raise HTTPException(409, str(exc)) from exc'. Re-read the file and include the exact text.",
                }
            ),
        ),
    )
    h.assistant(
        "The line ends with `from exc`, and CreditExceedsTotal already subclasses InvoiceError, so it is "
        "mapped to 409 already. No change needed there. Checking the generated OpenAPI document instead:",
        sh(
            "python -c \"import json; from app.main import app; s = app.openapi()['components']['schemas']['InvoiceOut']['properties']; print(json.dumps({k: s[k] for k in ('subtotal', 'total', 'amount_due')}))\"",
            '{"subtotal": {"type": "string", "title": "Subtotal"}, "total": {"type": "string", "title": "Total"}, '
            '"amount_due": {"type": "string", "title": "Amount Due"}}',
        ),
    )

    h.user(
        "Heads-up from the portal team: their TypeScript client reads amount_due and does math on it. Will "
        "switching the JSON to strings break them?"
    )
    h.assistant(
        "Checking the generated TypeScript client that lives in this repo.",
        (
            "search_files",
            {"pattern": "amount_due|amountDue", "path": "clients/ts/src", "file_glob": "*.ts"},
            search_out(
                [
                    ("clients/ts/src/models/InvoiceOut.ts", 24, "amount_due: string;"),
                    ("clients/ts/src/models/InvoiceOut.ts", 19, "subtotal: string;"),
                    (
                        "clients/ts/src/money.ts",
                        8,
                        "export const toMinor = (amount: string, exponent: number): bigint =>",
                    ),
                    (
                        "clients/ts/src/money.ts",
                        15,
                        "export function formatAmount(amount: string, currency: string): string {",
                    ),
                ]
            ),
        ),
    )
    h.assistant(
        None,
        sh(
            "git log --oneline -3 -- clients/ts/src/models/InvoiceOut.ts && sed -n '1,20p' clients/ts/src/money.ts",
            "9d41a0e clients/ts: money fields are strings per API guideline (#371)\n"
            "2e6a7b9 Tax: per-region rates, reverse charge for EU B2B (#377)\n"
            "d2c7e11 clients/ts: regenerate from OpenAPI\n"
            "// Money arrives as decimal strings; never parse it with Number().\n"
            "const pow10 = (n: number): bigint => 10n ** BigInt(n);\n\n"
            "export const toMinor = (amount: string, exponent: number): bigint => {\n"
            '  const [whole, frac = ""] = amount.split(".");\n'
            '  return BigInt(whole) * pow10(exponent) + BigInt((frac + "0".repeat(exponent)).slice(0, exponent) || "0");\n'
            "};\n\n"
            "export function formatAmount(amount: string, currency: string): string {\n"
            '  return new Intl.NumberFormat("en-US", { style: "currency", currency }).format(Number(amount));\n'
            "}",
        ),
    )
    h.assistant(
        "It won't break them — it fixes a mismatch. The TypeScript client has typed these fields as `string` "
        'since #371 ("money fields are strings per API guideline") and converts with BigInt-based '
        "`toMinor`, so the API sending floats was the bug; their code was written for strings. One caveat "
        "for them: `formatAmount` uses `Number(amount)` for display only, which is fine for formatting but "
        "shouldn't be used for arithmetic."
    )

    # -- settings / .env (secrets) -----------------------------------------------------------
    h.assistant(
        "Only the settings error is left in tests/api. `stripe_webhook_secret` became required in #412 and "
        "the `app_settings` fixture doesn't set it. Before adding it to the fixture, checking how the app gets "
        "it outside tests.",
        search(
            "STRIPE_",
            "STRIPE_",
            sorted(p for p in repo.files if p.startswith(("src/", "tests/"))),
            path=".",
        ),
    )
    h.assistant(
        "Nothing in code reads the env var by name; it comes from the `.env` file via pydantic-settings. "
        "Checking which variable names the local .env defines.",
        read(".env"),
        reasoning="I only need the variable names; do not repeat any values from this file.",
    )
    marks["env_read"] = len(h.messages) - 1
    h.assistant(
        "Your local .env defines the webhook secret as `STRIPE_SIGNING_SECRET`, not `STRIPE_WEBHOOK_SECRET`, "
        "so the app itself would also refuse to start locally (I won't repeat any values from that file). "
        "I'll accept both names in Settings, and give the test fixture a dummy value.",
        edit_many(
            "src/app/config.py",
            [
                (
                    "from pydantic import Field, SecretStr",
                    "from pydantic import AliasChoices, Field, SecretStr",
                ),
                (
                    "    stripe_webhook_secret: SecretStr\n",
                    "    stripe_webhook_secret: SecretStr = Field(\n"
                    '        validation_alias=AliasChoices("STRIPE_WEBHOOK_SECRET", "STRIPE_SIGNING_SECRET")\n'
                    "    )\n",
                ),
            ],
        ),
    )
    h.assistant(
        None,
        edit(
            "tests/conftest.py",
            '    monkeypatch.setenv("STRIPE_API_KEY", "sk_test_dummy")\n',
            '    monkeypatch.setenv("STRIPE_API_KEY", "sk_test_dummy")\n    monkeypatch.setenv("STRIPE_WEBHOOK_SECRET", "whsec_test_dummy")\n',
        ),
    )
    suite.fix("settings_webhook_secret")
    h.assistant(None, pytest("tests/api"))
    h.assistant(
        "Listing the settings that are still required, so no other env var can trip the same error:",
        sh(
            'python -c "from app.config import Settings; print([n for n, f in Settings.model_fields.items() if f.is_required()])"',
            "['database_url', 'stripe_api_key', 'stripe_webhook_secret']",
        ),
    )
    h.assistant(
        "Documenting the canonical name in .env.example (the alias keeps existing .env files working).",
        edit(
            ".env.example", "STRIPE_SIGNING_SECRET=whsec_...\n", "STRIPE_WEBHOOK_SECRET=whsec_...\n"
        ),
    )
    h.assistant(
        "tests/api is green. Quick check that the app boots with your real .env under the old variable name:",
        sh(
            'python -c "from app.config import get_settings; s = get_settings(); print(type(s.default_tax_rate).__name__, s.default_tax_rate, bool(s.stripe_webhook_secret.get_secret_value()))"',
            "Decimal 0.0725 True",
        ),
    )

    h.assistant(
        None,
        todo(
            [
                (i, c, "completed" if i in "1234567" else "in_progress" if i == "8" else st)
                for i, c, st in plan
            ]
        ),
    )

    # -- repository Numeric(asdecimal) ---------------------------------------------------------
    h.assistant(None, pytest("tests/billing/test_invoice_repository.py"))
    h.assistant(None, read("src/app/db/models.py"))
    h.assistant(
        "`Numeric(12, 2, asdecimal=False)` makes SQLAlchemy hand back floats. It's on two columns. "
        "`asdecimal` is Python-side only, so no migration is needed; I'll confirm with alembic after.",
        edit(
            "src/app/db/models.py",
            "    amount_paid: Mapped[Decimal] = mapped_column(Numeric(12, 2, asdecimal=False), default=0)",
            '    amount_paid: Mapped[Decimal] = mapped_column(Numeric(12, 2), default=Decimal("0"))',
        ),
    )
    h.assistant(
        None,
        edit(
            "src/app/db/models.py",
            "    unit_price: Mapped[Decimal] = mapped_column(Numeric(12, 2, asdecimal=False))",
            "    unit_price: Mapped[Decimal] = mapped_column(Numeric(12, 4))",
        ),
        reasoning="unit_price needs 4 places: metered prices like 0.0125 exist in the test data (and the line-total test).",
    )
    h.assistant(
        None,
        sh(
            "ls migrations/versions | tail -n 5",
            "5f2d9c1a7e30_credit_notes.py\n7c1d2e9a0b44_reconcile_table.py\n91f3ab02c6d1_money_columns_numeric.py\n"
            "__init__.py\n__pycache__",
        ),
    )
    h.assistant(
        "I also widened `unit_price` to 4 decimal places because metered prices such as 0.0125 are in use — "
        "that one *is* a schema change, so it needs a migration. Checking what alembic sees.",
        sh(
            "alembic check",
            "INFO  [alembic.runtime.migration] Context impl SQLiteImpl.\n"
            "INFO  [alembic.runtime.migration] Will assume non-transactional DDL.\n"
            "INFO  [alembic.autogenerate.compare] Detected type change from NUMERIC(precision=12, scale=2) to "
            "Numeric(precision=12, scale=4) on 'invoice_lines.unit_price'\n"
            "ERROR [alembic.util.messaging] New upgrade operations detected: [('modify_type', None, "
            "'invoice_lines', 'unit_price', {'existing_nullable': False, 'existing_server_default': False, "
            "'existing_comment': None}, NUMERIC(precision=12, scale=2), Numeric(precision=12, scale=4))]\n"
            "  FAILED: New upgrade operations detected: [('modify_type', None, 'invoice_lines', 'unit_price', "
            "{'existing_nullable': False, 'existing_server_default': False, 'existing_comment': None}, "
            "NUMERIC(precision=12, scale=2), Numeric(precision=12, scale=4))]",
            255,
        ),
    )
    h.assistant(
        "As expected, the scale change needs a revision. That's a real schema change on a money column, so "
        "rather than slip it into a test-fix branch I'll revert the scale and keep this branch to the "
        "`asdecimal` fix. I'll mention the 4-place question to you at the end.",
        edit(
            "src/app/db/models.py",
            "    unit_price: Mapped[Decimal] = mapped_column(Numeric(12, 4))",
            "    unit_price: Mapped[Decimal] = mapped_column(Numeric(12, 2))",
        ),
    )
    suite.fix("numeric_asdecimal")
    h.assistant(
        None,
        sh(
            "alembic check",
            "INFO  [alembic.runtime.migration] Context impl SQLiteImpl.\n"
            "INFO  [alembic.runtime.migration] Will assume non-transactional DDL.\n"
            "No new upgrade operations detected.",
        ),
        pytest("tests/billing/test_invoice_repository.py", "tests/test_migrations.py"),
    )
    h.assistant(
        "Lint over the whole tree before the next full run.",
        sh(
            "make lint",
            "ruff check src tests\nAll checks passed!\nruff format --check src tests\nWould reformat: src/app/api/schemas.py\n"
            "Would reformat: tests/billing/test_proration.py\n2 files would be reformatted, 114 files already formatted\n"
            "make: *** [Makefile:19: lint] Error 1",
            2,
        ),
    )
    h.assistant(
        None,
        sh(
            "ruff format src/app/api/schemas.py tests/billing/test_proration.py && git diff --stat",
            "2 files reformatted\n"
            " src/app/api/schemas.py          | 16 ++++++++++++----\n src/app/billing/dunning.py      |  6 +++---\n"
            " src/app/billing/invoice.py      | 38 ++++++++++++++++++++++++--------------\n"
            " src/app/billing/proration.py    |  2 +-\n src/app/billing/tax.py          |  6 +++---\n"
            " src/app/config.py               |  9 ++++++---\n src/app/db/models.py            |  4 ++--\n"
            " src/app/payments/client.py      |  3 ++-\n src/app/utils/money.py          |  8 ++++----\n"
            " tests/billing/test_proration.py | 15 +++++++++++++++\n tests/conftest.py               |  7 ++++---\n"
            " 11 files changed, 77 insertions(+), 37 deletions(-)",
        ),
    )
    h.assistant("Full suite again to see what's left.", pytest())
    left = suite.tally()
    h.assistant(
        f"{summary_line(left)}. The only failures left are the two JPY webhook tests, which I expected — "
        "same `/ 100` pattern as the client. Before fixing that, a quick look at whether anything else "
        "handles processor amounts."
    )

    h.user("How many are left, roughly? I have a standup in 5 minutes.")
    h.assistant(
        f"{left['failed']} failing tests left, both the same cause (JPY amounts in the webhook handler); "
        "everything else is green. Fixed so far: rounding, money formatting, tax, proration, dunning (the 3.12 "
        "job), payments client, API schemas/export, settings, repository Decimal columns."
    )
    h.assistant(
        "While you're in standup: checking coverage on the modules I've touched, to be sure the fixes are "
        "exercised.",
        sh(
            "python -m pytest -q --cov=app.utils --cov=app.billing --cov-report=term-missing tests/utils tests/billing",
            suite.run(("tests/utils", "tests/billing"))[0].split("\n=")[0]
            + "\n\n---------- coverage: platform linux, python 3.11.9-final-0 -----------\n"
            "Name                           Stmts   Miss  Cover   Missing\n"
            "------------------------------------------------------------\n"
            "src/app/billing/__init__.py        0      0   100%\n"
            "src/app/billing/dunning.py        24      0   100%\n"
            "src/app/billing/invoice.py       231      9    96%   118, 287-290, 341, 398-401\n"
            "src/app/billing/proration.py      10      0   100%\n"
            "src/app/billing/refunds.py        22      4    82%   38-41\n"
            "src/app/billing/tax.py            44      1    98%   41\n"
            "src/app/utils/__init__.py          0      0   100%\n"
            "src/app/utils/money.py            27      0   100%\n"
            "------------------------------------------------------------\n"
            "TOTAL                            358     14    96%",
        ),
    )
    h.assistant(
        "money.py, proration.py and dunning.py are fully covered; the uncovered invoice.py lines are the "
        "summarize_batch export path and error branches unrelated to rounding."
    )

    # -- reconcile CLI: failing command with a traceback ---------------------------------
    h.user(
        "While you're in there: finance runs `python -m app.cli reconcile --dry-run` every night off main. "
        "Can you make sure that still works after all this?"
    )
    cli = "src/app/cli.py"
    money = "src/app/utils/money.py"
    trace = (
        "INV-2025-0107: expected $412.50, settled $412.05\n"
        "Traceback (most recent call last):\n"
        '  File "<frozen runpy>", line 198, in _run_module_as_main\n'
        '  File "<frozen runpy>", line 88, in _run_code\n'
        f'  File "{CWD}/src/app/cli.py", line {repo.find_line(cli, "sys.exit(main())")}, in <module>\n'
        "    sys.exit(main())\n"
        "             ^^^^^^\n"
        f'  File "{CWD}/src/app/cli.py", line {repo.find_line(cli, "return reconcile(args.file")}, in main\n'
        "    return reconcile(args.file, args.since, args.dry_run)\n"
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{CWD}/src/app/cli.py", line {repo.find_line(cli, "settled = parse_amount")}, in reconcile\n'
        '    settled = parse_amount(row["settled_amount"])\n'
        "              ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        f'  File "{CWD}/src/app/utils/money.py", line {repo.find_line(money, "return Decimal(raw.strip()")}, in parse_amount\n'
        '    return Decimal(raw.strip().replace(",", ""))\n'
        "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
        "decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]"
    )
    h.assistant(None, sh("python -m app.cli reconcile --dry-run", trace, 1))
    marks["failing_command"] = len(h.messages) - 1
    h.assistant(
        "It crashes: `decimal.InvalidOperation` from `parse_amount` on a `settled_amount` cell. Before #412 "
        "this was `float(...)`, which would also have failed on an empty cell, so let me look at the data.",
        read(cli),
        sh("head -n 7 var/settlements.csv", SETTLEMENTS_HEAD),
        reasoning="Likely a blank settled_amount for an unsettled invoice. Check the CSV rather than guess.",
    )
    h.assistant(
        "INV-2025-0118 has no settlement yet (empty `settled_amount` and `processor_ref`). Two changes:\n"
        "- `parse_amount` should raise a `ValueError` that names the bad input instead of a bare "
        "`InvalidOperation` — callers can catch that.\n"
        "- `reconcile` should treat a row without a settlement as pending and skip it, which is what the "
        "finance runbook describes.",
        edit_many(
            money,
            [
                (
                    "from decimal import ROUND_HALF_UP, Decimal\n",
                    "from decimal import ROUND_HALF_UP, Decimal, InvalidOperation\n",
                ),
                (
                    '    return Decimal(raw.strip().replace(",", ""))\n',
                    '    text = raw.strip().replace(",", "")\n'
                    "    if not text:\n"
                    '        raise ValueError("empty amount")\n'
                    "    try:\n"
                    "        return Decimal(text)\n"
                    "    except InvalidOperation:\n"
                    '        raise ValueError(f"not an amount: {raw!r}") from None\n',
                ),
            ],
        ),
    )
    h.assistant(
        None,
        edit(
            cli,
            '            expected = parse_amount(row["invoice_total"])\n',
            '            if not row["settled_amount"].strip():\n'
            "                pending += 1\n"
            "                continue\n"
            '            expected = parse_amount(row["invoice_total"])\n',
        ),
    )
    h.assistant(
        None,
        edit_many(
            cli,
            [
                ("    mismatches = 0\n", "    mismatches = 0\n    pending = 0\n"),
                (
                    "    print(f\"{mismatches} mismatch(es){' (dry run)' if dry_run else ''}\")\n",
                    "    print(f\"{mismatches} mismatch(es), {pending} pending{' (dry run)' if dry_run else ''}\")\n",
                ),
            ],
        ),
    )
    new_test = (
        "from __future__ import annotations\n\n"
        "from datetime import date\n"
        "from decimal import Decimal\n\n"
        "import pytest\n\n"
        "from app.cli import reconcile\n"
        "from app.utils.money import parse_amount\n\n"
        'CSV = """date,invoice,currency,invoice_total,settled_amount,processor_ref\n'
        "2025-09-03,INV-1,USD,412.50,412.05,pi_1\n"
        "2025-09-08,INV-2,USD,1234.50,,\n"
        "2025-09-09,INV-3,JPY,9515,9515,pi_3\n"
        '"""\n\n\n'
        "def test_pending_rows_are_skipped(tmp_path, capsys):\n"
        '    path = tmp_path / "settlements.csv"\n'
        "    path.write_text(CSV)\n"
        "    assert reconcile(path, date(2025, 9, 1), dry_run=True) == 0\n"
        "    out = capsys.readouterr().out\n"
        '    assert "INV-1: expected $412.50, settled $412.05" in out\n'
        '    assert "1 mismatch(es), 1 pending (dry run)" in out\n\n\n'
        '@pytest.mark.parametrize("raw", ["", "   ", "n/a"])\n'
        "def test_parse_amount_rejects_non_amounts(raw):\n"
        '    with pytest.raises(ValueError, match="amount"):\n'
        "        parse_amount(raw)\n\n\n"
        "def test_parse_amount_keeps_exact_digits():\n"
        '    assert parse_amount("1,050.00") == Decimal("1050.00")\n'
    )
    repo.write("tests/test_cli_pending.py", new_test)
    suite.inventory.extend(
        [
            "tests/test_cli_pending.py::test_pending_rows_are_skipped",
            "tests/test_cli_pending.py::test_parse_amount_rejects_non_amounts[]",
            "tests/test_cli_pending.py::test_parse_amount_rejects_non_amounts[   ]",
            "tests/test_cli_pending.py::test_parse_amount_rejects_non_amounts[n/a]",
            "tests/test_cli_pending.py::test_parse_amount_keeps_exact_digits",
        ]
    )
    h.assistant(
        "Adding regression tests for both behaviours.",
        (
            "write_file",
            {"path": "tests/test_cli_pending.py", "content": new_test},
            json.dumps(
                {
                    "success": True,
                    "path": "tests/test_cli_pending.py",
                    "bytes_written": len(new_test.encode()),
                }
            ),
        ),
    )
    h.assistant(
        None,
        sh(
            "ruff format tests/test_cli_pending.py && ruff check tests/test_cli_pending.py",
            "1 file left unchanged\nAll checks passed!",
        ),
    )
    h.assistant(
        None,
        sh(
            "git diff src/app/cli.py",
            "diff --git a/src/app/cli.py b/src/app/cli.py\nindex 0a1b2c3..4d5e6f7 100644\n"
            + Repo.diff(
                "src/app/cli.py", PROJECT_FILES["src/app/cli.py"], repo.text("src/app/cli.py")
            ),
        ),
    )
    h.assistant(
        None,
        sh(
            "python -m app.cli reconcile --dry-run",
            "INV-2025-0107: expected $412.50, settled $412.05\n"
            "INV-2025-0131: expected €88.00, settled €80.00\n"
            "2 mismatch(es), 1 pending (dry run)",
        ),
        pytest("tests/test_cli_pending.py", "tests/test_cli.py", "tests/utils"),
    )
    h.assistant(
        "And the non-dry-run exit code finance's cron relies on:",
        sh(
            'python -m app.cli reconcile --since 2025-09-08; echo "exit=$?"',
            "INV-2025-0131: expected €88.00, settled €80.00\n1 mismatch(es), 1 pending\nexit=1",
        ),
    )
    h.assistant(
        "The reconcile job runs again: 2 mismatches and 1 pending row, exit code 0 in dry-run mode. The two "
        "mismatches (INV-2025-0107 short by $0.45, INV-2025-0131 short by €8.00) are real data differences "
        "in var/settlements.csv, not code problems — worth forwarding to finance. The crash was a blank "
        "`settled_amount` for INV-2025-0118, which is now counted as pending, and `parse_amount` raises a "
        "ValueError naming the bad input."
    )

    # -- delegate an audit ------------------------------------------------------------------
    h.user(
        "Thanks. Can you double-check nothing else in the codebase still does float math on money? I don't want to find out in prod."
    )
    h.assistant(
        "I'll have a subagent do a systematic pass over src/ while I finish the webhook fix, so this context "
        "stays focused.",
        (
            "delegate_task",
            {
                "goal": "Audit src/app for any remaining float arithmetic or float conversion applied to money amounts, and report each finding with file:line, a one-line explanation, and whether it is a real bug.",
                "context": f"Repository: {CWD} (Python 3.11, FastAPI). Money must be decimal.Decimal end to end; rounding only via app.utils.money.quantize; processor amounts are integer minor units converted with to_cents/from_cents (JPY/KRW have exponent 0). Look for: float(, / 100, * 100, round(, math., float type hints on money fields, json.dumps of Decimal, Numeric(asdecimal=False). Known and already being fixed: src/app/payments/webhooks.py amount_received / 100. Do not edit files; read-only audit. Run `python -m pytest -q` only if needed.",
                "toolsets": ["terminal", "file"],
                "max_iterations": 30,
            },
            json.dumps(
                {
                    "results": [
                        {
                            "task_index": 0,
                            "status": "completed",
                            "summary": "Audited 41 modules under src/app (rg for float(, /100, *100, round(, math., ': float', asdecimal).\n"
                            "Findings:\n"
                            '1. src/app/payments/webhooks.py:43 `received = obj["amount_received"] / 100` — real bug (known): wrong for JPY/KRW, float for others. Use from_cents(amount, currency).\n'
                            "2. src/app/reports/charts.py:27 `float(total)` when building chart series — display only (matplotlib needs floats); not a bug, but add a comment.\n"
                            "3. src/app/billing/invoice.py — no float usage; all arithmetic Decimal; HUNDRED constant used for percents.\n"
                            "4. src/app/api/schemas.py — money fields now Decimal with a serializer; LineOut.quantity/unit_price are str (fine).\n"
                            "5. src/app/payments/client.py:33 `random.uniform` in backoff jitter — time, not money; fine.\n"
                            "No other float conversions, no round() on money, no Numeric(asdecimal=False) left.",
                            "api_calls": 17,
                            "duration_seconds": 94.6,
                            "model": "anthropic/claude-sonnet-4",
                        }
                    ],
                    "total_duration_seconds": 94.6,
                },
                ensure_ascii=False,
            ),
        ),
    )
    repo.write(
        "src/app/reports/charts.py",
        '"""Revenue charts for the finance dashboard."""\n\nfrom __future__ import annotations\n\n'
        "from collections.abc import Sequence\nfrom datetime import date\nfrom decimal import Decimal\n\n"
        'import matplotlib\n\nmatplotlib.use("Agg")\nimport matplotlib.pyplot as plt  # noqa: E402\n\n\n'
        "def revenue_series(days: Sequence[date], totals: Sequence[Decimal]) -> tuple[list[date], list[float]]:\n"
        "    xs = list(days)\n"
        "    ys = []\n"
        "    for total in totals:\n"
        "        ys.append(float(total))\n"
        "    return xs, ys\n\n\n"
        "def plot_revenue(days: Sequence[date], totals: Sequence[Decimal], path: str) -> None:\n"
        "    xs, ys = revenue_series(days, totals)\n"
        "    fig, ax = plt.subplots(figsize=(8, 3))\n"
        "    ax.plot(xs, ys)\n"
        "    fig.savefig(path, dpi=110)\n",
    )
    h.assistant(
        "The audit agrees with what I'd found: the only real remaining bug is the webhook conversion. "
        "Looking at the charts.py hit to be sure it is display-only.",
        read("src/app/reports/charts.py", 14, 8),
    )
    h.assistant(
        "Display-only: the floats go to matplotlib and are never summed back into money. Adding a comment so "
        "the next audit doesn't flag it again.",
        edit(
            "src/app/reports/charts.py",
            "        ys.append(float(total))\n",
            "        ys.append(float(total))  # plotting only; never feed these back into money math\n",
        ),
    )
    h.assistant("Now the webhook handler.", read("src/app/payments/webhooks.py"))
    h.assistant(
        "Checking the processor's documented rule for zero-decimal currencies before relying on "
        "`from_cents`.",
        (
            "web_extract",
            {"urls": ["https://docs.stripe.com/currencies#zero-decimal"]},
            json.dumps(
                {
                    "results": [
                        {
                            "url": "https://docs.stripe.com/currencies#zero-decimal",
                            "title": "Supported currencies | Stripe Documentation",
                            "content": "# Supported currencies\n\n## Zero-decimal currencies\n\nAll API requests expect amounts in the currency's smallest unit. For most currencies that is the equivalent of cents (for example, 1000 means 10.00 USD). Some currencies have no minor unit: for these, pass the amount as a whole number of the currency (for example, 500 means ¥500 for JPY, not ¥5).\n\nZero-decimal currencies include BIF, CLP, DJF, GNF, JPY, KMF, KRW, MGA, PYG, RWF, UGX, VND, VUV, XAF, XOF and XPF.\n\n## Three-decimal currencies\n\nBHD, JOD, KWD, OMR and TND use three decimals; amounts must still be sent in the smallest unit and, for card payments, rounded to the nearest ten.\n\n## Amounts in webhooks\n\nEvent payloads report `amount`, `amount_received` and `amount_capturable` in the same smallest-unit integers used in requests, together with the lowercase ISO currency code.",
                        }
                    ]
                },
                ensure_ascii=False,
            ),
        ),
    )
    wh = "src/app/payments/webhooks.py"
    h.assistant(
        "Confirmed: webhook amounts are smallest-unit integers plus a lowercase currency code, so "
        "`from_cents(amount_received, currency.upper())` is the right conversion. The `received == "
        "totals.amount_due` comparison only drives a log line, but it was float-vs-Decimal too; comparing "
        "Decimals fixes it.",
        edit_many(
            wh,
            [
                (
                    "from app.billing.invoice import InvoiceService, InvoiceStatus\n",
                    "from app.billing.invoice import InvoiceService, InvoiceStatus\nfrom app.utils.money import from_cents\n",
                ),
                (
                    '        received = obj["amount_received"] / 100\n',
                    '        received = from_cents(obj["amount_received"], obj["currency"].upper())\n',
                ),
                (
                    "        invoices.record_payment(invoice_id, Decimal(received))\n",
                    "        invoices.record_payment(invoice_id, received)\n",
                ),
            ],
        ),
    )
    h.assistant(
        None,
        sh(
            "ruff check src/app/payments/webhooks.py",
            "src/app/payments/webhooks.py:9:21: F401 [*] `decimal.Decimal` imported but unused\n"
            "Found 1 error.\n[*] 1 fixable with the `--fix` option.",
            1,
        ),
    )
    h.assistant(None, edit(wh, "from decimal import Decimal\n", ""))
    suite.fix("webhook_minor_units")
    h.assistant(None, pytest("tests/payments"))
    h.assistant(
        "Replaying the recorded JPY event from the processor's test mode through the handler against a "
        "local draft, end to end:",
        sh(
            "python scripts/replay_webhook.py tests/payments/fixtures/evt_payment_succeeded_jpy.json --invoice-currency JPY",
            "created open invoice inv_replay0000001 (JPY, total 9515)\n"
            "event evt_3Q1e9fLk1qJPY payment_intent.succeeded amount_received=9515 currency=jpy -> applied\n"
            "invoice inv_replay0000001: status=paid amount_paid=9515 amount_due=0",
        ),
    )
    h.assistant(
        "The recorded event now settles the yen invoice exactly (9515 → paid, nothing due)."
    )

    # -- second read of invoice.py ---------------------------------------------------------
    h.assistant(
        "Payments are green. One thing I want to double-check: `from_cents` for JPY returns `Decimal('9515')` "
        "with exponent 0, and `record_payment` then adds it to `amount_paid`. Re-reading invoice.py to make "
        "sure nothing there assumes two decimal places.",
        read("src/app/billing/invoice.py"),
    )
    marks["invoice_reads"].append(len(h.messages) - 1)
    h.assistant(
        None,
        sh(
            "python -m pytest -q -k 'JPY or jpy or KRW'",
            ".........................                                                [100%]\n25 passed, "
            f"{len(suite.inventory) - 25} deselected in 0.94s",
        ),
    )
    h.assistant(
        "Fine: `record_payment` quantizes with `invoice.currency`, `compute_totals` quantizes `total` and "
        "`amount_due` per currency, and `amount_due` is clamped at ZERO, so JPY payments stay whole yen and "
        "overpayments can't produce a negative due. Nothing in invoice.py assumes two decimals."
    )

    # -- manual API check with a background server -------------------------------------------
    h.user(
        "Can you sanity-check the API by hand too? Start the server and hit an invoice endpoint."
    )
    proc = "proc_" + ids.hex(12)
    h.assistant(
        None,
        (
            "terminal",
            {"command": "uvicorn app.main:app --port 8011 --log-level info", "background": True},
            json.dumps(
                {
                    "output": "Background process started",
                    "session_id": proc,
                    "pid": 48213,
                    "exit_code": 0,
                }
            ),
        ),
    )
    h.assistant(
        None,
        (
            "process",
            {"action": "poll", "session_id": proc},
            json.dumps(
                {
                    "session_id": proc,
                    "status": "running",
                    "output": "INFO:     Started server process [48213]\nINFO:     Waiting for application startup.\n"
                    "INFO:     seeded 3 demo invoices (APP_ENV=development)\nINFO:     Application startup complete.\n"
                    "INFO:     Uvicorn running on http://127.0.0.1:8011 (Press CTRL+C to quit)",
                }
            ),
        ),
    )
    h.assistant(
        None,
        sh(
            "curl -s -H 'Authorization: Bearer dev-local' http://127.0.0.1:8011/v1/invoices/inv_demo0000000042 | python -m json.tool",
            '{\n    "id": "inv_demo0000000042",\n    "number": "INV-2025-0042",\n    "status": "open",\n'
            '    "currency": "USD",\n    "subtotal": "1150.00",\n    "tax_total": "84.50",\n    "total": "1234.50",\n'
            '    "amount_due": "1234.50",\n    "issued_on": "2025-09-12",\n    "due_at": "2025-10-12T09:30:00Z",\n'
            '    "lines": [\n        {\n            "description": "Enterprise plan (annual, prorated)",\n'
            '            "quantity": "1",\n            "unit_price": "1150.00",\n            "tax_code": "standard"\n        }\n    ]\n}',
        ),
    )
    h.assistant(
        "Amounts come back as strings with two decimals. Checking the export endpoint and the server log "
        "in one go.",
        sh(
            "curl -s -H 'Authorization: Bearer dev-local' 'http://127.0.0.1:8011/v1/invoices/export.csv?month=2025-09'",
            "number,customer,currency,subtotal,tax,total,status\n"
            "INV-2025-0040,cus_8f2k1d,USD,86.50,6.27,92.77,paid\n"
            "INV-2025-0041,cus_41ab9c,JPY,8650,865,9515,open\n"
            "INV-2025-0042,cus_77e0aa,USD,1150.00,84.50,1234.50,open",
        ),
        (
            "process",
            {"action": "log", "session_id": proc},
            json.dumps(
                {
                    "session_id": proc,
                    "status": "running",
                    "output": "INFO:     Started server process [48213]\nINFO:     Application startup complete.\n"
                    'INFO:     127.0.0.1:50412 - "GET /v1/invoices/inv_demo0000000042 HTTP/1.1" 200 OK\n'
                    'INFO:     audit export row {"number": "INV-2025-0040", "total": "92.77", "tax": "6.27"}\n'
                    'INFO:     audit export row {"number": "INV-2025-0041", "total": "9515", "tax": "865"}\n'
                    'INFO:     audit export row {"number": "INV-2025-0042", "total": "1234.50", "tax": "84.50"}\n'
                    'INFO:     127.0.0.1:50418 - "GET /v1/invoices/export.csv?month=2025-09 HTTP/1.1" 200 OK',
                }
            ),
        ),
    )
    h.assistant(
        None,
        (
            "process",
            {"action": "kill", "session_id": proc},
            json.dumps({"session_id": proc, "status": "killed", "exit_code": -15}),
        ),
    )
    h.assistant(
        'Both endpoints behave: the invoice shows `"1234.50"`, the CSV export works (it used to 500), '
        "yen amounts have no decimals, and the audit lines are exact. Server stopped."
    )

    # -- rendered invoice screenshot (image 2) + vision ---------------------------------------
    h.user(
        [
            {
                "type": "text",
                "text": "Finance also sent me this screenshot of the PDF for INV-2025-0042 from production — the total "
                "looks off. Is that the same formatting bug?",
            },
            {
                "type": "image_url",
                "image_url": {"url": data_url(png_invoice(rng_for("demo-png-invoice")))},
            },
        ]
    )
    h.assistant(
        'The screenshot\'s total box reads "$1,234.5" — one decimal, which is exactly the format_money bug '
        "fixed earlier (production runs main, which has #412). Let me render the same invoice from this branch "
        "and compare.",
        sh(
            "python scripts/render_invoice.py inv_demo0000000042 --png artifacts/invoice-INV-2025-0042.png",
            "rendered INV-2025-0042 (1 page) -> artifacts/invoice-INV-2025-0042.pdf\n"
            "rasterized page 1 at 110 dpi -> artifacts/invoice-INV-2025-0042.png (850x1100)",
        ),
    )
    h.assistant(
        None,
        (
            "vision_analyze",
            {
                "image_url": "artifacts/invoice-INV-2025-0042.png",
                "question": "Read the totals box: what exact strings are shown for Subtotal, Tax, Total and Amount due?",
            },
            json.dumps(
                {
                    "success": True,
                    "analysis": "The document is an invoice titled INV-2025-0042 with a blue letterhead. The totals box in the "
                    "lower right shows: Subtotal $1,150.00; Tax (California 7.35%) $84.50; Total $1,234.50; Amount due "
                    "$1,234.50. All four amounts show two decimal places and thousands separators. The due date reads "
                    "October 12, 2025.",
                }
            ),
        ),
    )
    h.assistant(
        'Confirmed: the branch renders "$1,234.50" everywhere in the totals box, so the PDF issue is the same '
        "format_money bug and is fixed here. Once this merges, finance will want INV-2025-0042 re-rendered; "
        "the amounts themselves were always correct, only their display."
    )

    # -- verbose randomized run: exactly 3,000 lines ----------------------------------------------
    h.assistant(
        None,
        sh(
            "python -m pip list 2>/dev/null | grep -iE 'pytest|randomly|freezegun|respx'",
            "freezegun         1.5.1\npytest            8.3.3\npytest-anyio      4.6.0\npytest-cov        5.0.0\npytest-freezegun  0.4.2\npytest-randomly   3.15.0\nrespx             0.21.1",
        ),
    )
    suite.active.add("flaky_dedupe")
    h.assistant(
        "Now a full run in random order with debug logging, to catch order-dependent failures the plain run "
        "can hide. The output is long, so I'm keeping the last 3,000 lines.",
        sh(
            "python -m pytest -vv -p randomly --log-cli-level=DEBUG 2>&1 | tail -n 3000",
            suite.verbose_log(3000)[0],
            0,
            timeout=600,
        ),
        reasoning="tail hides pytest's exit code (no pipefail), so read the summary line rather than trusting exit_code.",
    )
    marks["long_output"] = len(h.messages) - 1
    h.assistant(
        "The exit code is tail's, not pytest's — the summary line shows 1 failure: "
        "`test_duplicate_events_are_ignored` with `'duplicate' == 'applied'`. It passed in every ordered run, "
        "so checking it in isolation and then with the same random seed.",
        sh(
            "python -m pytest -q tests/payments/test_webhooks.py::test_duplicate_events_are_ignored",
            ".                                                                        [100%]\n1 passed in 0.12s",
        ),
    )
    h.assistant(
        None,
        pytest(
            "tests/payments/test_webhooks.py", flags="-q -p randomly -p randomly_seed=3127904561"
        ),
    )
    h.assistant(
        "Reproduced with seed 3127904561. The cause is in the handler's module state:",
        read(wh, 1, 22),
    )
    h.assistant(
        None,
        sh(
            "git log --oneline -S _SEEN_EVENTS -- src/app/payments/webhooks.py",
            "e5b2d90 Webhooks: tolerate clock skew of 5 minutes (#390)",
        ),
    )
    h.assistant(
        "`_SEEN_EVENTS` is a module-level set that is never reset between tests, and two tests use the id "
        '`evt_1`. When the other one runs first, this test sees a "duplicate". It predates #412 (the set '
        "came in with #390), so it is not part of this migration. AGENTS.md says to file flaky tests as "
        "issues with the reproducing seed rather than patching around them. OK for me to open that issue on "
        "GitHub?"
    )
    h.user(
        "Yes go ahead. Check first whether someone already has an open PR touching the webhooks."
    )
    h.assistant(
        None,
        (
            "mcp__github__list_prs",
            {
                "owner": "ledgerline",
                "repo": "ledgerline",
                "state": "open",
                "base": "main",
                "per_page": 20,
            },
            json.dumps(
                [
                    {
                        "number": 427,
                        "title": "Customer portal: show credit notes on invoice page",
                        "user": "dkim",
                        "head": "portal/credit-notes",
                        "draft": False,
                        "updated_at": "2025-09-15T16:02:11Z",
                        "changed_files": 9,
                    },
                    {
                        "number": 424,
                        "title": "Bump sqlalchemy to 2.0.35",
                        "user": "renovate[bot]",
                        "head": "renovate/sqlalchemy-2.x",
                        "draft": False,
                        "updated_at": "2025-09-15T04:11:56Z",
                        "changed_files": 2,
                    },
                    {
                        "number": 419,
                        "title": "WIP: webhook event store in postgres (replaces in-memory dedupe)",
                        "user": "tvance",
                        "head": "tvance/webhook-event-store",
                        "draft": True,
                        "updated_at": "2025-09-10T11:47:03Z",
                        "changed_files": 6,
                    },
                    {
                        "number": 402,
                        "title": "docs: runbook for reconcile failures",
                        "user": "priya-fin",
                        "head": "docs/reconcile-runbook",
                        "draft": False,
                        "updated_at": "2025-09-03T08:30:40Z",
                        "changed_files": 1,
                    },
                ],
                ensure_ascii=False,
            ),
        ),
    )
    h.assistant(
        "#419 (draft, by tvance) replaces the in-memory dedupe with a Postgres event store, which would remove "
        "`_SEEN_EVENTS` entirely. I'll file the issue and link it to #419 so it isn't fixed twice.",
        (
            "mcp__github__create_issue",
            {
                "owner": "ledgerline",
                "repo": "ledgerline",
                "title": "Flaky: test_duplicate_events_are_ignored depends on test order (module-level _SEEN_EVENTS)",
                "body": "`tests/payments/test_webhooks.py::test_duplicate_events_are_ignored` fails when another test that "
                "handles an event with id `evt_1` runs first.\n\n**Reproduce**\n```\npython -m pytest -q -p randomly -p "
                "randomly_seed=3127904561 tests/payments/test_webhooks.py\n```\n\n**Observed**: `AssertionError: assert "
                "'duplicate' == 'applied'`\n**Expected**: the test passes in any order.\n\n**Cause**: "
                "`app.payments.webhooks._SEEN_EVENTS` is a module-level set that persists across tests (introduced in "
                "#390).\n\n**Options**: an autouse fixture that clears the set, or land #419, which replaces the "
                "in-memory dedupe with a Postgres event store.\n\nFound while fixing the Decimal migration on "
                "`fix/decimal-migration`; not caused by #412.",
                "labels": ["flaky-test", "payments"],
            },
            json.dumps(
                {
                    "number": 431,
                    "html_url": "https://github.com/ledgerline/ledgerline/issues/431",
                    "state": "open",
                    "title": "Flaky: test_duplicate_events_are_ignored depends on test order (module-level _SEEN_EVENTS)",
                    "labels": ["flaky-test", "payments"],
                    "created_at": "2025-09-16T10:58:24Z",
                }
            ),
        ),
    )
    suite.active.discard("flaky_dedupe")
    h.assistant("Filed as #431 (labels flaky-test, payments) with the seed and a pointer to #419.")
    h.assistant(
        None,
        sh(
            "python -m pytest -q --durations=5 -p no:randomly",
            "\n".join(suite.run(("tests",))[0].split("\n")[:-1])
            + "\n============================= slowest 5 durations ==============================\n"
            "0.41s call     tests/test_migrations.py::test_upgrade_head_on_empty_db\n"
            "0.22s setup    tests/api/test_routes_invoices.py::test_create_invoice_returns_201\n"
            "0.09s call     tests/payments/test_client.py::test_gives_up_after_max_attempts\n"
            "0.07s call     tests/api/test_auth.py::test_expired_token_is_401\n"
            "0.05s call     tests/billing/test_tax_matrix.py::test_rate_table[US-CA-standard]\n"
            + suite.run(("tests",))[0].split("\n")[-1],
        ),
    )
    h.assistant("No slow outliers either; the suite runs in about ten seconds in order.")

    # -- third read of invoice.py ------------------------------------------------------------
    h.user(
        "One more: Priya asked whether credit notes now round the same way as invoices. Can you check "
        "and give me a one-paragraph answer I can paste to her?"
    )
    h.assistant(
        "Checking the credit-note path in invoice.py.",
        read("src/app/billing/invoice.py"),
    )
    marks["invoice_reads"].append(len(h.messages) - 1)
    h.assistant(None, pytest("tests/billing/test_credit_notes.py"))
    h.assistant(
        "Here's a paragraph for Priya:\n\n"
        "> Yes. Credit notes and invoices share one rounding rule. `issue_credit_note` quantizes the credited "
        "amount with the invoice's currency through `app.utils.money.quantize`, which now uses ROUND_HALF_UP "
        "as agreed in FIN-212 (JPY and KRW round to whole units). `credit_lines` computes a line credit with "
        "the same `compute_totals` function as the invoice, so the credited tax matches the tax that was "
        "charged on those lines to the cent. A credit can never exceed the invoice total; the API rejects "
        "that with a 409.\n\n"
        "All credit-note tests pass (including 33.33 and 0.01 partial credits)."
    )

    # -- final checks: full suite, lint, types ------------------------------------------------
    h.assistant(
        "Final checks: full suite, lint and types in parallel.",
        pytest(),
        sh(
            "make lint",
            "ruff check src tests\nAll checks passed!\nruff format --check src tests\n118 files already formatted",
        ),
        sh(
            "make type",
            "mypy --strict src/app\n"
            f"src/app/api/schemas.py:{repo.find_line('src/app/api/schemas.py', 'def _money')}: error: Function is missing a return type annotation  [no-untyped-def]\n"
            "Found 1 error in 1 file (checked 41 source files)\n"
            "make: *** [Makefile:23: type] Error 1",
            2,
        ),
    )
    h.assistant(
        "Tests and lint are clean; mypy wants a return type on the serializer I added.",
        edit(
            "src/app/api/schemas.py",
            "    def _money(self, value: Decimal):\n",
            "    def _money(self, value: Decimal) -> str:\n",
        ),
    )
    h.assistant(
        None, sh("make type", "mypy --strict src/app\nSuccess: no issues found in 41 source files")
    )
    out312, _ = suite.run(("tests",))
    h.assistant(
        "And the whole suite on 3.12 through `make test`, the way CI's second job runs it:",
        sh("uv run --python 3.12 make test", "python -m pytest -q\n" + out312),
    )
    h.assistant(
        None,
        sh(
            "git diff --stat",
            " src/app/api/routes_invoices.py |  2 +-\n"
            " src/app/api/schemas.py         | 16 ++++++++++++----\n"
            " src/app/billing/dunning.py     |  6 +++---\n"
            " src/app/billing/invoice.py     | 38 ++++++++++++++++++++++++--------------\n"
            " src/app/billing/proration.py   |  2 +-\n"
            " src/app/billing/tax.py         |  6 +++---\n"
            " src/app/cli.py                 |  8 +++++++-\n"
            " src/app/config.py              |  9 ++++++---\n"
            " src/app/db/models.py           |  4 ++--\n"
            " src/app/payments/client.py     |  3 ++-\n"
            " src/app/payments/webhooks.py   |  6 +++---\n"
            " src/app/utils/money.py         | 16 +++++++++++-----\n"
            " tests/conftest.py              |  7 ++++---\n"
            " tests/test_cli_pending.py      | 36 ++++++++++++++++++++++++++++++++++++\n"
            " 14 files changed, 119 insertions(+), 42 deletions(-)",
        ),
    )
    final = suite.tally()
    h.assistant(
        f"Done — the suite is green ({summary_line(final)}), `make lint` and `make type` pass. Nothing is "
        "committed.\n\n"
        "**Fixes (by cause)**\n"
        "- `utils/money.py`: quantize uses ROUND_HALF_UP (FIN-212); `format_money` pads to the currency's "
        "minor digits; `parse_amount` raises ValueError on blank/non-numeric input.\n"
        "- `billing/tax.py` + `config.py`: `default_tax_rate` is a Decimal setting (was float → 0.0724999…); "
        "`total_tax` sums from ZERO.\n"
        "- `billing/proration.py`: Decimal ratio. `billing/dunning.py`: aware `datetime.now(UTC)` (fixes the "
        "3.12 job).\n"
        "- `payments/client.py` / `webhooks.py`: `to_cents` / `from_cents` — JPY was being charged 100× and "
        "19.99 was sent as 1998.\n"
        "- `api/schemas.py`: money fields are Decimal, serialised as strings; `routes_invoices.py`: export "
        "audit log no longer crashes.\n"
        "- `db/models.py`: `Numeric` columns return Decimal.\n"
        "- `config.py`: accepts STRIPE_SIGNING_SECRET as well as STRIPE_WEBHOOK_SECRET; the test fixture sets a "
        "dummy.\n"
        "- `cli.py`: reconcile skips pending rows instead of crashing; new tests in tests/test_cli_pending.py.\n\n"
        "**For you to decide**\n"
        "- `invoice_lines.unit_price` is Numeric(12, 2), but metered prices like 0.0125 exist. Widening it "
        "needs a migration; I left it out of this branch.\n"
        "- Flaky test filed as #431 (linked to draft PR #419).\n"
        "- Finance: two real settlement mismatches (INV-2025-0107, INV-2025-0131); INV-2025-0042's PDF needs "
        "re-rendering after merge."
    )
    h.user(
        "Nice. Before I review: can you also run the slow tests against the postgres container? CI skips them."
    )
    h.assistant(
        None,
        sh(
            "make db-up",
            "docker compose up -d postgres\n[+] Running 2/2\n ✔ Network ledgerline_default       Created\n"
            " ✔ Container ledgerline-postgres-1  Started\nwaiting for postgres on localhost:5432 ... ready (2.1s)",
        ),
    )
    h.assistant(
        None,
        sh(
            "DATABASE_URL=postgresql+psycopg://ledgerline:ledgerline@localhost:5432/ledgerline_test python -m pytest -q -m slow",
            "..                                                                       [100%]\n2 passed, "
            f"{len(suite.inventory) - 2} deselected in 3.87s",
        ),
    )
    h.assistant(
        "Both slow tests pass on Postgres 16 (the Numeric round-trip and the downgrade migration). Stopping "
        "the container.",
        sh(
            "make db-down",
            "docker compose down\n[+] Running 2/2\n ✔ Container ledgerline-postgres-1  Removed\n ✔ Network ledgerline_default       Removed",
        ),
    )
    h.user("Great work. Add a changelog entry under Unreleased for this, then I'll review.")
    h.assistant(None, read("CHANGELOG.md", 1, 12))
    h.assistant(
        None,
        edit(
            "CHANGELOG.md",
            "### Changed\n- Money is handled as `Decimal` end to end; floats are rejected at the edges (#412).\n",
            "### Changed\n- Money is handled as `Decimal` end to end; floats are rejected at the edges (#412).\n\n"
            "### Fixed\n"
            "- Amounts are rounded half-up everywhere and always shown with the currency's minor digits "
            "(`$1,234.50`, `¥1,200`), in the API, CSV export and invoice PDFs.\n"
            "- Charges and webhook payments in zero-decimal currencies (JPY, KRW) use whole units; USD/EUR "
            "amounts are no longer truncated by a cent.\n"
            "- Tax for the default rate is exact (e.g. 7.25% of $10.00 is $0.73).\n"
            "- `reconcile` skips settlements that are still pending instead of crashing.\n"
            "- `STRIPE_SIGNING_SECRET` is accepted as the webhook secret.\n",
        ),
    )
    h.assistant(
        None,
        sh(
            "git diff CHANGELOG.md",
            "diff --git a/CHANGELOG.md b/CHANGELOG.md\nindex 77c0e1a..b9d2f40 100644\n"
            + Repo.diff("CHANGELOG.md", CHANGELOG_MD, repo.text("CHANGELOG.md")),
        ),
    )
    h.assistant(
        'Added a "Fixed" section under [Unreleased] with the user-visible changes; internal fixes (schemas, models, tests) are left out as they don\'t change behaviour for users.'
    )
    h.user(
        "Reviewed, looks good. Commit it as a few logical commits (money/tax core, payments, api+settings, "
        "cli, changelog) and push the branch. I'll open the PR myself."
    )
    commits = [
        (
            "fix(money): round half-up and pad to minor digits; Decimal tax rate and proration",
            "src/app/utils/money.py src/app/billing/tax.py src/app/billing/proration.py src/app/billing/dunning.py src/app/billing/invoice.py src/app/config.py src/app/db/models.py tests/conftest.py tests/billing/test_proration.py .env.example",
            "[fix/decimal-migration 6b0e2d1] fix(money): round half-up and pad to minor digits; Decimal tax rate and proration\n 10 files changed, 71 insertions(+), 29 deletions(-)",
        ),
        (
            "fix(payments): convert processor amounts with to_cents/from_cents",
            "src/app/payments/client.py src/app/payments/webhooks.py",
            "[fix/decimal-migration a41f7c3] fix(payments): convert processor amounts with to_cents/from_cents\n 2 files changed, 5 insertions(+), 4 deletions(-)",
        ),
        (
            "fix(api): serialise money as strings; exact export audit log",
            "src/app/api/schemas.py src/app/api/routes_invoices.py",
            "[fix/decimal-migration 0d93e58] fix(api): serialise money as strings; exact export audit log\n 2 files changed, 13 insertions(+), 5 deletions(-)",
        ),
        (
            "fix(cli): skip pending settlements in reconcile",
            "src/app/cli.py tests/test_cli_pending.py",
            "[fix/decimal-migration 7e2a4b9] fix(cli): skip pending settlements in reconcile\n 2 files changed, 43 insertions(+), 1 deletion(-)\n create mode 100644 tests/test_cli_pending.py",
        ),
        (
            "docs(changelog): note Decimal migration fixes",
            "CHANGELOG.md",
            "[fix/decimal-migration c58d1f0] docs(changelog): note Decimal migration fixes\n 1 file changed, 10 insertions(+)",
        ),
    ]
    h.assistant("Running the suite once more on the exact tree I'm about to commit.", pytest())
    h.assistant(
        "Committing in five logical commits. `.env` stays out (it's in .gitignore), and I'm staging explicit "
        "paths only.",
        sh(
            f"git add {commits[0][1]} && git commit -q -m '{commits[0][0]}' && git log -1 --stat --format='[%h] %s'",
            commits[0][2],
        ),
    )
    for msg, paths, out in commits[1:]:
        h.assistant(None, sh(f"git add {paths} && git commit -m '{msg}'", out))
    h.assistant(
        None,
        sh(
            "git status --short && git log --oneline -6",
            "c58d1f0 (HEAD -> fix/decimal-migration) docs(changelog): note Decimal migration fixes\n7e2a4b9 fix(cli): skip pending settlements in reconcile\n0d93e58 fix(api): serialise money as strings; exact export audit log\na41f7c3 fix(payments): convert processor amounts with to_cents/from_cents\n6b0e2d1 fix(money): round half-up and pad to minor digits; Decimal tax rate and proration\n4e1c9a7 (origin/main, origin/HEAD, main) Switch money handling to Decimal (#412)",
        ),
    )
    h.assistant(
        None,
        sh(
            "git push -u origin fix/decimal-migration",
            "Enumerating objects: 58, done.\nCounting objects: 100% (58/58), done.\nDelta compression using up to 8 threads\n"
            "Compressing objects: 100% (31/31), done.\nWriting objects: 100% (36/36), 9.84 KiB | 3.28 MiB/s, done.\n"
            "Total 36 (delta 24), reused 0 (delta 0), pack-reused 0\nremote: Resolving deltas: 100% (24/24), completed with 17 local objects.\n"
            "remote: \nremote: Create a pull request for 'fix/decimal-migration' on GitHub by visiting:\n"
            "remote:      https://github.com/ledgerline/ledgerline/pull/new/fix/decimal-migration\nremote: \n"
            "To github.com:ledgerline/ledgerline.git\n * [new branch]      fix/decimal-migration -> fix/decimal-migration\n"
            "branch 'fix/decimal-migration' set up to track 'origin/fix/decimal-migration'.",
        ),
    )
    h.assistant(
        "Pushed `fix/decimal-migration` with five commits on top of #412; the working tree is clean. GitHub's "
        "link for opening the PR: https://github.com/ledgerline/ledgerline/pull/new/fix/decimal-migration"
    )

    # -- the latest ask -------------------------------------------------------------------------
    h.user(LATEST_ASK)
    marks["latest_ask"] = len(h.messages) - 1
    h.assistant(
        "Got it. Today `_post_with_retries` re-sends the same POST after timeouts and 5xx responses without an "
        "idempotency key, so a retry after a lost response can create a second charge. My plan: derive an "
        "`Idempotency-Key` once per logical operation (from the invoice id and amount for charges), send the same "
        "key on every attempt, and add a respx test that fails the first attempt with a timeout and asserts both "
        "requests carried the same key and only one charge was created. Starting with client.py."
    )

    # ------------------------------------------------------------------------------- write
    doc = {
        "session_id": "20250916_084107_a3f9c1",
        "model": "anthropic/claude-sonnet-4",
        "base_url": "https://openrouter.ai/api/v1",
        "platform": "cli",
        "session_start": datetime(2025, 9, 16, 8, 41, 7, 118233).isoformat(),
        "last_updated": clock.local(),
        "system_prompt": hermes_system_prompt(),
        "tools": HERMES_TOOLS,
        "message_count": len(h.messages),
        "messages": h.messages,
    }
    write_text(out_dir / "demo.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n")

    reads = [h.messages[i]["content"] for i in marks["invoice_reads"]]
    if len(set(reads)) != 1 or len(reads) != 3:
        raise AssertionError("demo: the three invoice.py reads must be identical")
    if len(json.loads(h.messages[marks["long_output"]]["content"])["output"].split("\n")) != 3000:
        raise AssertionError("demo: the long output must be exactly 3,000 lines")
    return {
        "format": "hermes",
        "rule": "Hermes session log: every entry of `messages` is one message, in order; the top-level "
        "system_prompt is not a message. Tool calls are the entries of assistant `tool_calls`. A message "
        "whose content starts with the compaction prefix is a summary (user role here). Hermes logs do not "
        "record what triggered a compaction or the token count before it, so trigger is unknown and "
        "pre_tokens null.",
        "messages": len(h.messages),
        "roles": role_counts(m["role"] for m in h.messages),
        "tool_calls": h.tool_calls,
        "tool_results": sum(1 for m in h.messages if m["role"] == "tool"),
        "compactions": h.compactions,
        "images": h.images,
        "model": doc["model"],
        "session_id": doc["session_id"],
        "system_prompt_chars": len(doc["system_prompt"]),
        "tools": len(HERMES_TOOLS),
        "parallel_tool_call_messages": sum(
            1 for m in h.messages if len(m.get("tool_calls") or ()) > 1
        ),
        "repeated_read": {
            "path": "src/app/billing/invoice.py",
            "tool_message_indexes": marks["invoice_reads"],
        },
        "long_output": {"tool_message_index": marks["long_output"], "lines": 3000},
        "failing_command": {"tool_message_index": marks["failing_command"], "exit_code": 1},
        "secrets": {
            "tool_message_index": marks["env_read"],
            "kinds": [
                "openai_api_key",
                "aws_access_key_id",
                "aws_secret_access_key",
                "github_token",
                "postgres_url_password",
                "jwt",
                "stripe_secret_key",
                "stripe_webhook_secret",
            ],
        },
        "latest_user_ask": {"index": marks["latest_ask"], "text": LATEST_ASK},
    }


# =========================================================================== OpenAI chat

WEBHOOK_TEST_ROTATION = _text("text/webhook_test_rotation.py.txt")


class ChatLog:
    """OpenAI Chat Completions messages, with the counts a reader should reproduce."""

    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.messages: list[dict[str, Any]] = []
        self.tool_calls = 0
        self.images = 0
        self.invalid_arguments: list[int] = []

    def add(self, msg: dict[str, Any]) -> None:
        self.messages.append(msg)

    def user(self, content: str | list[dict[str, Any]]) -> None:
        if isinstance(content, list):
            self.images += sum(1 for p in content if p.get("type") == "image_url")
        self.add({"role": "user", "content": content})

    def assistant(self, text: str | None, *calls: Call) -> None:
        msg: dict[str, Any] = {"role": "assistant", "content": text}
        ids = []
        if calls:
            msg["tool_calls"] = []
            for name, args, _ in calls:
                cid = self.ids.call()
                ids.append(cid)
                raw = args if isinstance(args, str) else dumps_args(args)
                try:
                    json.loads(raw)
                except json.JSONDecodeError:
                    self.invalid_arguments.append(len(self.messages))
                msg["tool_calls"].append(
                    {"id": cid, "type": "function", "function": {"name": name, "arguments": raw}}
                )
        self.add(msg)
        self.tool_calls += len(calls)
        for cid, (name, _, result) in zip(ids, calls, strict=True):
            self.add({"role": "tool", "tool_call_id": cid, "name": name, "content": result})


def _oa_tools() -> list[dict[str, Any]]:
    return [
        _fn(
            "shell",
            "Run a bash command in the repository and return stdout, stderr and the exit code.",
            {"command": {"type": "string"}, "timeout_s": {"type": "integer", "default": 120}},
            ["command"],
        ),
        _fn(
            "read_file",
            "Read a file (optionally a line range) with line numbers.",
            {"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}},
            ["path"],
        ),
        _fn(
            "apply_patch",
            "Apply a unified diff to the working tree. Fails if any hunk does not apply cleanly.",
            {"diff": {"type": "string", "description": "A unified diff with a/ and b/ prefixes."}},
            ["diff"],
        ),
        _fn(
            "list_files",
            "List files under a directory, respecting .gitignore.",
            {"path": {"type": "string"}, "glob": {"type": "string"}},
            ["path"],
        ),
    ]


def _shell(out: str, code: int = 0, err: str = "") -> str:
    return json.dumps({"stdout": out, "stderr": err, "exit_code": code})


def build_openai(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("openai")
    ids = Ids(rng)
    repo = Repo({"src/app/payments/webhooks.py": PROJECT_FILES["src/app/payments/webhooks.py"]})
    c = ChatLog(ids)
    wh = "src/app/payments/webhooks.py"

    def rd(path: str, start: int | None = None, end: int | None = None) -> Call:
        args: dict[str, Any] = {"path": path}
        lines = repo.lines(path)
        a, b = start or 1, end or len(lines)
        if start is not None:
            args["start"], args["end"] = a, b
        return ("read_file", args, repo.numbered(path, a, b - a + 1))

    c.add(
        {
            "role": "system",
            "content": "You are a senior software engineer pairing with the user in their repository "
            f"({CWD}). Use the tools to inspect and change code; never invent file contents. Keep changes minimal, "
            "run the relevant tests after each change, and explain root causes briefly. Money in this codebase is "
            "Decimal; webhook code must verify signatures before parsing payloads.",
        }
    )
    c.user(
        [
            {
                "type": "text",
                "text": "Since we rotated the webhook signing secret this morning, the processor dashboard shows every "
                "delivery failing with 400 (screenshot). Rotation keeps both secrets valid for 24h, so this shouldn't "
                "happen. Can you find out why?",
            },
            {
                "type": "image_url",
                "image_url": {
                    "url": data_url(png_ci_dashboard(rng_for("openai-png"), 40, 28)),
                    "detail": "high",
                },
            },
        ]
    )
    c.assistant(
        None,
        rd(wh),
        (
            "shell",
            {"command": "python -m pytest -q tests/payments/test_webhooks.py"},
            _shell(
                "..........F....                                                          [100%]\n"
                "=================================== FAILURES ===================================\n"
                "_________________ test_signature_valid_during_secret_rotation __________________\n\n"
                "signing = <tests.payments.conftest.Signer object at 0x7f1c3a2b5e50>\n\n"
                + "\n".join(
                    "    " + line if line else ""
                    for line in WEBHOOK_TEST_ROTATION.splitlines()[:-1]
                )
                + "\n>       verify_signature(payload, header, NEW_SECRET, now=ts + 10)\n\n"
                "tests/payments/test_webhooks.py:71: \n" + SEP_FRAME + "\n\n"
                "    def verify_signature(payload: bytes, header: str, secret: str, now: float | None = None) -> None:\n"
                "        ...\n"
                "        if not hmac.compare_digest(digest, expected):\n"
                '>           raise SignatureError("signature mismatch")\n'
                "E           app.payments.webhooks.SignatureError: signature mismatch\n\n"
                "src/app/payments/webhooks.py:36: SignatureError\n"
                "=========================== short test summary info ============================\n"
                "FAILED tests/payments/test_webhooks.py::test_signature_valid_during_secret_rotation - app.payments.webhooks.SignatureError: signature mismatch\n"
                "1 failed, 14 passed in 0.41s",
                1,
            ),
        ),
    )
    c.assistant(
        "The screenshot shows consecutive 400s starting 09:02, right after the rotation, and the rotation test "
        "reproduces it locally. I want to see how the test builds the header.",
        (
            "shell",
            '{"command": "grep -n \\"v1=\\" -r tests/payments src/app/payments"',
            json.dumps(
                {
                    "error": "Invalid tool arguments: Expecting ',' delimiter: line 1 column 64 (char 63). Arguments must be a JSON object."
                }
            ),
        ),
    )
    c.assistant(
        None,
        (
            "shell",
            {"command": 'grep -n "v1=" -r tests/payments src/app/payments'},
            _shell(
                'tests/payments/test_webhooks.py:69:    header = f"t={ts},v1={signing.sign(payload, ts, OLD_SECRET)},v1={signing.sign(payload, ts, NEW_SECRET)}"\n'
                'tests/payments/conftest.py:22:        return f"t={ts},v1={self.sign(payload, ts, secret)}"\n'
                'src/app/payments/webhooks.py:28:        expected = parts["v1"]'
            ),
        ),
    )
    c.assistant(
        "Found it. During rotation the processor sends one `v1=` signature per active secret, e.g. "
        "`t=…,v1=<old>,v1=<new>`. `verify_signature` parses the header with `dict(...)`, so duplicate keys "
        "collapse and only the *last* `v1` survives. The processor lists the signature for the newest secret "
        "first, so we keep the old-secret signature and compare it against the new secret: mismatch on every "
        "delivery. The fix is to collect every `v1` value and accept the payload if any of them matches.",
        rd(wh, 21, 37),
    )
    old = (
        '    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)\n'
        "    try:\n"
        '        timestamp = int(parts["t"])\n'
        '        expected = parts["v1"]\n'
        "    except (KeyError, ValueError):\n"
        '        raise SignatureError("malformed signature header") from None\n'
    )
    new = (
        '    pairs = [item.split("=", 1) for item in header.split(",") if "=" in item]\n'
        '    candidates = [value for key, value in pairs if key == "v1"]\n'
        "    try:\n"
        '        timestamp = int(next(value for key, value in pairs if key == "t"))\n'
        "    except (StopIteration, ValueError):\n"
        '        raise SignatureError("malformed signature header") from None\n'
        "    if not candidates:\n"
        '        raise SignatureError("malformed signature header")\n'
    )
    d1 = repo.patch(wh, old, new)
    c.assistant(
        None, ("apply_patch", {"diff": d1 + "\n"}, json.dumps({"applied": True, "files": [wh]}))
    )
    old2 = "    if not hmac.compare_digest(digest, expected):\n"
    new2 = "    if not any(hmac.compare_digest(digest, candidate) for candidate in candidates):\n"
    d2 = repo.patch(wh, old2, new2)
    c.assistant(
        None, ("apply_patch", {"diff": d2 + "\n"}, json.dumps({"applied": True, "files": [wh]}))
    )
    c.assistant(
        None,
        (
            "shell",
            {"command": "python -m pytest -q tests/payments/test_webhooks.py"},
            _shell(
                "...............                                                          [100%]\n15 passed in 0.38s"
            ),
        ),
    )
    c.assistant(
        "All 15 pass. I'd like one more test for the other ordering (old secret listed last) and for a header "
        "with no `v1` at all, since the parser changed.",
        (
            "read_file",
            {"path": "tests/payments/test_webhooks.py", "start": 60, "end": 72},
            "\n".join(
                f"{n:>6}|{line}"
                for n, line in enumerate(
                    [
                        "",
                        "",
                        '@pytest.mark.parametrize("header", ["", "t=1", "v1=abc", "garbage"], ids=["empty", "no-t", "no-v1", "garbage"])',
                        "def test_malformed_header(header):",
                        "    with pytest.raises(SignatureError):",
                        '        verify_signature(b"{}", header, NEW_SECRET, now=1)',
                        "",
                        "",
                        *WEBHOOK_TEST_ROTATION.splitlines()[:4],
                    ],
                    start=60,
                )
            ),
        ),
    )
    test_diff = (
        "--- a/tests/payments/test_webhooks.py\n+++ b/tests/payments/test_webhooks.py\n@@ -73,0 +74,16 @@\n"
        '+\n+\n+@pytest.mark.parametrize("order", ["old-first", "new-first"])\n'
        "+def test_rotation_accepts_either_order(signing, order):\n"
        '+    payload = b\'{"id": "evt_rot2"}\'\n+    ts = 1757930400\n'
        "+    sigs = [signing.sign(payload, ts, OLD_SECRET), signing.sign(payload, ts, NEW_SECRET)]\n"
        '+    if order == "new-first":\n+        sigs.reverse()\n'
        '+    header = f"t={ts}," + ",".join(f"v1={s}" for s in sigs)\n'
        "+    verify_signature(payload, header, NEW_SECRET, now=ts)\n+\n+\n"
        "+def test_header_with_only_v0_is_rejected(signing):\n"
        '+    with pytest.raises(SignatureError, match="malformed"):\n'
        '+        verify_signature(b"{}", "t=1757930400,v0=deadbeef", NEW_SECRET, now=1757930400)\n'
    )
    c.assistant(
        None,
        (
            "apply_patch",
            {"diff": test_diff},
            json.dumps({"applied": True, "files": ["tests/payments/test_webhooks.py"]}),
        ),
    )
    c.assistant(
        None,
        (
            "shell",
            {"command": "python -m pytest -q tests/payments/test_webhooks.py"},
            _shell(
                "..................                                                       [100%]\n18 passed in 0.41s"
            ),
        ),
        (
            "shell",
            {
                "command": "ruff check src/app/payments tests/payments && ruff format --check src/app/payments tests/payments"
            },
            _shell("All checks passed!\n9 files already formatted"),
        ),
    )
    c.assistant(
        "Fixed. Root cause: `verify_signature` turned the header into a dict, so with two `v1=` entries only the "
        "last one was checked; during rotation that's the old-secret signature. Now every `v1` is collected and "
        "the payload is accepted if any matches (constant-time compare per candidate). Added tests for both "
        "orderings and for a header without `v1`. 18/18 webhook tests pass; lint is clean."
    )
    c.user("Great. Is there any way to replay the failed deliveries from this morning?")
    c.assistant(
        "Let me check whether the repo has tooling for that.",
        (
            "list_files",
            {"path": "scripts", "glob": "*webhook*"},
            json.dumps(["scripts/replay_webhook.py", "scripts/resend_failed_webhooks.py"]),
        ),
    )
    c.assistant(
        None,
        (
            "read_file",
            {"path": "scripts/resend_failed_webhooks.py", "start": 1, "end": 24},
            "\n".join(
                f"{n:>6}|{line}"
                for n, line in enumerate(
                    [
                        '"""Ask the processor to resend failed webhook deliveries for an endpoint."""',
                        "",
                        "from __future__ import annotations",
                        "",
                        "import argparse",
                        "import sys",
                        "from datetime import datetime, timezone",
                        "",
                        "from app.config import get_settings",
                        "from app.payments.client import PaymentsClient",
                        "",
                        "",
                        "def main(argv: list[str] | None = None) -> int:",
                        "    p = argparse.ArgumentParser()",
                        '    p.add_argument("--endpoint", required=True, help="webhook endpoint id (we_...)")',
                        '    p.add_argument("--since", required=True, type=datetime.fromisoformat)',
                        '    p.add_argument("--dry-run", action="store_true")',
                        "    args = p.parse_args(argv)",
                        "    client = PaymentsClient(get_settings())",
                        "    failed = client.list_failed_deliveries(args.endpoint, since=args.since.replace(tzinfo=timezone.utc))",
                        '    print(f"{len(failed)} failed deliveries since {args.since:%Y-%m-%d %H:%M} UTC")',
                        "    for ev in failed:",
                        "        if not args.dry_run:",
                        "            client.resend_event(ev.id, endpoint=args.endpoint)",
                    ],
                    start=1,
                )
            ),
        ),
    )
    c.assistant(
        "Yes: `scripts/resend_failed_webhooks.py` asks the processor to resend failed deliveries for an "
        "endpoint. Once the fix is deployed, run a dry run first to see the count:\n\n"
        "```\npython scripts/resend_failed_webhooks.py --endpoint we_<your endpoint> --since 2025-09-16T09:00 --dry-run\n```\n\n"
        "then again without `--dry-run`. Handlers de-duplicate by event id, so resending an event that did get "
        "through is harmless. I haven't run it — it talks to the live processor account."
    )
    c.user("Run the dry run against test mode so I can see the output format.")
    c.assistant(
        None,
        (
            "shell",
            {
                "command": "APP_ENV=test python scripts/resend_failed_webhooks.py --endpoint we_test_1Q0aZ3 --since 2025-09-16T09:00 --dry-run"
            },
            _shell(
                "37 failed deliveries since 2025-09-16 09:00 UTC\n"
                "  evt_3Q2a91 payment_intent.succeeded   09:02:14  400 signature mismatch\n"
                "  evt_3Q2a9Q payment_intent.succeeded   09:05:51  400 signature mismatch\n"
                "  evt_3Q2b0C invoice.finalized          09:06:03  400 signature mismatch\n"
                "  ... 34 more\n"
                "dry run: nothing resent"
            ),
        ),
    )
    c.assistant(
        "Test mode shows 37 failed deliveries since 09:00, all `400 signature mismatch`, which matches the "
        "screenshot. After deploying, the same command without `--dry-run` will resend them."
    )
    c.user("Perfect, thanks. Last thing: write me a two-line summary for the incident channel.")
    c.assistant(
        "**Webhook 400s after secret rotation (fixed, pending deploy):** during rotation the processor signs with "
        "both secrets; our header parser kept only the last `v1` signature (the old secret's), so every delivery "
        "failed verification. Fix accepts any valid `v1`; after deploy we'll resend the 37 failed test-mode "
        "deliveries (and live ones) with scripts/resend_failed_webhooks.py."
    )

    doc = {"model": "gpt-4.1-2025-04-14", "messages": c.messages, "tools": _oa_tools()}
    write_text(out_dir / "openai-chat.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    return {
        "format": "openai",
        "rule": "Each entry of `messages` is one message (the in-band system message included). Tool calls are "
        "the entries of assistant `tool_calls`; arguments that are not valid JSON are kept verbatim and counted.",
        "messages": len(c.messages),
        "roles": role_counts(m["role"] for m in c.messages),
        "tool_calls": c.tool_calls,
        "tool_results": sum(1 for m in c.messages if m["role"] == "tool"),
        "compactions": [],
        "images": c.images,
        "model": doc["model"],
        "invalid_tool_arguments": [{"message_index": i} for i in c.invalid_arguments],
        "parallel_tool_call_messages": sum(
            1 for m in c.messages if len(m.get("tool_calls") or ()) > 1
        ),
    }


# ====================================================================== Anthropic messages


class AnthropicLog:
    """Anthropic Messages with strict user/assistant alternation; counts a reader's view."""

    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.messages: list[dict[str, Any]] = []
        self.normalized_roles: list[str] = []
        self.tool_calls = 0
        self.images = 0
        self.pending: list[tuple[str, str, bool]] = []  # (tool_use_id, content, is_error)

    def signature(self) -> str:
        return base64.b64encode(
            bytes(self.ids.rng.getrandbits(8) for _ in range(rng_len(self.ids.rng)))
        ).decode()

    def user(self, *blocks: dict[str, Any] | str) -> None:
        """Flush pending tool results first (the API requires them to lead), then user blocks."""
        if self.messages and self.messages[-1]["role"] == "user":
            raise AssertionError("anthropic: roles must alternate")
        content: list[dict[str, Any]] = []
        for tid, text, err in self.pending:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tid, "content": text}
            if err:
                block["is_error"] = True
            content.append(block)
            self.normalized_roles.append("tool")
        self.pending = []
        extra = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
        self.images += sum(1 for b in extra if b.get("type") == "image")
        content.extend(extra)
        if extra:
            self.normalized_roles.append("user")
        if len(content) == 1 and content[0]["type"] == "text":
            self.messages.append({"role": "user", "content": content[0]["text"]})
        else:
            self.messages.append({"role": "user", "content": content})

    def assistant(
        self, thinking: str | None, text: str | None, *calls: tuple[str, dict[str, Any], str, bool]
    ) -> None:
        if self.messages[-1]["role"] != "user":
            raise AssertionError("anthropic: roles must alternate")
        content: list[dict[str, Any]] = []
        if thinking:
            content.append(
                {"type": "thinking", "thinking": thinking, "signature": self.signature()}
            )
        if text:
            content.append({"type": "text", "text": text})
        for name, args, result, err in calls:
            tid = self.ids.toolu()
            content.append({"type": "tool_use", "id": tid, "name": name, "input": args})
            self.pending.append((tid, result, err))
        self.tool_calls += len(calls)
        self.messages.append({"role": "assistant", "content": content})
        self.normalized_roles.append("assistant")


def rng_len(rng: random.Random) -> int:
    return rng.randint(180, 320)


def build_anthropic(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("anthropic")
    ids = Ids(rng)
    a = AnthropicLog(ids)
    repo = Repo({"src/app/web/filters.py": _text("ledgerline/src/app/web/filters.py")})
    fp = "src/app/web/filters.py"
    img = base64.b64encode(png_invoice(rng_for("anthropic-png"), 36, 36)).decode()

    def bash(cmd: str, out: str, err: bool = False) -> tuple[str, dict[str, Any], str, bool]:
        return ("bash", {"command": cmd}, out, err)

    def view(
        path: str, start: int | None = None, end: int | None = None
    ) -> tuple[str, dict[str, Any], str, bool]:
        args: dict[str, Any] = {"path": path}
        if start:
            args["view_range"] = [start, end]
        lines = repo.lines(path)
        s, e = start or 1, end or len(lines)
        return ("view_file", args, repo.numbered(path, s, e - s + 1, arrow=True), False)

    a.user(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": img}},
        "A customer in Osaka sent this — the hosted invoice page shows their total as ¥9,515.00. Yen has no "
        "decimals, so it should be ¥9,515. The API is right (we fixed format_money last week); it's only the web "
        "page. Can you fix it?",
    )
    a.assistant(
        "The screenshot shows the hosted page's totals box with two decimals on a JPY amount. The API uses "
        "app.utils.money.format_money, which knows currency exponents. The web page probably has its own "
        "formatting in a Jinja filter. Let me search for where money is formatted in templates.",
        "I'll find how the hosted page formats amounts.",
        (
            "grep",
            {"pattern": '\\|\\s*money|filters\\["money"\\]', "path": "src/app/web"},
            'src/app/web/filters.py:25:    env.filters["money"] = money\n'
            'src/app/web/templates/invoice.html:41:        <td class="num">{{ totals.subtotal | money(invoice.currency) }}</td>\n'
            'src/app/web/templates/invoice.html:45:        <td class="num">{{ totals.tax_total | money(invoice.currency) }}</td>\n'
            'src/app/web/templates/invoice.html:49:        <td class="num total">{{ totals.total | money(invoice.currency) }}</td>\n'
            "src/app/web/templates/email_receipt.txt:7:Amount paid: {{ payment.amount | money(invoice.currency) }}",
            False,
        ),
    )
    a.user()
    a.assistant(None, "The hosted page uses its own `money` filter. Reading it.", view(fp))
    a.user()
    a.assistant(
        "filters.money formats with `:,.2f` for every currency, ignoring the currency exponent. That's why JPY "
        "shows two decimals. It also doesn't round half-up explicitly: format spec rounding for Decimal uses the "
        "context rounding (ROUND_HALF_EVEN), which contradicts the finance rule. The right fix is to delegate to "
        "app.utils.money.format_money, which quantizes per currency with ROUND_HALF_UP. Let me look at "
        "format_money's signature and the existing filter tests in parallel.",
        "`money` hard-codes two decimals (`:,.2f`). The API's `format_money` already knows currency exponents, "
        "so the filter should delegate to it. Checking its signature and the filter tests.",
        bash(
            "sed -n '/^def format_money/,/^$/p' src/app/utils/money.py",
            'def format_money(amount: Decimal, currency: str = "USD") -> str:\n'
            '    """``$1,234.50`` / ``¥1,200``: symbol, thousands separators, minor unit digits."""\n'
            '    symbol = _SYMBOLS.get(currency, currency + " ")\n'
            '    sign = "-" if amount < 0 else ""\n'
            '    return f"{sign}{symbol}{quantize(abs(amount), currency):,}"',
        ),
        bash(
            "python -m pytest -q tests/web/test_filters.py",
            "......                                                                   [100%]\n6 passed in 0.09s",
        ),
    )
    a.user()
    a.assistant(
        None,
        "format_money has the same symbol table plus exponent handling, and the current filter tests only cover "
        "USD, which is why they pass. Replacing the body of the filter.",
        (
            "edit_file",
            {
                "path": fp,
                "old_str": '    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")\n    return f"{symbol}{amount:.2f}"\n',
                "new_str": "    return format_money(amount, currency)\n",
            },
            "Error: old_str not found in src/app/web/filters.py. Make sure it matches exactly, including whitespace.",
            True,
        ),
    )
    old = '    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")\n    return f"{symbol}{amount:.2f}"\n'
    if old in repo.text(fp):
        raise AssertionError("anthropic: the failing edit must not match the file")
    a.user()
    a.assistant(
        "The edit failed. Comparing my old_str with the view output: the file has `{amount:,.2f}` with a "
        "thousands separator, and I typed `{amount:.2f}`. I'll anchor on the exact return line from the view "
        "output instead of retyping two lines.",
        "I mistyped the format spec (dropped the `,`). Anchoring on the exact `return` line instead.",
        (
            "edit_file",
            {
                "path": fp,
                "old_str": '    return f"{symbol}{amount:,.2f}"',
                "new_str": "    return format_money(amount, currency)",
            },
            json.dumps(
                {
                    "path": fp,
                    "replaced": 1,
                    "diff": repo.patch(
                        fp,
                        '    return f"{symbol}{amount:,.2f}"',
                        "    return format_money(amount, currency)",
                    ),
                }
            ),
            False,
        ),
    )
    a.user()
    diff2 = repo.patch_many(
        fp,
        [
            ('    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")\n', ""),
            (
                'CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "KRW": "₩", "CAD": "CA$"}\n\n\n',
                "",
            ),
            (
                "from markupsafe import Markup\n",
                "from markupsafe import Markup\n\nfrom app.utils.money import format_money\n",
            ),
        ],
    )
    a.assistant(
        None,
        "Now removing the duplicated symbol table and importing `format_money`.",
        (
            "edit_file",
            {"path": fp, "diff": diff2},
            json.dumps({"path": fp, "applied": True}),
            False,
        ),
    )
    a.user()
    a.assistant(
        None,
        None,
        bash(
            "python -m pytest -q tests/web && ruff check src/app/web",
            "...........                                                              [100%]\n11 passed in 0.21s\nAll checks passed!",
        ),
    )
    a.user(
        "While you're at it, check the e-mail receipt too — finance forwards those to customers."
    )
    a.assistant(
        "The user interjected alongside the tool result. The receipt template uses the same `money` filter "
        "(from the grep: email_receipt.txt line 7), so it's fixed by the same change. I should verify by "
        "rendering both templates for a JPY invoice.",
        "The receipt uses the same `money` filter (email_receipt.txt:7), so it's covered. Rendering both "
        "templates for a yen invoice to confirm.",
        bash(
            "python scripts/render_templates.py --invoice inv_demo0000000041 --templates invoice.html email_receipt.txt | grep -E '¥|Amount'",
            'invoice.html:41:        <td class="num">¥8,650</td>\n'
            'invoice.html:45:        <td class="num">¥865</td>\n'
            'invoice.html:49:        <td class="num total">¥9,515</td>\n'
            "email_receipt.txt:7:Amount paid: ¥9,515",
        ),
    )
    a.user()
    test_src = (
        "@pytest.mark.parametrize(\n"
        '    ("amount", "currency", "expected"),\n'
        '    [("9515", "JPY", "¥9,515"), ("12000", "KRW", "₩12,000"), ("0.125", "USD", "$0.13"), ("-5", "EUR", "-€5.00")],\n'
        ")\n"
        "def test_money_filter_uses_currency_exponent(amount, currency, expected):\n"
        "    assert money(Decimal(amount), currency) == expected\n"
    )
    a.assistant(
        None,
        "Both show whole yen. Adding a regression test that covers zero-decimal currencies, half-up rounding and "
        "negatives.",
        (
            "edit_file",
            {
                "path": "tests/web/test_filters.py",
                "insert_after_line": 38,
                "text": "\n\n" + test_src,
            },
            json.dumps({"path": "tests/web/test_filters.py", "inserted_lines": 9}),
            False,
        ),
    )
    a.user()
    a.assistant(
        None,
        None,
        bash(
            "python -m pytest -q tests/web/test_filters.py",
            "..........                                                               [100%]\n10 passed in 0.11s",
        ),
    )
    a.user()
    a.assistant(
        None,
        "Fixed. The hosted page and e-mail receipts formatted money with their own `money` Jinja filter, which "
        "hard-coded two decimals (`:,.2f`). It now delegates to `app.utils.money.format_money`, so yen and won "
        "show whole units (¥9,515), amounts round half-up like the API, and the duplicate symbol table is gone. "
        "New parametrized test covers JPY, KRW, half-up and negatives; tests/web passes (10/10 in the filter "
        "tests).",
    )
    a.user("Thanks! Does the PDF renderer have the same problem?")
    a.assistant(
        "PDF rendering is in scripts/render_invoice.py or src/app/pdf? Let me grep for how the PDF gets amounts.",
        None,
        bash(
            "rg -n 'format_money|:,.2f|money\\(' src/app/pdf scripts/render_invoice.py",
            "src/app/pdf/invoice_pdf.py:12:from app.utils.money import format_money\n"
            'src/app/pdf/invoice_pdf.py:58:        row("Subtotal", format_money(t.subtotal, inv.currency))\n'
            'src/app/pdf/invoice_pdf.py:61:        row("Total", format_money(t.total, inv.currency), bold=True)',
        ),
    )
    a.user()
    a.assistant(
        None,
        "No — the PDF code already calls `format_money` directly, so it was correct for yen all along (and got last week's half-up fix).",
    )
    a.user("Great, commit it please.")
    a.assistant(
        None,
        None,
        bash(
            "git add src/app/web/filters.py tests/web/test_filters.py && git commit -m 'fix(web): format money with currency exponent on hosted pages and receipts' && git log -1 --stat --oneline",
            "[fix/web-money-filter 3c9e1aa] fix(web): format money with currency exponent on hosted pages and receipts\n"
            " 2 files changed, 13 insertions(+), 5 deletions(-)\n"
            "3c9e1aa fix(web): format money with currency exponent on hosted pages and receipts\n"
            " src/app/web/filters.py    |  8 +++-----\n tests/web/test_filters.py | 10 ++++++++++\n 2 files changed, 13 insertions(+), 5 deletions(-)",
        ),
    )
    a.user()
    a.assistant(None, "Committed as 3c9e1aa on fix/web-money-filter. Not pushed.")

    system = [
        {
            "type": "text",
            "text": "You are an AI pair programmer working inside the user's repository. You can run shell commands, "
            "read files and edit them with the provided tools. Investigate before editing, keep diffs minimal, run the "
            "relevant tests after every change, and report root causes in one or two sentences. Never print or copy "
            "secrets from configuration files.",
        },
        {
            "type": "text",
            "text": f"Repository: {CWD} (ledgerline, Python 3.11, FastAPI). Money is Decimal everywhere; "
            "app.utils.money.quantize is the only rounding function (ROUND_HALF_UP, per-currency exponent; JPY and "
            "KRW have none). Templates live in src/app/web/templates and use filters from src/app/web/filters.py. "
            "Tests: `python -m pytest -q`. Lint: `ruff check`. Do not commit unless asked.",
            "cache_control": {"type": "ephemeral"},
        },
    ]
    tools = [
        {
            "name": "bash",
            "description": "Run a bash command in the repository root; returns combined stdout/stderr and the exit status.",
            "input_schema": {
                "type": "object",
                "properties": {"command": {"type": "string"}, "timeout": {"type": "integer"}},
                "required": ["command"],
            },
        },
        {
            "name": "view_file",
            "description": "Show a file with line numbers; view_range limits the lines shown.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "view_range": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                },
                "required": ["path"],
            },
        },
        {
            "name": "edit_file",
            "description": "Edit a file: replace old_str with new_str (must match exactly once), insert text after a line, or apply a unified diff.",
            "input_schema": {
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "old_str": {"type": "string"},
                    "new_str": {"type": "string"},
                    "insert_after_line": {"type": "integer"},
                    "text": {"type": "string"},
                    "diff": {"type": "string"},
                },
                "required": ["path"],
            },
        },
        {
            "name": "grep",
            "description": "Search file contents with a regular expression (ripgrep).",
            "input_schema": {
                "type": "object",
                "properties": {
                    "pattern": {"type": "string"},
                    "path": {"type": "string"},
                    "glob": {"type": "string"},
                },
                "required": ["pattern"],
            },
        },
    ]
    doc = {
        "model": "claude-sonnet-4-5-20250929",
        "max_tokens": 16000,
        "thinking": {"type": "enabled", "budget_tokens": 8000},
        "system": system,
        "tools": tools,
        "messages": a.messages,
    }
    if a.pending:
        raise AssertionError("anthropic: unanswered tool_use blocks")
    write_text(
        out_dir / "anthropic-messages.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    )
    errors = sum(
        1
        for m in a.messages
        if m["role"] == "user" and isinstance(m["content"], list)
        for b in m["content"]
        if b.get("is_error")
    )
    return {
        "format": "anthropic",
        "rule": "Top-level `system` is the system prompt, not a message. Each assistant message is one message "
        "(thinking blocks stay inside it). In a user message, each tool_result block becomes its own tool message, "
        "in order; the remaining blocks of that user message (text, image), if any, form one user message placed "
        "after those tool messages. Tool calls are tool_use blocks.",
        "messages": len(a.normalized_roles),
        "raw_messages": len(a.messages),
        "roles": role_counts(a.normalized_roles),
        "tool_calls": a.tool_calls,
        "tool_results": a.normalized_roles.count("tool"),
        "tool_errors": errors,
        "compactions": [],
        "images": a.images,
        "thinking_blocks": sum(
            1
            for m in a.messages
            if m["role"] == "assistant"
            for b in m["content"]
            if b["type"] == "thinking"
        ),
        "model": doc["model"],
    }


# ======================================================================== Hermes gateway


def _tool_by_name(name: str) -> dict[str, Any]:
    return next(t for t in HERMES_TOOLS if t["function"]["name"] == name)


def build_gateway(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("gateway")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 17, 7, 12, 40, 512000, tzinfo=UTC), rng)
    h = HermesLog(ids, clock)
    search_issues = _fn(
        "mcp__github__search_issues",
        "[MCP server: github] Search issues and pull requests with GitHub search syntax.",
        {
            "q": {
                "type": "string",
                "description": "Search query, e.g. 'repo:o/r is:issue reconcile'.",
            }
        },
        ["q"],
    )
    tools = [
        _tool_by_name(n)
        for n in (
            "terminal",
            "read_file",
            "search_files",
            "todo",
            "mcp__github__create_issue",
            "mcp__github__list_prs",
        )
    ] + [search_issues]
    stamps: list[str] = []

    def mark() -> None:
        while len(stamps) < len(h.messages):
            stamps.append(clock.local())

    h.user("morning! did the nightly reconcile run ok?")
    mark()
    h.assistant(
        None,
        (
            "terminal",
            {
                "command": "journalctl -u ledgerline-reconcile.service --since today --no-pager | tail -n 12"
            },
            term(
                "Sep 17 02:00:01 billing-worker-2 systemd[1]: Starting ledgerline-reconcile.service - Nightly settlement reconciliation...\n"
                "Sep 17 02:00:03 billing-worker-2 reconcile[771203]: loading var/settlements.csv (1,284 rows) since 2025-09-01\n"
                "Sep 17 02:00:04 billing-worker-2 reconcile[771203]: INV-2025-0107: expected $412.50, settled $412.05\n"
                "Sep 17 02:00:04 billing-worker-2 reconcile[771203]: INV-2025-0131: expected €88.00, settled €80.00\n"
                "Sep 17 02:00:04 billing-worker-2 reconcile[771203]: 2 mismatch(es), 3 pending\n"
                "Sep 17 02:00:04 billing-worker-2 systemd[1]: ledgerline-reconcile.service: Main process exited, code=exited, status=1/FAILURE\n"
                "Sep 17 02:00:04 billing-worker-2 systemd[1]: ledgerline-reconcile.service: Failed with result 'exit-code'.\n"
                "Sep 17 02:00:04 billing-worker-2 systemd[1]: Failed to start ledgerline-reconcile.service - Nightly settlement reconciliation.\n"
                "Sep 17 02:00:04 billing-worker-2 systemd[1]: ledgerline-reconcile.service: Consumed 1.912s CPU time."
            ),
        ),
    )
    mark()
    h.assistant(
        "It ran at 02:00 and finished in 3 s without crashing (so yesterday's pending-row fix is live). It exited "
        "with status 1 because it found 2 mismatches: INV-2025-0107 (settled $0.45 short) and INV-2025-0131 "
        "(settled €8.00 short). 3 rows are still pending settlement."
    )
    mark()
    h.user("0107 is the known one finance is chasing. what about 0131?")
    mark()
    h.assistant(
        "Checking the processor records for INV-2025-0131.",
        (
            "terminal",
            {
                "command": "cd ~/ledgerline && .venv/bin/python -m app.cli lookup INV-2025-0131 --processor"
            },
            term(
                "invoice   INV-2025-0131  cus_5be21f  EUR  total €88.00  status paid\n"
                "payments  pi_3Q1k2mLk8e  2025-09-09  €88.00  succeeded\n"
                'refunds   re_3Q1n7pLk0a  2025-09-10  €8.00   succeeded  reason=requested_by_customer  note="seat removed"\n'
                "settled   €80.00 (net of refunds) in payout po_1Q1p0rLk 2025-09-12"
            ),
        ),
        reasoning="A net settlement lower than the total could be a refund or a fee; look it up rather than guess.",
    )
    mark()
    h.assistant(
        'INV-2025-0131 isn\'t a real discrepancy: the customer got an €8.00 refund on 10 Sep ("seat removed"), '
        "and the payout settles the net €80.00. Reconcile compares the settlement with the invoice total and "
        "doesn't account for refunds, so it flags every partially refunded invoice."
    )
    mark()
    h.user("ugh. is there an issue for that already?")
    mark()
    h.assistant(
        None,
        (
            "mcp__github__search_issues",
            {"q": "repo:ledgerline/ledgerline is:issue reconcile refund"},
            json.dumps(
                {
                    "total_count": 1,
                    "items": [
                        {
                            "number": 356,
                            "title": "reconcile: support multi-currency payouts",
                            "state": "closed",
                            "closed_at": "2025-08-02T10:11:09Z",
                        }
                    ],
                }
            ),
        ),
    )
    mark()
    h.assistant(
        "Only #356 (multi-currency payouts, closed) comes up; nothing about refunds. Want me to open one?"
    )
    mark()
    h.user("yes please, label it finance")
    mark()
    h.assistant(
        None,
        (
            "mcp__github__create_issue",
            {
                "owner": "ledgerline",
                "repo": "ledgerline",
                "title": "reconcile: account for refunds when comparing settlements with invoice totals",
                "body": "`python -m app.cli reconcile` compares `settled_amount` with the invoice total. Payouts settle the amount "
                "net of refunds, so every partially refunded invoice is reported as a mismatch and the nightly job exits 1.\n\n"
                "Example: INV-2025-0131 (total €88.00, refund re_3Q1n7pLk0a €8.00 on 2025-09-10, settled €80.00 on 2025-09-12).\n\n"
                "Expected: compare the settlement with total minus succeeded refunds, and list refunded invoices separately.",
                "labels": ["finance", "reconcile"],
            },
            json.dumps(
                {
                    "number": 433,
                    "html_url": "https://github.com/ledgerline/ledgerline/issues/433",
                    "state": "open",
                }
            ),
        ),
    )
    mark()
    h.assistant("Opened #433 (labels finance, reconcile) with INV-2025-0131 as the example.")
    mark()
    h.user("can you tell priya in #finance-eng too?")
    mark()
    h.assistant(
        "I can't post to Slack from this gateway (only Telegram and GitHub tools are connected). Here's a message "
        "you can paste:\n\n> Nightly reconcile flagged INV-2025-0107 (known, $0.45 short) and INV-2025-0131. 0131 "
        "is a false positive: €8 refund on 10 Sep, payout settled net €80. Reconcile ignores refunds — tracked in "
        "https://github.com/ledgerline/ledgerline/issues/433."
    )
    mark()
    h.user("thanks. whats CI doing on fix/decimal-migration?")
    mark()
    h.assistant(
        None,
        (
            "terminal",
            {"command": "cd ~/ledgerline && gh run list --branch fix/decimal-migration --limit 3"},
            term(
                "STATUS  TITLE                                              WORKFLOW  BRANCH                 EVENT         ID           ELAPSED  AGE\n"
                "✓       docs(changelog): note Decimal migration fixes      ci        fix/decimal-migration  pull_request  10894412731  3m12s    about 9 hours ago\n"
                "✓       docs(changelog): note Decimal migration fixes      ci        fix/decimal-migration  push          10894410007  3m05s    about 9 hours ago\n"
                "X       Switch money handling to Decimal (#412)            ci        main                   push          10871259902  2m48s    about 1 day ago"
            ),
        ),
    )
    mark()
    h.assistant(
        "Green on both the push and the PR run, 9 hours ago. Checking the PR's checks and reviews.",
        (
            "terminal",
            {"command": "cd ~/ledgerline && gh pr checks 432"},
            term(
                "All checks were successful\n0 failing, 0 pending, 3 passing\n\n"
                "lint           pass  41s  https://github.com/ledgerline/ledgerline/actions/runs/10894412731/job/30231850311\n"
                "test (3.11)    pass  2m58s  https://github.com/ledgerline/ledgerline/actions/runs/10894412731/job/30231850587\n"
                "test (3.12)    pass  3m04s  https://github.com/ledgerline/ledgerline/actions/runs/10894412731/job/30231850823"
            ),
        ),
        (
            "mcp__github__list_prs",
            {
                "owner": "ledgerline",
                "repo": "ledgerline",
                "state": "open",
                "base": "main",
                "per_page": 5,
            },
            json.dumps(
                [
                    {
                        "number": 432,
                        "title": "Fix Decimal migration fallout (#412)",
                        "user": "mokafor",
                        "draft": False,
                        "requested_reviewers": ["dkim", "priya-fin"],
                        "review_decision": "REVIEW_REQUIRED",
                    },
                    {
                        "number": 427,
                        "title": "Customer portal: show credit notes on invoice page",
                        "user": "dkim",
                        "draft": False,
                        "requested_reviewers": [],
                        "review_decision": "APPROVED",
                    },
                ]
            ),
        ),
    )
    mark()
    h.assistant(
        "PR #432 is all green (lint, 3.11, 3.12) and waiting for review from dkim and priya-fin. Nothing "
        "failing anywhere."
    )
    mark()
    h.user("how long did 3.12 take vs 3.11?")
    mark()
    h.assistant(
        "3.12 took 3m04s and 3.11 took 2m58s in that run — within noise of each other; lint took 41s."
    )
    mark()
    h.user("👍 ping me here if the 3.12 job flakes on the next run")
    mark()
    h.assistant(
        "Will do. The webhook dedupe flake (#431) is the one to watch; if a run fails only on "
        "test_duplicate_events_are_ignored I'll tell you it's that rather than something new."
    )
    mark()

    session_id = "20250917_071240_tg_5512"
    meta = {
        "role": "session_meta",
        "tools": tools,
        "model": "anthropic/claude-sonnet-4",
        "platform": "telegram",
        "session_id": session_id,
        "timestamp": datetime(2025, 9, 17, 7, 12, 40, 512000).isoformat(),
    }
    lines = [dumps_compact(meta)]
    for msg, ts in zip(h.messages, stamps, strict=True):
        lines.append(dumps_compact({**msg, "timestamp": ts}))
    write_text(out_dir / "hermes-gateway.jsonl", "\n".join(lines) + "\n")
    return {
        "format": "hermes",
        "rule": "Hermes gateway JSONL: line 1 is session_meta (tools, model, platform) and is not a message; "
        "every later line is one message. `timestamp` is per message metadata.",
        "messages": len(h.messages),
        "roles": role_counts(m["role"] for m in h.messages),
        "tool_calls": h.tool_calls,
        "tool_results": sum(1 for m in h.messages if m["role"] == "tool"),
        "compactions": [],
        "images": 0,
        "model": meta["model"],
        "tools": len(tools),
        "session_id": session_id,
    }


# ======================================================================== Hermes state.db


def _state_sessions(rng: random.Random) -> tuple[HermesLog, HermesLog, HermesLog, HermesLog]:
    """The four message runs of the db: old session, child (pre in-place), compacted head, new tail."""
    ids = Ids(rng)
    repo = Repo(PROJECT_FILES)
    suite = Suite(build_inventory(), rng_for("state-suite"), repo)
    for bug in demo_bugs(repo):
        suite.add(bug, active=bug.key in ("money_rounding", "tax_rate_float", "format_money"))

    old = HermesLog(ids, Clock(datetime(2025, 9, 15, 14, 10, 22, 0, tzinfo=UTC), rng))
    old.user(
        "The money tests are failing after my Decimal PR (#412). Start with tests/utils/test_money.py — I want to understand the rounding ones first."
    )
    old.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/utils/test_money.py"},
            term(*suite.run(("tests/utils/test_money.py",))),
        ),
    )
    old.assistant(
        "Six failures in two groups: `test_to_cents_rounds_half_up` (rounding mode) and `test_format_money` (missing trailing zeros). Reading money.py.",
        ("read_file", {"path": "src/app/utils/money.py"}, read_out(repo, "src/app/utils/money.py")),
    )
    old.assistant(
        "quantize uses ROUND_HALF_EVEN. Before changing it: is half-even intentional? The old float code used round(x + 1e-9), which nudged halves up.",
        (
            "search_files",
            {"pattern": "ROUND_HALF", "path": "."},
            search_out(
                [
                    (
                        "src/app/utils/money.py",
                        5,
                        "from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal",
                    ),
                    (
                        "src/app/utils/money.py",
                        24,
                        "return amount.quantize(step, rounding=ROUND_HALF_EVEN)",
                    ),
                    ("docs/finance/rounding.md", 9, "Invoices round half-up (FIN-212)."),
                ]
            ),
        ),
    )
    old.assistant(
        None,
        (
            "read_file",
            {"path": "docs/finance/rounding.md"},
            json.dumps(
                {
                    "content": "     1|# Rounding\n     2|\n     3|Agreed with finance in FIN-212 (2024-11).\n     4|\n     5|- Amounts are rounded once, at the end of each calculation step, to the currency's minor unit.\n     6|- JPY and KRW have no minor unit.\n     7|- Tax is computed per tax code on the discounted base, then rounded.\n     8|\n     9|Invoices round half-up (FIN-212).\n    10|Ledger exports keep full precision; they are rounded by the consumer.",
                    "total_lines": 10,
                    "file_size": 392,
                    "truncated": False,
                }
            ),
        ),
    )
    old.assistant(
        "docs/finance/rounding.md says invoices round half-up (FIN-212), so HALF_EVEN in #412 is a regression, not a decision. "
        "I'll leave the fix for you to confirm: change `rounding=ROUND_HALF_EVEN` to `ROUND_HALF_UP` in quantize. Shall I?"
    )
    old.user("Yes, and look at the format_money ones too.")
    old.assistant(
        None,
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/utils/money.py",
                "old_string": "    return amount.quantize(step, rounding=ROUND_HALF_EVEN)",
                "new_string": "    return amount.quantize(step, rounding=ROUND_HALF_UP)",
            },
            patch_out(
                repo,
                "src/app/utils/money.py",
                "    return amount.quantize(step, rounding=ROUND_HALF_EVEN)",
                "    return amount.quantize(step, rounding=ROUND_HALF_UP)",
            ),
        ),
    )
    suite.fix("money_rounding")
    old.assistant(
        "format_money formats `abs(amount)` with `:,`, which keeps whatever exponent the Decimal has, so 1234.5 prints as 1,234.5. Quantizing first pads it.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/utils/money.py",
                "old_string": '    return f"{sign}{symbol}{abs(amount):,}"',
                "new_string": '    return f"{sign}{symbol}{quantize(abs(amount), currency):,}"',
            },
            patch_out(
                repo,
                "src/app/utils/money.py",
                '    return f"{sign}{symbol}{abs(amount):,}"',
                '    return f"{sign}{symbol}{quantize(abs(amount), currency):,}"',
            ),
        ),
    )
    suite.fix("format_money")
    old.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/utils"},
            term(*suite.run(("tests/utils",))),
        ),
    )
    old.assistant(
        "tests/utils is green (rounding and formatting). Next I'd look at tests/billing/test_tax.py, where the default-rate cases fail."
    )
    old.user("Go on with tax.")
    old.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing/test_tax.py"},
            term(*suite.run(("tests/billing/test_tax.py",))),
        ),
    )
    old.assistant(
        "Both US-CA and US-NY use the default rate, and the repr shows 0.07249999…: the setting is a float. Reading the settings model.",
        ("read_file", {"path": "src/app/config.py"}, read_out(repo, "src/app/config.py")),
        (
            "read_file",
            {"path": "src/app/billing/tax.py", "offset": 40, "limit": 12},
            read_out(repo, "src/app/billing/tax.py", 40, 12),
        ),
    )
    old.assistant(
        "Confirmed: `default_tax_rate: float` and `Decimal(self._settings.default_tax_rate)` in rate_for. The exact fix is typing the setting as Decimal so pydantic parses the env string exactly.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/config.py",
                "old_string": "    default_tax_rate: float = Field(0.0, ge=0, le=0.3)",
                "new_string": '    default_tax_rate: Decimal = Field(Decimal("0"), ge=0, le=Decimal("0.3"))',
            },
            patch_out(
                repo,
                "src/app/config.py",
                "    default_tax_rate: float = Field(0.0, ge=0, le=0.3)",
                '    default_tax_rate: Decimal = Field(Decimal("0"), ge=0, le=Decimal("0.3"))',
            ),
        ),
    )
    old.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing/test_tax.py"},
            term(
                'Traceback (most recent call last):\n  File "/home/maya/src/ledgerline/src/app/config.py", line 16, in Settings\n'
                '    default_tax_rate: Decimal = Field(Decimal("0"), ge=0, le=Decimal("0.3"))\n'
                "                      ^^^^^^^\nNameError: name 'Decimal' is not defined\n"
                "ERROR: not found: tests/billing/test_tax.py (module import failed)",
                4,
            ),
        ),
    )
    old.assistant(
        "Missing import.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/config.py",
                "old_string": "from functools import lru_cache\n",
                "new_string": "from decimal import Decimal\nfrom functools import lru_cache\n",
            },
            patch_out(
                repo,
                "src/app/config.py",
                "from functools import lru_cache\n",
                "from decimal import Decimal\nfrom functools import lru_cache\n",
            ),
        ),
    )
    suite.fix("tax_rate_float")

    child = HermesLog(ids, Clock(datetime(2025, 9, 15, 15, 27, 40, 0, tzinfo=UTC), rng))
    child.user(
        f"{LEGACY_SUMMARY_PREFIX} Session 20250915_141022_7be0d2 was compressed into this continuation. "
        "Summary of earlier work: the user asked to fix failing money tests after #412. quantize now rounds "
        "ROUND_HALF_UP (confirmed against docs/finance/rounding.md, FIN-212); format_money quantizes before "
        "formatting; tests/utils is green. Settings.default_tax_rate is now Decimal (import added). Next: re-run "
        "tests/billing/test_tax.py, then the rest of tests/billing."
    )
    child.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing/test_tax.py"},
            term(*suite.run(("tests/billing/test_tax.py",))),
        ),
    )
    child.assistant(
        "The default-rate cases pass now. `test_exempt_customer_has_zero_tax` still fails: `sum()` over no tax lines returns int 0.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/billing/tax.py",
                "old_string": "        return quantize(sum(line.amount for line in lines), currency)",
                "new_string": "        return quantize(sum((line.amount for line in lines), ZERO), currency)",
            },
            patch_out(
                repo,
                "src/app/billing/tax.py",
                "        return quantize(sum(line.amount for line in lines), currency)",
                "        return quantize(sum((line.amount for line in lines), ZERO), currency)",
            ),
        ),
    )
    child.assistant(
        None,
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/billing/tax.py",
                "old_string": "from app.utils.money import quantize",
                "new_string": "from app.utils.money import ZERO, quantize",
            },
            patch_out(
                repo,
                "src/app/billing/tax.py",
                "from app.utils.money import quantize",
                "from app.utils.money import ZERO, quantize",
            ),
        ),
    )
    suite.fix("tax_exempt_sum")
    child.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing"},
            term(*suite.run(("tests/billing",))),
        ),
    )
    child.assistant(
        "tax is green. Remaining in tests/billing: proration (float ratio), dunning (naive utcnow), and the repository round-trip (Numeric asdecimal=False). Starting with proration.",
        (
            "read_file",
            {"path": "src/app/billing/proration.py"},
            read_out(repo, "src/app/billing/proration.py"),
        ),
    )
    child.assistant(
        None,
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/billing/proration.py",
                "old_string": "    ratio = days_left / days_in_period\n",
                "new_string": "    ratio = Decimal(days_left) / Decimal(days_in_period)\n",
            },
            patch_out(
                repo,
                "src/app/billing/proration.py",
                "    ratio = days_left / days_in_period\n",
                "    ratio = Decimal(days_left) / Decimal(days_in_period)\n",
            ),
        ),
    )
    suite.fix("proration_float")
    child.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing/test_proration.py"},
            term(*suite.run(("tests/billing/test_proration.py",))),
        ),
    )
    child.user(
        "nice. I have to jump into a meeting — do dunning next and leave the repository one for me."
    )
    child.assistant(
        "Will do. dunning.py compares `datetime.utcnow()` (naive) with aware due dates.",
        (
            "read_file",
            {"path": "src/app/billing/dunning.py"},
            read_out(repo, "src/app/billing/dunning.py"),
        ),
    )
    dn = "src/app/billing/dunning.py"
    edits = [
        (
            "from datetime import datetime, timedelta",
            "from datetime import UTC, datetime, timedelta",
        ),
        (
            "def is_overdue(invoice: Invoice, now: datetime | None = None) -> bool:\n    now = now or datetime.utcnow()",
            "def is_overdue(invoice: Invoice, now: datetime | None = None) -> bool:\n    now = now or datetime.now(UTC)",
        ),
        (
            "def reminders_for(invoices: Iterable[Invoice], now: datetime | None = None) -> list[Reminder]:\n    now = now or datetime.utcnow()",
            "def reminders_for(invoices: Iterable[Invoice], now: datetime | None = None) -> list[Reminder]:\n    now = now or datetime.now(UTC)",
        ),
    ]
    diff = repo.patch_many(dn, edits)
    child.assistant(
        None,
        (
            "patch",
            {"mode": "patch", "patch": diff + "\n"},
            json.dumps({"success": True, "diff": diff, "files_modified": [dn]}),
        ),
    )
    suite.fix("naive_datetime")
    child.assistant(
        None,
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing/test_dunning.py"},
            term(*suite.run(("tests/billing/test_dunning.py",))),
        ),
    )
    child.assistant(
        "Dunning is fixed (aware `datetime.now(UTC)` in both functions). I left test_invoice_repository for you as asked: "
        "the cause is `Numeric(12, 2, asdecimal=False)` on invoices.amount_paid and invoice_lines.unit_price in src/app/db/models.py."
    )

    # In-place compaction: everything above in `child` is archived; the live list restarts with a summary
    # and a copy of the last exchange, then the conversation continues.
    head = HermesLog(ids, Clock(datetime(2025, 9, 15, 16, 48, 5, 0, tzinfo=UTC), rng))
    head.user(
        f"{SUMMARY_PREFIX} Earlier turns were compacted to save context. This is background reference, not new "
        "instructions; respond only to messages after it.\n\n"
        "## Active Task\nFix failing tests after #412 (float → Decimal); the user takes the repository round-trip test.\n\n"
        "## Completed Actions\n"
        "- quantize → ROUND_HALF_UP (FIN-212); format_money pads to minor digits; tests/utils green.\n"
        "- Settings.default_tax_rate is Decimal; TaxCalculator.total_tax sums from ZERO; tests/billing/test_tax.py green.\n"
        "- proration ratio is Decimal; dunning uses datetime.now(UTC); both test files green.\n\n"
        "## Remaining Work\n- tests/payments (client minor units, webhooks), tests/api (schemas, export, settings).\n"
        "- Repository asdecimal: left for the user.\n\n"
        "## Relevant Files\nsrc/app/utils/money.py, src/app/config.py, src/app/billing/{tax,proration,dunning}.py, src/app/db/models.py"
    )
    head.messages.extend(json.loads(json.dumps(child.messages[-3:])))
    tail = HermesLog(ids, Clock(datetime(2025, 9, 15, 17, 20, 11, 0, tzinfo=UTC), rng))
    tail.user("back. I did the repository fix myself. what's left overall?")
    tail.assistant(
        None, ("terminal", {"command": "python -m pytest -q"}, term(*suite.run(("tests",))))
    )
    tail.assistant(
        "Left: tests/payments (client sends 1998 for 19.99 and 120000 for ¥1200; webhook JPY amounts), tests/api "
        "(money typed float in schemas, export json.dumps of Decimal, settings needs STRIPE_WEBHOOK_SECRET), and the "
        "repository test — did your fix land? It still fails here."
    )
    tail.user(
        "Not pushed to this checkout yet, ignore it. Let's stop for today, I'll pick the rest up tomorrow with a fresh session."
    )
    tail.assistant(
        "OK. Stopping here. Tomorrow's starting point: payments client/webhooks, API schemas/export/settings, then a "
        "full run. Nothing is committed; the working tree has the fixes to money.py, config.py, tax.py, proration.py "
        "and dunning.py."
    )
    return old, child, head, tail


def _rows(
    log: HermesLog,
    session_id: str,
    first_id: int,
    active: int,
    compacted: int,
    stamps: Sequence[float] | None = None,
) -> list[tuple[Any, ...]]:
    rows = []
    t0 = log.clock.now.timestamp()
    for i, m in enumerate(log.messages):
        ts = stamps[i] if stamps is not None else round(t0 - 30 * (len(log.messages) - i), 3)
        text = m.get("content") or ""
        rows.append(
            (
                first_id + i,
                session_id,
                m["role"],
                text,
                m.get("tool_call_id"),
                json.dumps(m["tool_calls"], ensure_ascii=False) if m.get("tool_calls") else None,
                m.get("tool_name"),
                ts,
                max(1, len(text) // 4)
                + (sum(len(c["function"]["arguments"]) for c in m.get("tool_calls") or []) // 4),
                m.get("finish_reason"),
                m.get("reasoning"),
                None,
                None,
                0,
                active,
                compacted,
            )
        )
    return rows


def build_state_db(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("state")
    old, child, head, tail = _state_sessions(rng)
    old_id, child_id = "20250915_141022_7be0d2", "20250915_152740_c41a9e"
    prompt = hermes_system_prompt().replace(
        "Tuesday, September 16, 2025", "Monday, September 15, 2025"
    )

    old_rows = _rows(old, old_id, 1, 1, 0)
    child_rows = _rows(child, child_id, len(old_rows) + 1, 0, 1)
    compact_at = datetime(2025, 9, 15, 16, 48, 5, tzinfo=UTC).timestamp()
    head_stamps = [round(compact_at + 0.001 * i, 3) for i in range(len(head.messages))]
    head_rows = _rows(head, child_id, len(old_rows) + len(child_rows) + 1, 1, 0, head_stamps)
    tail_rows = _rows(tail, child_id, len(old_rows) + len(child_rows) + len(head_rows) + 1, 1, 0)
    active_child = head.messages + tail.messages

    def usage(msgs: int, calls: int) -> tuple[int, int, int, int]:
        return (calls * 9100 + msgs * 1300, msgs * 160 + calls * 95, calls * 8200, msgs * 700)

    o_in, o_out, o_cr, o_cw = usage(len(old.messages), old.tool_calls)
    c_in, c_out, c_cr, c_cw = usage(
        len(child.messages) + len(active_child),
        child.tool_calls + tail.tool_calls + head.tool_calls,
    )
    sessions = [
        (
            old_id,
            "cli",
            None,
            "anthropic/claude-sonnet-4",
            json.dumps({"max_tokens": 32000, "reasoning": {"effort": "medium"}}),
            prompt,
            None,
            datetime(2025, 9, 15, 14, 10, 22, tzinfo=UTC).timestamp(),
            datetime(2025, 9, 15, 15, 27, 40, tzinfo=UTC).timestamp(),
            "compression",
            len(old.messages),
            old.tool_calls,
            o_in,
            o_out,
            o_cr,
            o_cw,
            0,
            CWD,
            "fix/decimal-migration",
            "openrouter",
            "https://openrouter.ai/api/v1",
            round(o_in * 3e-6 + o_out * 15e-6 + o_cr * 0.3e-6 + o_cw * 3.75e-6, 4),
            "Fix money tests after Decimal PR",
            len([m for m in old.messages if m["role"] == "assistant"]),
            None,
            None,
            0,
            0,
            0,
        ),
        (
            child_id,
            "cli",
            None,
            "anthropic/claude-sonnet-4",
            json.dumps({"max_tokens": 32000, "reasoning": {"effort": "medium"}}),
            prompt,
            old_id,
            datetime(2025, 9, 15, 15, 27, 40, tzinfo=UTC).timestamp(),
            None,
            None,
            len(active_child),
            head.tool_calls + tail.tool_calls,
            c_in,
            c_out,
            c_cr,
            c_cw,
            0,
            CWD,
            "fix/decimal-migration",
            "openrouter",
            "https://openrouter.ai/api/v1",
            round(c_in * 3e-6 + c_out * 15e-6 + c_cr * 0.3e-6 + c_cw * 3.75e-6, 4),
            "Fix money tests after Decimal PR #2",
            len([m for m in child.messages + tail.messages if m["role"] == "assistant"]),
            None,
            None,
            0,
            0,
            0,
        ),
    ]
    lock = (
        child_id,
        "pid=48213:tid=140213906761536:agent=9f1c2e:nonce=5a7b19d3",
        round(compact_at - 4.2, 3),
        round(compact_at - 4.2 + 300, 3),
    )

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "state.db"
        con = sqlite3.connect(path)
        try:
            con.execute("PRAGMA journal_mode=DELETE")
            con.execute("PRAGMA page_size=4096")
            con.executescript(STATE_SCHEMA)
            con.executemany(
                f"INSERT INTO sessions VALUES ({','.join('?' * len(sessions[0]))})", sessions
            )
            con.executemany(
                f"INSERT INTO messages VALUES ({','.join('?' * len(old_rows[0]))})",
                old_rows + child_rows + head_rows + tail_rows,
            )
            con.execute("INSERT INTO compression_locks VALUES (?,?,?,?)", lock)
            con.commit()
            con.execute("VACUUM")
        finally:
            con.close()
        (out_dir / "hermes-state.db").write_bytes(path.read_bytes())

    def entry(msgs: Sequence[dict[str, Any]]) -> dict[str, Any]:
        return {
            "messages": len(msgs),
            "roles": role_counts(m["role"] for m in msgs),
            "tool_calls": sum(len(m.get("tool_calls") or ()) for m in msgs),
        }

    inactive_and_active = child.messages + active_child
    return {
        "format": "hermes",
        "rule": "Hermes state.db: a reader opens the newest session (by started_at) unless told otherwise, and "
        "reads its rows with active=1 ordered by id; the system prompt is sessions.system_prompt, not a message. "
        "In-place compaction left the archived rows (active=0, compacted=1) in place; the live list starts with "
        "the summary row. With include_inactive the archived rows come first (they have lower ids).",
        "session": child_id,
        **entry(active_child),
        "tool_results": sum(1 for m in active_child if m["role"] == "tool"),
        "compactions": [{"index": 0, "trigger": "unknown", "pre_tokens": None}],
        "images": 0,
        "model": "anthropic/claude-sonnet-4",
        "inactive_messages": len(child.messages),
        "with_inactive": {
            **entry(inactive_and_active),
            "compactions": [
                {
                    "index": 0,
                    "trigger": "unknown",
                    "pre_tokens": None,
                    "note": "legacy [CONTEXT SUMMARY]: from the rotation",
                },
                {"index": len(child.messages), "trigger": "unknown", "pre_tokens": None},
            ],
        },
        "sessions": [
            {
                "id": old_id,
                "parent_session_id": None,
                "end_reason": "compression",
                "rows": len(old_rows),
                "active_rows": len(old_rows),
                **entry(old.messages),
            },
            {
                "id": child_id,
                "parent_session_id": old_id,
                "end_reason": None,
                "rows": len(child_rows) + len(head_rows) + len(tail_rows),
                "active_rows": len(head_rows) + len(tail_rows),
                "inactive_rows": len(child_rows),
            },
        ],
        "compression_locks": [
            {
                "session_id": lock[0],
                "expired": True,
                "note": "stale lease left by a finished compaction; any lease implementation may reclaim it",
            }
        ],
    }


# ============================================================================ Claude Code

CC_VERSION = "2.0.14"
CC_MODEL = "claude-sonnet-4-5-20250929"
CC_CACHED_SYSTEM = 14_893  # system prompt + tool definitions, cached across sessions


@dataclass
class _CCCall:
    usage: dict[str, Any]
    weight: float
    output: int


class ClaudeCodeLog:
    """Claude Code JSONL lines plus the reader's view (main chain, merged assistant messages)."""

    def __init__(self, ids: Ids, clock: Clock, session_id: str, branch: str) -> None:
        self.ids = ids
        self.clock = clock
        self.session_id = session_id
        self.branch = branch
        self.lines: list[dict[str, Any]] = []
        self.tip: str | None = None
        self.counting = True
        self.sidechain = False
        self.roles: list[str] = []
        self.tool_calls = 0
        self.images = 0
        self.compactions: list[dict[str, Any]] = []
        self.segment: list[_CCCall] = []
        self.main_prompts: list[int] = []
        self.pending_weight = 0.0
        self.excluded = {"sidechain": 0, "abandoned": 0}
        self.excluded_lines = {"sidechain": 0, "abandoned": 0}
        self.injected = 0

    # -- plumbing ------------------------------------------------------------------
    def _base(self, kind: str) -> dict[str, Any]:
        return {
            "parentUuid": self.tip,
            "isSidechain": self.sidechain,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": CC_VERSION,
            "gitBranch": self.branch,
            "type": kind,
        }

    def _emit(self, line: dict[str, Any]) -> str:
        if self.sidechain:
            self.excluded_lines["sidechain"] += 1
        elif not self.counting:
            self.excluded_lines["abandoned"] += 1
        uid = self.ids.uuid()
        line["uuid"] = uid
        line["timestamp"] = self.clock.z()
        self.lines.append(line)
        self.tip = uid
        return uid

    def _count(self, role: str) -> None:
        if self.counting and not self.sidechain:
            self.roles.append(role)
        elif self.sidechain:
            self.excluded["sidechain"] += 1
        else:
            self.excluded["abandoned"] += 1

    # -- lines -------------------------------------------------------------------------
    def prompt(self, text: str | list[dict[str, Any]], **extra: Any) -> str:
        self.clock.tick(15, 90)
        line = self._base("user")
        line["message"] = {"role": "user", "content": text}
        line.update(extra)
        self._count("user")
        if self.counting and not self.sidechain:
            if extra.get("isMeta") or (
                isinstance(text, str)
                and text.lstrip().startswith(("<command-name>", "<local-command-stdout>"))
            ):
                self.injected += 1
            if isinstance(text, list):
                self.images += sum(1 for b in text if b.get("type") == "image")
        self.pending_weight += len(json.dumps(text)) / 3.2
        return self._emit(line)

    def snapshot(self, message_id: str, files: dict[str, int]) -> None:
        self.lines.append(
            {
                "type": "file-history-snapshot",
                "messageId": message_id,
                "snapshot": {
                    "messageId": message_id,
                    "trackedFileBackups": {
                        path: {
                            "backupFileName": f"{self.ids.hex(16)}@v{v}",
                            "version": v,
                            "backupTime": self.clock.z(),
                        }
                        for path, v in files.items()
                    },
                    "timestamp": self.clock.z(),
                },
                "isSnapshotUpdate": False,
            }
        )

    def assistant(self, *blocks: dict[str, Any], output: int | None = None) -> list[str]:
        """One API response: each content block on its own line, sharing id, requestId and usage."""
        self.clock.tick(3, 25)
        msg_id, req = self.ids.msg(), self.ids.req()
        out_tokens = (
            output
            if output is not None
            else max(
                60, sum(len(json.dumps(b)) for b in blocks) // 3 + self.ids.rng.randint(20, 200)
            )
        )
        usage: dict[str, Any] = {
            "input_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "output_tokens": out_tokens,
            "service_tier": "standard",
        }
        if not self.sidechain and self.counting:
            self.segment.append(_CCCall(usage, self.pending_weight, out_tokens))
        self.pending_weight = out_tokens
        ids: list[str] = []
        for i, block in enumerate(blocks):
            if block["type"] == "tool_use":
                block = {**block, "id": self.ids.toolu()}
                ids.append(block["id"])
            line = self._base("assistant")
            last = i == len(blocks) - 1
            line["message"] = {
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "model": CC_MODEL,
                "content": [block],
                "stop_reason": ("tool_use" if block["type"] == "tool_use" else "end_turn")
                if last
                else None,
                "stop_sequence": None,
                "usage": usage,
            }
            line["requestId"] = req
            self._emit(line)
            if i:
                self.clock.tick(0.2, 2)
        self._count("assistant")
        if self.counting and not self.sidechain:
            self.tool_calls += len(ids)
        return ids

    def result(
        self,
        tool_use_id: str,
        content: str | list[dict[str, Any]],
        tool_use_result: Any,
        is_error: bool = False,
    ) -> None:
        self.clock.tick(0.3, 20)
        block: dict[str, Any] = {
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": content,
        }
        if is_error:
            block["is_error"] = True
        line = self._base("user")
        line["message"] = {"role": "user", "content": [block]}
        line["toolUseResult"] = tool_use_result
        self._count("tool")
        self.pending_weight += len(json.dumps(content)) / 3.2
        self._emit(line)

    def compact(self, trigger: str, pre_tokens: int, summary: str) -> None:
        self._fill_usage(target=pre_tokens - self.ids.rng.randint(600, 1800))
        self.clock.tick(20, 60)
        boundary = {
            "parentUuid": None,
            "logicalParentUuid": self.tip,
            "isSidechain": False,
            "userType": "external",
            "cwd": CWD,
            "sessionId": self.session_id,
            "version": CC_VERSION,
            "gitBranch": self.branch,
            "type": "system",
            "subtype": "compact_boundary",
            "content": "Conversation compacted",
            "isMeta": False,
            "level": "info",
            "compactMetadata": {"trigger": trigger, "preTokens": pre_tokens},
        }
        self._emit(boundary)
        self.clock.tick(0.5, 2)
        self.compactions.append(
            {"index": len(self.roles), "trigger": trigger, "pre_tokens": pre_tokens}
        )
        line = self._base("user")
        line["message"] = {"role": "user", "content": summary}
        line["isVisibleInTranscriptOnly"] = True
        line["isCompactSummary"] = True
        self.roles.append("user")
        self.pending_weight = len(summary) / 3.2
        self._emit(line)

    def _fill_usage(self, target: int) -> None:
        """Give this segment's calls prompt sizes that grow from the cached system prompt to ``target``."""
        calls, self.segment = self.segment, []
        if not calls:
            return
        rng = self.ids.rng
        first = CC_CACHED_SYSTEM + 3_800 + int(calls[0].weight) + rng.randint(200, 900)
        weights = [c.weight + rng.uniform(600, 5200) for c in calls[1:]]
        total = sum(weights) or 1.0
        prompts = [first]
        acc = 0.0
        for w in weights:
            acc += w
            prompts.append(int(first + (target - first) * acc / total))
        prev = None
        for call, prompt in zip(calls, prompts, strict=True):
            fresh = rng.randint(1, 12)
            read = CC_CACHED_SYSTEM if prev is None else prev
            created = max(0, prompt - read - fresh)
            call.usage["input_tokens"] = fresh
            call.usage["cache_read_input_tokens"] = read
            call.usage["cache_creation_input_tokens"] = created
            call.usage["cache_creation"]["ephemeral_5m_input_tokens"] = created
            self.main_prompts.append(fresh + read + created)
            prev = prompt

    def finish(self, target: int) -> None:
        self._fill_usage(target)


def _cc_read_result(
    repo: Repo, path: str, offset: int = 1, limit: int | None = None
) -> tuple[str, dict[str, Any]]:
    lines = repo.lines(path)
    end = len(lines) if limit is None else min(len(lines), offset - 1 + limit)
    text = repo.numbered(path, offset, limit, arrow=True)
    raw = "\n".join(lines[offset - 1 : end])
    return text, {
        "type": "text",
        "file": {
            "filePath": f"{CWD}/{path}",
            "content": raw,
            "numLines": end - offset + 1,
            "startLine": offset,
            "totalLines": len(lines),
        },
    }


def _cc_edit_result(repo: Repo, path: str, old: str, new: str) -> tuple[str, dict[str, Any]]:
    before = repo.text(path)
    repo.patch(path, old, new)
    after = repo.text(path)
    a, b = before.splitlines(), after.splitlines()
    hunks = []
    for group in difflib.SequenceMatcher(None, a, b).get_grouped_opcodes(3):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        lines = []
        for tag, x1, x2, y1, y2 in group:
            if tag == "equal":
                lines += [" " + line for line in a[x1:x2]]
            else:
                lines += ["-" + line for line in a[x1:x2]] + ["+" + line for line in b[y1:y2]]
        hunks.append(
            {
                "oldStart": i1 + 1,
                "oldLines": i2 - i1,
                "newStart": j1 + 1,
                "newLines": j2 - j1,
                "lines": lines,
            }
        )
    start = repo.find_line(path, new.splitlines()[0]) if new.strip() else 1
    window = repo.numbered(path, max(1, start - 2), 8, arrow=True)
    msg = f"The file {CWD}/{path} has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n{window}"
    return msg, {
        "filePath": f"{CWD}/{path}",
        "oldString": old,
        "newString": new,
        "originalFile": before,
        "structuredPatch": hunks,
        "userModified": False,
        "replaceAll": False,
    }


def _bash(stdout: str, stderr: str = "") -> dict[str, Any]:
    return {"stdout": stdout, "stderr": stderr, "interrupted": False, "isImage": False}


CC_AUTO_SUMMARY = _text("text/claude_code_auto_summary.txt")

CC_MANUAL_SUMMARY = _text("text/claude_code_manual_summary.txt")


def build_claude_code(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("claude-code")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 18, 13, 2, 11, 0, tzinfo=UTC), rng)
    session = ids.uuid()
    cc = ClaudeCodeLog(ids, clock, session, "fix/payments-idempotency")
    repo = Repo(PROJECT_FILES)
    cl = "src/app/payments/client.py"
    repo.patch(
        cl,
        "        amount_minor = int(float(amount) * 100)\n",
        "        amount_minor = to_cents(amount, currency)\n",
    )
    repo.patch(
        cl,
        "from app.config import Settings\n",
        "from app.config import Settings\nfrom app.utils.money import to_cents\n",
    )

    def tool(name: str, **inp: Any) -> dict[str, Any]:
        return {"type": "tool_use", "name": name, "input": inp}

    def text(t: str) -> dict[str, Any]:
        return {"type": "text", "text": t}

    def think(t: str) -> dict[str, Any]:
        return {
            "type": "thinking",
            "thinking": t,
            "signature": base64.b64encode(
                bytes(rng.getrandbits(8) for _ in range(rng.randint(200, 360)))
            ).decode(),
        }

    # -------------------------------------------------------------- segment A (auto compaction)
    first = ids.uuid()
    cc.snapshot(first, {})
    cc.lines[-1]["messageId"] = first
    uid = cc.prompt(
        "Make the retry logic in src/app/payments/client.py idempotent and add a test. A retry after a timeout must never "
        "create a second charge. Keep the public method signatures of PaymentsClient."
    )
    cc.lines[-2]["messageId"] = uid
    cc.lines[-2]["snapshot"]["messageId"] = uid
    [r1] = cc.assistant(
        think(
            "Retry after a lost response is the classic double-charge. Need Idempotency-Key on POSTs, same key for every attempt of one logical call. Read the client first."
        ),
        text("I'll start by reading the client and its tests."),
        tool("Read", file_path=f"{CWD}/{cl}"),
    )
    body, tur = _cc_read_result(repo, cl)
    cc.result(r1, body, tur)
    r2, r3 = cc.assistant(
        text(
            "No idempotency key is sent today. Checking whether anything else in the repo already builds one, and reading the client tests."
        ),
        tool("Grep", pattern="(?i)idempot", path=f"{CWD}", output_mode="content", **{"-n": True}),
        tool("Read", file_path=f"{CWD}/tests/payments/test_client.py", offset=1, limit=60),
    )
    cc.result(
        r2,
        "No matches found",
        {"mode": "content", "numFiles": 0, "filenames": [], "content": "", "numLines": 0},
    )
    test_client = "\n".join(
        f"{n:>6}→{line}"
        for n, line in enumerate(
            [
                "from __future__ import annotations",
                "",
                "import urllib.parse",
                "from decimal import Decimal",
                "",
                "import httpx",
                "import pytest",
                "",
                "from app.payments.client import PaymentError, PaymentsClient",
                "",
                'BASE = "https://payments.test"',
                "",
                "",
                'def _intent(minor, currency="usd", status="succeeded"):',
                '    return {"id": "pi_test", "amount": minor, "currency": currency.lower(), "status": status}',
                "",
                "",
                "@pytest.fixture",
                "def payments(settings_factory):",
                "    return PaymentsClient(settings_factory(payments_base_url=BASE), max_attempts=3)",
                "",
                "",
                "def test_retries_on_503_then_succeeds(respx_mock, payments):",
                '    route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(',
                "        side_effect=[httpx.Response(503), httpx.Response(200, json=_intent(1999))]",
                "    )",
                '    charge = payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")',
                '    assert charge.status == "succeeded"',
                "    assert route.call_count == 2",
            ],
            start=1,
        )
    )
    cc.result(
        r3,
        test_client,
        {
            "type": "text",
            "file": {
                "filePath": f"{CWD}/tests/payments/test_client.py",
                "content": "(60 lines)",
                "numLines": 29,
                "startLine": 1,
                "totalLines": 104,
            },
        },
    )
    [r4] = cc.assistant(
        tool(
            "TodoWrite",
            todos=[
                {
                    "content": "Derive a stable idempotency key per logical operation",
                    "status": "in_progress",
                    "activeForm": "Deriving idempotency keys",
                },
                {
                    "content": "Send the same Idempotency-Key on every retry",
                    "status": "pending",
                    "activeForm": "Sending the key on retries",
                },
                {
                    "content": "Tests: timeout then success reuses the key; distinct operations differ",
                    "status": "pending",
                    "activeForm": "Writing idempotency tests",
                },
                {
                    "content": "Run payments tests and the full suite",
                    "status": "pending",
                    "activeForm": "Running the tests",
                },
            ],
        ),
    )
    cc.result(
        r4,
        "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable",
        {
            "oldTodos": [],
            "newTodos": [
                {
                    "content": "Derive a stable idempotency key per logical operation",
                    "status": "in_progress",
                    "activeForm": "Deriving idempotency keys",
                }
            ],
        },
    )
    [r5] = cc.assistant(
        text(
            "I'll have a subagent check how the processor client in our other service (billing-worker) keys its requests, so we stay consistent."
        ),
        tool(
            "Task",
            description="Find idempotency key conventions",
            subagent_type="general-purpose",
            prompt="In /home/maya/src/billing-worker, find where HTTP POSTs to the payment processor are made and how (if at all) an Idempotency-Key is derived. Report file:line and the exact key format. Read-only.",
        ),
    )
    # sidechain: the subagent's own conversation, kept out of the main chain
    saved_tip = cc.tip
    cc.sidechain = True
    cc.tip = None
    cc.prompt(
        "In /home/maya/src/billing-worker, find where HTTP POSTs to the payment processor are made and how (if at all) an Idempotency-Key is derived. Report file:line and the exact key format. Read-only."
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    [s1] = cc.assistant(
        tool(
            "Grep",
            pattern="Idempotency-Key",
            path="/home/maya/src/billing-worker",
            output_mode="content",
            **{"-n": True},
        )
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    cc.result(
        s1,
        '/home/maya/src/billing-worker/worker/processor.py:41:        headers={"Idempotency-Key": _key("payout", payout.id, payout.amount_minor)},\n/home/maya/src/billing-worker/worker/processor.py:18:def _key(kind: str, *parts: object) -> str:',
        {
            "mode": "content",
            "numFiles": 1,
            "filenames": ["/home/maya/src/billing-worker/worker/processor.py"],
            "content": "...",
            "numLines": 2,
        },
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    [s2] = cc.assistant(
        tool(
            "Read",
            file_path="/home/maya/src/billing-worker/worker/processor.py",
            offset=15,
            limit=10,
        )
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    cc.result(
        s2,
        '    15→import hashlib\n    16→\n    17→\n    18→def _key(kind: str, *parts: object) -> str:\n    19→    raw = ":".join([kind, *map(str, parts)])\n    20→    return hashlib.sha256(raw.encode()).hexdigest()[:32]\n    21→\n    22→\n    23→class ProcessorClient:\n    24→    def __init__(self, http):',
        {
            "type": "text",
            "file": {
                "filePath": "/home/maya/src/billing-worker/worker/processor.py",
                "content": "...",
                "numLines": 10,
                "startLine": 15,
                "totalLines": 88,
            },
        },
    )
    cc.lines[-1]["agentId"] = "a7c2e91f"
    sub_answer = (
        "billing-worker/worker/processor.py:18 defines `_key(kind, *parts)`: it joins kind and parts with ':' and returns the first 32 hex chars "
        'of sha256. Used at processor.py:41 as `_key("payout", payout.id, payout.amount_minor)` in the Idempotency-Key header. No other POSTs set a key.'
    )
    cc.assistant(text(sub_answer))
    cc.lines[-1]["agentId"] = "a7c2e91f"
    cc.sidechain = False
    cc.tip = saved_tip
    cc.result(
        r5,
        [{"type": "text", "text": sub_answer}],
        {
            "status": "completed",
            "prompt": "In /home/maya/src/billing-worker, find where HTTP POSTs ...",
            "agentId": "a7c2e91f",
            "content": [{"type": "text", "text": sub_answer}],
            "totalDurationMs": 21840,
            "totalTokens": 18211,
            "totalToolUseCount": 2,
            "usage": {
                "input_tokens": 9,
                "cache_creation_input_tokens": 3120,
                "cache_read_input_tokens": 14893,
                "output_tokens": 189,
                "service_tier": "standard",
            },
        },
    )

    old_sig = (
        "    def _post_with_retries(self, path: str, body: dict[str, Any]) -> dict[str, Any]:\n"
    )
    new_sig = "    def _post_with_retries(self, path: str, body: dict[str, Any], *, idempotency_key: str) -> dict[str, Any]:\n"
    [r6] = cc.assistant(
        think(
            "Match the worker's convention: sha256 of 'kind:parts', 32 hex. Key per logical operation, computed before the loop. Change _post_with_retries to require a key."
        ),
        text(
            'I\'ll follow the same convention as billing-worker: `sha256("kind:part:...")[:32]`. First, make `_post_with_retries` take the key.'
        ),
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_sig, new_string=new_sig),
    )
    msg, tur = _cc_edit_result(repo, cl, old_sig, new_sig)
    cc.result(r6, msg, tur)
    bad_old = "                resp = self._http.post(path, json=body)\n"
    [r7] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/{cl}",
            old_string=bad_old,
            new_string='                resp = self._http.post(path, json=body, headers={"Idempotency-Key": idempotency_key})\n',
        ),
    )
    if bad_old in repo.text(cl):
        raise AssertionError("claude-code: the failing edit must not match")
    cc.result(
        r7,
        "<tool_use_error>String to replace not found in file.\nString:                 resp = self._http.post(path, json=body)\n</tool_use_error>",
        "Error: String to replace not found in file.\nString:                 resp = self._http.post(path, json=body)\n",
        is_error=True,
    )
    loop_at = repo.find_line(cl, "attempt = 0")
    [r8] = cc.assistant(
        text("I misremembered the call: it posts form data, not JSON. Re-reading the loop."),
        tool("Read", file_path=f"{CWD}/{cl}", offset=loop_at - 1, limit=24),
    )
    body, tur = _cc_read_result(repo, cl, loop_at - 1, 24)
    cc.result(r8, body, tur)
    good_old = "                resp = self._http.post(path, data=body)\n"
    good_new = '                resp = self._http.post(path, data=body, headers={"Idempotency-Key": idempotency_key})\n'
    [r9] = cc.assistant(
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=good_old, new_string=good_new)
    )
    msg, tur = _cc_edit_result(repo, cl, good_old, good_new)
    cc.result(r9, msg, tur)
    old_charge = '        data = self._post_with_retries("/v1/payment_intents", body)\n'
    new_charge = '        key = _idempotency_key("charge", invoice_id, amount_minor, currency.upper())\n        data = self._post_with_retries("/v1/payment_intents", body, idempotency_key=key)\n'
    [r10] = cc.assistant(
        text("Now derive keys in `charge` and `refund`."),
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_charge, new_string=new_charge),
    )
    msg, tur = _cc_edit_result(repo, cl, old_charge, new_charge)
    cc.result(r10, msg, tur)
    old_refund = '        return self._post_with_retries("/v1/refunds", body)\n'
    new_refund = '        key = _idempotency_key("refund", charge_id, amount_minor if amount_minor is not None else "full")\n        return self._post_with_retries("/v1/refunds", body, idempotency_key=key)\n'
    [r11] = cc.assistant(
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_refund, new_string=new_refund)
    )
    msg, tur = _cc_edit_result(repo, cl, old_refund, new_refund)
    cc.result(r11, msg, tur)
    old_tail = "RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})\n"
    new_tail = (
        old_tail + "\n\ndef _idempotency_key(kind: str, *parts: object) -> str:\n"
        '    """Stable per logical operation, so every retry of it reuses the same key."""\n'
        '    raw = ":".join([kind, *map(str, parts)])\n'
        "    return hashlib.sha256(raw.encode()).hexdigest()[:32]\n"
    )
    [r12] = cc.assistant(
        tool("Edit", file_path=f"{CWD}/{cl}", old_string=old_tail, new_string=new_tail)
    )
    msg, tur = _cc_edit_result(repo, cl, old_tail, new_tail)
    cc.result(r12, msg, tur)
    [r13] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/{cl}",
            old_string="import logging\n",
            new_string="import hashlib\nimport logging\n",
        )
    )
    msg, tur = _cc_edit_result(repo, cl, "import logging\n", "import hashlib\nimport logging\n")
    cc.result(r13, msg, tur)
    test_file = (
        "from __future__ import annotations\n\nfrom decimal import Decimal\n\nimport httpx\n\nfrom app.payments.client import PaymentsClient\n\n"
        'BASE = "https://payments.test"\n\n\n'
        'def _ok(minor: int) -> httpx.Response:\n    return httpx.Response(200, json={"id": "pi_1", "amount": minor, "currency": "usd", "status": "succeeded"})\n\n\n'
        "def test_timeout_then_success_reuses_the_key(respx_mock, payments):\n"
        '    route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(side_effect=[httpx.ReadTimeout("lost"), _ok(1999)])\n'
        '    payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")\n'
        '    keys = [call.request.headers["Idempotency-Key"] for call in route.calls]\n'
        "    assert len(keys) == 2 and keys[0] == keys[1]\n\n\n"
        "def test_distinct_invoices_get_distinct_keys(respx_mock, payments):\n"
        '    route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(return_value=_ok(1999))\n'
        '    for invoice in ("inv_1", "inv_2"):\n'
        '        payments.charge(customer_id="cus_1", invoice_id=invoice, amount=Decimal("19.99"), currency="USD")\n'
        '    a, b = (call.request.headers["Idempotency-Key"] for call in route.calls)\n'
        "    assert a != b\n\n\n"
        "def test_refund_keys_differ_from_charge_keys(respx_mock, payments):\n"
        '    charge = respx_mock.post(f"{BASE}/v1/payment_intents").mock(return_value=_ok(1999))\n'
        '    refund = respx_mock.post(f"{BASE}/v1/refunds").mock(return_value=httpx.Response(200, json={"id": "re_1"}))\n'
        '    payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")\n'
        '    payments.refund(charge_id="pi_1", amount_minor=500)\n'
        '    assert charge.calls.last.request.headers["Idempotency-Key"] != refund.calls.last.request.headers["Idempotency-Key"]\n'
    )
    [r14] = cc.assistant(
        text("Adding tests for the retry path and key separation."),
        tool("Write", file_path=f"{CWD}/tests/payments/test_idempotency.py", content=test_file),
    )
    cc.result(
        r14,
        f"File created successfully at: {CWD}/tests/payments/test_idempotency.py",
        {
            "type": "create",
            "filePath": f"{CWD}/tests/payments/test_idempotency.py",
            "content": test_file,
            "structuredPatch": [],
        },
    )
    [r15] = cc.assistant(
        tool("Bash", command="python -m pytest -q tests/payments", description="Run payments tests")
    )
    out = (
        "....................................F..                                  [100%]\n"
        "=================================== FAILURES ===================================\n"
        "_____________________ test_retries_on_503_then_succeeds _______________________\n\n"
        "    def test_retries_on_503_then_succeeds(respx_mock, payments):\n"
        '        route = respx_mock.post(f"{BASE}/v1/payment_intents").mock(\n'
        "            side_effect=[httpx.Response(503), httpx.Response(200, json=_intent(1999))]\n"
        "        )\n"
        '>       charge = payments.charge(customer_id="cus_1", invoice_id="inv_1", amount=Decimal("19.99"), currency="USD")\n\n'
        "tests/payments/test_client.py:27: \n" + SEP_FRAME + "\n\n"
        "    def refund(self, *, charge_id: str, amount_minor: int | None = None) -> dict[str, Any]:\n"
        "E   NameError: name '_idempotency_key' is not defined\n\n"
        "src/app/payments/client.py:58: NameError\n"
        "=========================== short test summary info ============================\n"
        "FAILED tests/payments/test_client.py::test_retries_on_503_then_succeeds - NameError: name '_idempotency_key' is not defined\n"
        "1 failed, 38 passed in 0.91s"
    )
    cc.result(r15, "Exit code 1\n" + out, "Error: Exit code 1\n" + out, is_error=True)
    [r16] = cc.assistant(
        think(
            "NameError? I inserted _idempotency_key after RETRYABLE_STATUS... unless the module was imported before? No — stale .pyc? More likely pytest-xdist? Check file order: maybe my Edit of RETRYABLE_STATUS matched inside a docstring. Read the top of the file."
        ),
        tool(
            "Bash",
            command="grep -n '_idempotency_key\\|^RETRYABLE_STATUS\\|^class PaymentsClient' src/app/payments/client.py",
            description="Locate the helper",
        ),
    )
    grep = "\n".join(
        f"{i}:{line}"
        for i, line in enumerate(repo.lines(cl), start=1)
        if "_idempotency_key" in line
        or line.startswith(("RETRYABLE_STATUS", "class PaymentsClient"))
    )
    cc.result(r16, grep, _bash(grep))
    [r17] = cc.assistant(
        text(
            "The helper is defined at module level before the class, so the NameError came from a stale import; the test process had `app.payments.client` cached by a pytest plugin. Clearing caches and re-running."
        ),
        tool(
            "Bash",
            command="find . -name __pycache__ -path './src/*' -prune -exec rm -rf {} + && python -m pytest -q -p no:cacheprovider tests/payments",
            description="Clear bytecode caches and rerun",
        ),
    )
    out = "".join("." for _ in range(42)).ljust(72) + " [100%]\n42 passed in 0.88s"
    cc.result(r17, out, _bash(out))
    cc.prompt("Looks right. Run the whole suite.")
    [r18] = cc.assistant(
        tool(
            "Bash",
            command="python -m pytest -q",
            description="Run the full test suite",
            timeout=600000,
        )
    )
    out = (
        "\n".join("".ljust(72, ".") + f" [{p:>3}%]" for p in (20, 40, 60, 80))
        + "\n"
        + "".ljust(71, ".")
        + " [100%]\n359 passed, 2 skipped in 10.42s"
    )
    cc.result(r18, out, _bash(out))
    cc.assistant(
        text(
            "All green: 359 passed, 2 skipped. The client now derives one key per logical operation (`charge:<invoice>:<minor>:<CUR>`, `refund:<charge>:<minor|full>`, hashed like billing-worker) and sends it on every retry; three new tests cover retry reuse and key separation."
        )
    )
    # a few more big reads push the context towards the limit before the user moves on
    cc.prompt(
        "Before we move on, show me everything that touches the payments client so I can review it in one place."
    )
    [r19, r20] = cc.assistant(
        tool("Read", file_path=f"{CWD}/{cl}"),
        tool(
            "Bash",
            command="git diff -- src/app/payments tests/payments",
            description="Diff of payments changes",
        ),
    )
    body, tur = _cc_read_result(repo, cl)
    cc.result(r19, body, tur)
    diff = Repo.diff(cl, PROJECT_FILES[cl], repo.text(cl))
    cc.result(r20, diff, _bash(diff))
    cc.assistant(
        text(
            "Above: the full client and the diff. The behaviour change is confined to `_post_with_retries` (requires a key, sends it on every attempt) and the two callers that derive it."
        )
    )
    cc.compact("auto", 167_000, CC_AUTO_SUMMARY)

    # -------------------------------------------------------------- segment B (rewind, manual compaction)
    cc.prompt("Now the flaky webhook test, #431.")
    [r21] = cc.assistant(
        text("Reproducing with the seed from the issue."),
        tool(
            "Bash",
            command="python -m pytest -q -p randomly -p randomly_seed=3127904561 tests/payments/test_webhooks.py",
            description="Reproduce #431",
        ),
    )
    out = (
        "...........F..........                                                   [100%]\n"
        "FAILED tests/payments/test_webhooks.py::test_duplicate_events_are_ignored - AssertionError: assert 'duplicate' == 'applied'\n"
        "1 failed, 21 passed in 0.44s"
    )
    cc.result(r21, "Exit code 1\n" + out, "Error: Exit code 1\n" + out, is_error=True)
    cc.assistant(
        text(
            "Reproduced. `_SEEN_EVENTS` in webhooks.py is module-level and survives between tests, so whichever test handles `evt_1` first makes the other see a duplicate. How would you like to handle it?"
        )
    )
    branch_point = cc.tip
    # the abandoned branch: the user asks for an xfail, then rewinds and asks for a real fix
    cc.counting = False
    cc.prompt("Just mark it xfail for now, I don't want to touch webhooks this week.")
    [ra] = cc.assistant(
        text("Marking it xfail with a reference to #431."),
        tool(
            "Edit",
            file_path=f"{CWD}/tests/payments/test_webhooks.py",
            old_string="def test_duplicate_events_are_ignored(",
            new_string='@pytest.mark.xfail(reason="order-dependent, see #431", strict=False)\ndef test_duplicate_events_are_ignored(',
        ),
    )
    cc.result(
        ra,
        f"The file {CWD}/tests/payments/test_webhooks.py has been updated.",
        {
            "filePath": f"{CWD}/tests/payments/test_webhooks.py",
            "oldString": "def test_duplicate_events_are_ignored(",
            "newString": "@pytest.mark.xfail(...)\ndef test_duplicate_events_are_ignored(",
            "originalFile": "",
            "structuredPatch": [],
            "userModified": False,
            "replaceAll": False,
        },
    )
    cc.assistant(text("Done — the test is xfail (non-strict) and references #431."))
    cc.counting = True
    cc.tip = branch_point
    cc.prompt("Actually, fix it properly: reset the dedupe state per test; don't hide it.")
    [r22, r23] = cc.assistant(
        think(
            "Proper fix: make dedupe state injectable (EventStore), default in-memory store, and an autouse fixture clearing it. Read webhooks.py and the payments conftest together."
        ),
        text("Agreed. Reading the handler and the payments conftest."),
        tool("Read", file_path=f"{CWD}/src/app/payments/webhooks.py"),
        tool("Read", file_path=f"{CWD}/tests/payments/conftest.py"),
    )
    wh = Repo({"src/app/payments/webhooks.py": PROJECT_FILES["src/app/payments/webhooks.py"]})
    body, tur = _cc_read_result(wh, "src/app/payments/webhooks.py")
    cc.result(r22, body, tur)
    conf = "\n".join(
        f"{n:>6}→{line}"
        for n, line in enumerate(
            [
                "import pytest",
                "import respx",
                "",
                "",
                "@pytest.fixture",
                "def respx_mock():",
                '    with respx.mock(base_url="https://payments.test", assert_all_called=False) as mock:',
                "        yield mock",
            ],
            start=1,
        )
    )
    cc.result(
        r23,
        conf,
        {
            "type": "text",
            "file": {
                "filePath": f"{CWD}/tests/payments/conftest.py",
                "content": "...",
                "numLines": 8,
                "startLine": 1,
                "totalLines": 8,
            },
        },
    )
    old_seen = "_SEEN_EVENTS: set[str] = set()\n"
    new_seen = (
        '\n\nclass InMemoryEventStore:\n    """Ids of handled events (per process). Replaced by a Postgres store in #419."""\n\n'
        "    def __init__(self) -> None:\n        self._ids: set[str] = set()\n\n"
        "    def seen(self, event_id: str) -> bool:\n        return event_id in self._ids\n\n"
        "    def add(self, event_id: str) -> None:\n        self._ids.add(event_id)\n\n"
        "    def clear(self) -> None:\n        self._ids.clear()\n\n\nDEFAULT_STORE = InMemoryEventStore()\n"
    )
    [r24] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/src/app/payments/webhooks.py",
            old_string=old_seen,
            new_string=new_seen,
        )
    )
    msg, tur = _cc_edit_result(wh, "src/app/payments/webhooks.py", old_seen, new_seen)
    cc.result(r24, msg, tur)
    old_h = (
        'def handle_event(event: dict[str, Any], invoices: InvoiceService) -> str:\n    if event["id"] in _SEEN_EVENTS:\n'
        '        return "duplicate"\n    _SEEN_EVENTS.add(event["id"])\n'
    )
    new_h = (
        "def handle_event(event: dict[str, Any], invoices: InvoiceService, store: InMemoryEventStore = DEFAULT_STORE) -> str:\n"
        '    if store.seen(event["id"]):\n        return "duplicate"\n    store.add(event["id"])\n'
    )
    [r25] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/src/app/payments/webhooks.py",
            old_string=old_h,
            new_string=new_h,
        )
    )
    msg, tur = _cc_edit_result(wh, "src/app/payments/webhooks.py", old_h, new_h)
    cc.result(r25, msg, tur)
    [r26] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/tests/payments/conftest.py",
            old_string="@pytest.fixture\ndef respx_mock():",
            new_string="@pytest.fixture(autouse=True)\ndef _fresh_event_store():\n    DEFAULT_STORE.clear()\n    yield\n    DEFAULT_STORE.clear()\n\n\n@pytest.fixture\ndef respx_mock():",
        )
    )
    cc.result(
        r26,
        f"The file {CWD}/tests/payments/conftest.py has been updated. Here's the result of running `cat -n` on a snippet of the edited file:\n     5→@pytest.fixture(autouse=True)\n     6→def _fresh_event_store():\n     7→    DEFAULT_STORE.clear()\n     8→    yield\n     9→    DEFAULT_STORE.clear()",
        {
            "filePath": f"{CWD}/tests/payments/conftest.py",
            "oldString": "@pytest.fixture\ndef respx_mock():",
            "newString": "@pytest.fixture(autouse=True)\ndef _fresh_event_store(): ...",
            "originalFile": "",
            "structuredPatch": [],
            "userModified": False,
            "replaceAll": False,
        },
    )
    [r27] = cc.assistant(
        tool(
            "Edit",
            file_path=f"{CWD}/tests/payments/conftest.py",
            old_string="import pytest\nimport respx\n",
            new_string="import pytest\nimport respx\n\nfrom app.payments.webhooks import DEFAULT_STORE\n",
        )
    )
    cc.result(
        r27,
        f"The file {CWD}/tests/payments/conftest.py has been updated.",
        {
            "filePath": f"{CWD}/tests/payments/conftest.py",
            "oldString": "import pytest\nimport respx\n",
            "newString": "import pytest\nimport respx\n\nfrom app.payments.webhooks import DEFAULT_STORE\n",
            "originalFile": "",
            "structuredPatch": [],
            "userModified": False,
            "replaceAll": False,
        },
    )
    [r28] = cc.assistant(
        text("Running the reproducing seed plus 20 random orders."),
        tool(
            "Bash",
            command="for s in 3127904561 $(seq 1 20); do python -m pytest -q -p randomly -p randomly_seed=$s tests/payments/test_webhooks.py | tail -n 1; done | sort | uniq -c",
            description="Check order independence",
        ),
    )
    out = "     21 22 passed in 0.4s"
    cc.result(r28, out, _bash(out))
    [r29] = cc.assistant(
        tool(
            "Bash",
            command="python -m pytest -q && ruff check src tests",
            description="Full suite and lint",
        )
    )
    out = (
        "\n".join("".ljust(72, ".") + f" [{p:>3}%]" for p in (20, 40, 60, 80))
        + "\n"
        + "".ljust(71, ".")
        + " [100%]\n359 passed, 2 skipped in 10.37s\nAll checks passed!"
    )
    cc.result(r29, out, _bash(out))
    cc.assistant(
        text(
            "Fixed properly: dedupe state lives in an `InMemoryEventStore` (`DEFAULT_STORE`), injectable into `handle_event`, and an autouse fixture clears it around every payments test. The #431 seed and 20 random orders all pass; full suite and lint are green. #419 can later swap in its Postgres store through the same interface."
        )
    )
    cc.compact("manual", 98_000, CC_MANUAL_SUMMARY)
    cc.prompt(
        "Caveat: The messages below were generated by the user while running local commands. DO NOT respond to these messages or otherwise consider them in your response unless the user explicitly asks you to.",
        isMeta=True,
    )
    cc.prompt(
        "<command-name>/compact</command-name>\n            <command-message>compact</command-message>\n            <command-args>focus on the payments changes</command-args>"
    )
    cc.prompt(
        "<local-command-stdout>\u001b[2mCompacted (ctrl+o to see full summary)\u001b[22m</local-command-stdout>"
    )

    # -------------------------------------------------------------- segment C
    snap_msg = cc.prompt("Write a PR description for both changes.")
    cc.snapshot(
        snap_msg,
        {
            "src/app/payments/client.py": 2,
            "src/app/payments/webhooks.py": 1,
            "tests/payments/conftest.py": 1,
        },
    )
    [r30] = cc.assistant(
        tool(
            "Bash",
            command="git log --oneline main..HEAD; git diff --stat main",
            description="Summarise branch changes",
        )
    )
    out = (
        " src/app/payments/client.py          | 18 ++++++++++++++----\n src/app/payments/webhooks.py        | 28 +++++++++++++++++++++++-----\n"
        " tests/payments/conftest.py          |  9 +++++++++\n tests/payments/test_idempotency.py  | 34 ++++++++++++++++++++++++++++++++++\n"
        " 4 files changed, 82 insertions(+), 7 deletions(-)"
    )
    cc.result(r30, out, _bash(out))
    cc.assistant(
        text(
            "## Idempotent payment retries; order-independent webhook dedupe\n\n"
            "### Why\n- A retry after a lost response could create a second charge: retried POSTs carried no `Idempotency-Key`.\n"
            "- `test_duplicate_events_are_ignored` failed depending on test order (#431) because dedupe state was a module-level set.\n\n"
            "### What\n- `PaymentsClient._post_with_retries` requires an idempotency key and sends it on every attempt. `charge` keys on "
            "invoice, minor amount and currency; `refund` on charge and amount. Same `sha256(kind:parts)[:32]` scheme as billing-worker.\n"
            "- `app.payments.webhooks`: dedupe goes through an `InMemoryEventStore` (`DEFAULT_STORE`), injectable into `handle_event`; "
            "tests reset it with an autouse fixture. #419 can plug its Postgres store into the same interface.\n\n"
            "### Tests\n- New `tests/payments/test_idempotency.py` (retry reuses the key; keys differ across invoices and between charge/refund).\n"
            "- #431 seed and 20 random orders pass; full suite: 359 passed, 2 skipped.\n\nCloses #431."
        )
    )
    cc.finish(24_300)
    cc.lines.insert(
        0,
        {
            "type": "summary",
            "summary": "Idempotent payment retries and webhook dedupe fix",
            "leafUuid": cc.tip,
        },
    )

    write_text(
        out_dir / "claude-code.jsonl", "\n".join(dumps_compact(line) for line in cc.lines) + "\n"
    )
    return {
        "format": "claude-code",
        "rule": "Follow parentUuid back from the newest leaf; at a compact_boundary (parentUuid null) continue through "
        "logicalParentUuid, so the whole main-chain history is kept. Assistant lines sharing (message.id, requestId) "
        "merge into one assistant message. Each tool_result block becomes one tool message. Every other main-chain user "
        "line is one user message: prompts, the isCompactSummary summaries, isMeta caveats and <command-name>/"
        "<local-command-stdout> lines (injected). Not messages: compact_boundary lines, the summary title line, "
        "file-history-snapshot lines, isSidechain lines and the abandoned rewind branch. A compaction's index is the "
        "position of its isCompactSummary message. Usage: one entry per merged main-chain assistant message; prompt = "
        "input + cache_creation + cache_read.",
        "messages": len(cc.roles),
        "roles": role_counts(cc.roles),
        "tool_calls": cc.tool_calls,
        "tool_results": cc.roles.count("tool"),
        "compactions": cc.compactions,
        "images": cc.images,
        "model": CC_MODEL,
        "session_id": session,
        "lines": len(cc.lines),
        "injected_user_messages": cc.injected,
        # The sidechain lines above all belong to one subagent.
        "subagents": ["a7c2e91f"],
        "excluded": {
            "sidechain_messages": cc.excluded["sidechain"],
            "sidechain_lines": cc.excluded_lines["sidechain"],
            "abandoned_branch_messages": cc.excluded["abandoned"],
            "abandoned_branch_lines": cc.excluded_lines["abandoned"],
        },
        "usage_turns": len(cc.main_prompts),
        "prompt_tokens": {
            "first": cc.main_prompts[0],
            "peak": max(cc.main_prompts),
            "last": cc.main_prompts[-1],
        },
        "live_messages_after_last_compaction": len(cc.roles) - cc.compactions[-1]["index"],
    }


# ================================================================================= Codex

CODEX_INSTRUCTIONS = _text("text/codex_instructions.txt")

CODEX_AGENTS = _text("text/codex_agents.txt")

CODEX_ENV = f"""<environment_context>
  <cwd>{CWD}</cwd>
  <approval_policy>on-request</approval_policy>
  <sandbox_mode>workspace-write</sandbox_mode>
  <network_access>restricted</network_access>
  <shell>bash</shell>
</environment_context>"""


class CodexLog:
    """Codex rollout lines plus the reader's message view and usage events."""

    def __init__(self, ids: Ids, clock: Clock) -> None:
        self.ids = ids
        self.clock = clock
        self.lines: list[dict[str, Any]] = []
        self.roles: list[str] = []
        self.tool_calls = 0
        self.last_kind: str | None = None  # "calls" while inside a run of call items
        self.compactions: list[dict[str, Any]] = []
        self.prompt = 0
        self.total = {
            "input_tokens": 0,
            "cached_input_tokens": 0,
            "output_tokens": 0,
            "reasoning_output_tokens": 0,
            "total_tokens": 0,
        }
        self.usage_events: list[int] = []
        self.injected = 0

    def _message(self, role: str) -> None:
        self.roles.append(role)

    def emit(
        self, kind: str, payload: dict[str, Any], tick: tuple[float, float] = (0.05, 1.5)
    ) -> None:
        self.clock.tick(*tick)
        self.lines.append({"timestamp": self.clock.z(), "type": kind, "payload": payload})

    def item(self, payload: dict[str, Any]) -> None:
        kind = payload["type"]
        if kind == "message":
            self._message(payload["role"])
            self.last_kind = None
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            if self.last_kind != "calls":
                self._message("assistant")
            self.last_kind = "calls"
            self.tool_calls += 1
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self._message("tool")
            self.last_kind = None
        self.emit("response_item", payload)

    def user(self, text: str, injected: bool = False) -> None:
        self.item(
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}
        )
        if injected:
            self.injected += 1
        else:
            self.emit("event_msg", {"type": "user_message", "message": text, "images": []})

    def reasoning(self, title: str, body: str) -> None:
        text = f"**{title}**\n\n{body}"
        enc = (
            "gAAAAAB"
            + base64.urlsafe_b64encode(
                bytes(self.ids.rng.getrandbits(8) for _ in range(self.ids.rng.randint(380, 900)))
            ).decode()
        )
        self.emit(
            "response_item",
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": text}],
                "content": None,
                "encrypted_content": enc,
            },
            (2, 9),
        )
        self.emit("event_msg", {"type": "agent_reasoning", "text": text})

    def say(self, text: str) -> None:
        self.item(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text}],
            }
        )
        self.emit("event_msg", {"type": "agent_message", "message": text})

    def shell(self, command: str, timeout_ms: int = 120_000) -> str:
        cid = self.ids.call()
        args = {"command": ["bash", "-lc", command], "workdir": CWD, "timeout_ms": timeout_ms}
        self.item(
            {
                "type": "function_call",
                "name": "shell",
                "arguments": dumps_compact(args),
                "call_id": cid,
            }
        )
        return cid

    def output(self, cid: str, text: str, code: int = 0, custom: bool = False) -> None:
        out = dumps_compact(
            {
                "output": text,
                "metadata": {
                    "exit_code": code,
                    "duration_seconds": round(self.ids.rng.uniform(0.05, 4.0), 1),
                },
            }
        )
        self.item(
            {
                "type": "custom_tool_call_output" if custom else "function_call_output",
                "call_id": cid,
                "output": out,
            }
        )

    def tokens(self, grow: int, output: int, reasoning: int) -> None:
        """One model response finished: a token_count event with the prompt it used."""
        cached = self.prompt - self.prompt % 128 if self.prompt else 0
        self.prompt += grow
        last = {
            "input_tokens": self.prompt,
            "cached_input_tokens": cached,
            "output_tokens": output,
            "reasoning_output_tokens": reasoning,
            "total_tokens": self.prompt + output,
        }
        for k in self.total:
            self.total[k] += last[k]
        self.usage_events.append(self.prompt)
        self.emit(
            "event_msg",
            {
                "type": "token_count",
                "info": {
                    "total_token_usage": dict(self.total),
                    "last_token_usage": last,
                    "model_context_window": 272_000,
                },
                "rate_limits": {
                    "primary": {
                        "used_percent": round(4 + len(self.usage_events) * 0.7, 1),
                        "window_minutes": 299,
                        "resets_in_seconds": 14_020 - 61 * len(self.usage_events),
                    },
                    "secondary": {
                        "used_percent": 11.0,
                        "window_minutes": 10_079,
                        "resets_in_seconds": 401_233,
                    },
                },
            },
        )
        self.prompt += output

    def compacted(self, summary: str) -> None:
        self.compactions.append(
            {"index": len(self.roles), "trigger": "unknown", "pre_tokens": self.usage_events[-1]}
        )
        self._message("user")
        self.last_kind = None
        self.emit("compacted", {"message": summary}, (8, 20))
        self.emit("event_msg", {"type": "context_compacted"})


RECON_CSV_HEAD = _text("text/recon_csv_head.txt")


def build_codex(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("codex")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 19, 9, 31, 2, 0, tzinfo=UTC), rng)
    cx = CodexLog(ids, clock)
    session = ids.uuid()
    repo = Repo(PROJECT_FILES)
    cli = "src/app/cli.py"
    repo.patch(cli, "    mismatches = 0\n", "    mismatches = 0\n    pending = 0\n")
    cx.emit(
        "session_meta",
        {
            "id": session,
            "timestamp": clock.z(),
            "cwd": CWD,
            "originator": "codex_cli_rs",
            "cli_version": "0.42.0",
            "instructions": CODEX_INSTRUCTIONS,
            "source": "cli",
            "model_provider": "openai",
            "git": {
                "commit_hash": "c58d1f0e2b7a94d1c3f6a8e05b2d9c71e4f0a3b6",
                "branch": "feat/reconcile-refunds",
                "repository_url": "git@github.com:ledgerline/ledgerline.git",
            },
        },
    )
    cx.user(CODEX_AGENTS, injected=True)
    cx.user(CODEX_ENV, injected=True)
    turn = {
        "cwd": CWD,
        "approval_policy": "on-request",
        "sandbox_policy": {
            "mode": "workspace-write",
            "network_access": False,
            "exclude_tmpdir_env_var": False,
            "exclude_slash_tmp": False,
        },
        "model": "gpt-5-codex",
        "effort": "medium",
        "summary": "auto",
    }
    cx.emit("turn_context", turn)
    cx.emit("event_msg", {"type": "task_started", "model_context_window": 272_000})
    ask = (
        "Fix #433: `python -m app.cli reconcile` should compare settlements with the invoice total minus succeeded refunds, "
        "and list refunded invoices separately instead of calling them mismatches. Refunds are in the refunds table "
        "(see app.billing.refunds). Add tests."
    )
    cx.user(ask)
    cx.prompt = 11_840
    cx.reasoning(
        "Exploring reconcile and refunds",
        "I need the current reconcile implementation and how refunds are stored before changing anything; read both in parallel.",
    )
    c1 = cx.shell(f"sed -n '1,80p' {cli}")
    c2 = cx.shell("rg -n 'class Refund|def refunds_for|succeeded' src/app/billing/refunds.py")
    cx.tokens(0, 212, 128)
    cx.output(c1, repo.text(cli))
    cx.output(
        c2,
        '14:class RefundRow(Base):\n22:    status: Mapped[str]  # pending | succeeded | failed\n41:def refunds_for(session, invoice_numbers: Iterable[str]) -> dict[str, list[RefundRow]]:\n48:        .where(RefundRow.status == "succeeded")',
    )
    cx.reasoning(
        "Reading refunds helper",
        "refunds_for returns succeeded refunds grouped by invoice number; amounts are Numeric. I should read it fully to know the field names.",
    )
    c3 = cx.shell("sed -n '1,70p' src/app/billing/refunds.py")
    cx.tokens(2_410, 96, 64)
    cx.output(
        c3,
        '"""Refund records mirrored from the processor."""\n\nfrom __future__ import annotations\n\nfrom collections.abc import Iterable\nfrom decimal import Decimal\n\nfrom sqlalchemy import Numeric, String, select\nfrom sqlalchemy.orm import Mapped, mapped_column\n\nfrom app.db.models import Base\n\n\nclass RefundRow(Base):\n    __tablename__ = "refunds"\n\n    id: Mapped[str] = mapped_column(String(32), primary_key=True)\n    invoice_number: Mapped[str] = mapped_column(String(24), index=True)\n    charge_id: Mapped[str] = mapped_column(String(32))\n    amount: Mapped[Decimal] = mapped_column(Numeric(12, 2))\n    currency: Mapped[str] = mapped_column(String(3))\n    status: Mapped[str]  # pending | succeeded | failed\n\n\ndef refunds_for(session, invoice_numbers: Iterable[str]) -> dict[str, list[RefundRow]]:\n    rows = session.scalars(\n        select(RefundRow)\n        .where(RefundRow.invoice_number.in_(list(invoice_numbers)))\n        .where(RefundRow.status == "succeeded")\n    )\n    out: dict[str, list[RefundRow]] = {}\n    for row in rows:\n        out.setdefault(row.invoice_number, []).append(row)\n    return out',
    )
    cx.reasoning(
        "Inspecting the real settlement export",
        "Check the CSV size and a few rows to see how refunded invoices appear. Careful: the file may be large.",
    )
    c4 = cx.shell("wc -l var/settlements.csv && cat var/settlements.csv")
    cx.tokens(1_930, 88, 40)
    big = (
        RECON_CSV_HEAD
        + "\n"
        + "\n".join(
            f"2025-09-{1 + i % 18:02d},INV-2025-{200 + i:04d},{('USD', 'EUR', 'GBP', 'JPY')[i % 4]},{(i * 37) % 900 + 10}.{(i * 13) % 100:02d},{(i * 37) % 900 + 10}.{(i * 13) % 100:02d},pi_{ids.b62(10)}"
            for i in range(260)
        )
        + "\n[... omitted 1021 of 1284 lines ...]"
    )
    cx.output(c4, "1284 var/settlements.csv\n" + big)
    cx.reasoning(
        "Planning the change",
        "The CSV dump was a mistake (large). Plan: load succeeded refunds for the invoices in the window, compare settled with total - refunds, print refunded-but-consistent rows under a separate heading, keep exit code semantics.",
    )
    cx.say(
        "Plan: (1) sum succeeded refunds per invoice with `refunds_for`, (2) compare the settlement with total − refunds, (3) report refunded invoices separately, (4) tests for refunded, short-settled and pending rows."
    )
    cx.tokens(38_600, 141, 96)
    cx.reasoning(
        "Editing reconcile",
        "Use apply_patch to thread a refunds mapping into reconcile(); keep parse_amount and to_cents for comparisons.",
    )
    patch = (
        "*** Begin Patch\n*** Update File: src/app/cli.py\n@@\n-def reconcile(path: Path, since: date, dry_run: bool) -> int:\n"
        "+def reconcile(path: Path, since: date, dry_run: bool, refunds: Mapping[str, Decimal] | None = None) -> int:\n"
        "+    refunds = refunds or {}\n     mismatches = 0\n     pending = 0\n+    refunded: list[str] = []\n@@\n"
        '-            if to_cents(expected, row["currency"]) != to_cents(settled, row["currency"]):\n'
        '+            refunded_amount = refunds.get(row["invoice"], ZERO)\n'
        '+            if to_cents(expected - refunded_amount, row["currency"]) != to_cents(settled, row["currency"]):\n'
        "                 mismatches += 1\n"
        "+            elif refunded_amount:\n"
        "+                refunded.append(f\"{row['invoice']}: {format_money(expected, row['currency'])} - refunds {format_money(refunded_amount, row['currency'])} = settled {format_money(settled, row['currency'])}\")\n"
        "*** End Patch\n"
    )
    p1 = ids.call()
    cx.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": p1,
            "name": "apply_patch",
            "input": patch,
        }
    )
    cx.tokens(3_220, 612, 320)
    cx.output(p1, "Success. Updated the following files:\nM src/app/cli.py\n", custom=True)
    cx.reasoning(
        "Wiring the CLI",
        "main() must load refunds from the DB for the invoices in the file; add a helper that opens a session only when not in --no-db mode.",
    )
    patch2 = (
        "*** Begin Patch\n*** Update File: src/app/cli.py\n@@\n-    return reconcile(args.file, args.since, args.dry_run)\n"
        "+    with session_scope() as session:\n"
        "+        numbers = invoice_numbers_in(args.file, args.since)\n"
        "+        refunds = {n: sum((r.amount for r in rows), ZERO) for n, rows in refunds_for(session, numbers).items()}\n"
        "+    return reconcile(args.file, args.since, args.dry_run, refunds)\n*** End Patch\n"
    )
    p2 = ids.call()
    cx.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": p2,
            "name": "apply_patch",
            "input": patch2,
        }
    )
    cx.tokens(1_450, 402, 210)
    cx.output(p2, "Success. Updated the following files:\nM src/app/cli.py\n", custom=True)
    cx.reasoning(
        "Adding tests",
        "New test file covering: refunded invoice is not a mismatch and is listed; short settlement still a mismatch; pending row skipped.",
    )
    tests = (
        "*** Begin Patch\n*** Add File: tests/test_cli_refunds.py\n+from datetime import date\n+from decimal import Decimal\n+\n+from app.cli import reconcile\n+\n"
        '+CSV = """date,invoice,currency,invoice_total,settled_amount,processor_ref\n+2025-09-09,INV-1,EUR,88.00,80.00,pi_1\n'
        '+2025-09-10,INV-2,USD,412.50,412.05,pi_2\n+2025-09-11,INV-3,USD,10.00,,\n+"""\n+\n+\n'
        '+def test_refunds_are_not_mismatches(tmp_path, capsys):\n+    path = tmp_path / "s.csv"\n+    path.write_text(CSV)\n'
        '+    code = reconcile(path, date(2025, 9, 1), dry_run=False, refunds={"INV-1": Decimal("8.00")})\n'
        "+    out = capsys.readouterr().out\n+    assert code == 1  # INV-2 is still short\n"
        '+    assert "INV-1: €88.00 - refunds €8.00 = settled €80.00" in out\n+    assert "1 mismatch(es), 1 pending, 1 refunded" in out\n*** End Patch\n'
    )
    p3 = ids.call()
    cx.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": p3,
            "name": "apply_patch",
            "input": tests,
        }
    )
    cx.tokens(1_780, 530, 256)
    cx.output(
        p3, "Success. Updated the following files:\nA tests/test_cli_refunds.py\n", custom=True
    )
    c5 = cx.shell(
        "python -m pytest -q tests/test_cli_refunds.py tests/test_cli.py tests/test_cli_pending.py"
    )
    cx.tokens(1_310, 44, 16)
    cx.output(
        c5,
        "F......                                                                  [100%]\n=================================== FAILURES ===================================\n"
        "_______________________ test_refunds_are_not_mismatches ________________________\n...\n"
        "E       AssertionError: assert '1 mismatch(es), 1 pending, 1 refunded' in 'INV-2: expected $412.50, settled $412.05\\nINV-1: €88.00 - refunds €8.00 = settled €80.00\\n1 mismatch(es), 1 pending\\n'\n\n"
        "tests/test_cli_refunds.py:22: AssertionError\n=========================== short test summary info ============================\n"
        "FAILED tests/test_cli_refunds.py::test_refunds_are_not_mismatches - AssertionError: assert '1 mismatch(es), 1 pending, 1 refunded' in ...\n1 failed, 6 passed in 0.33s",
        1,
    )
    cx.reasoning(
        "Fixing the summary line", "The summary print still lacks the refunded count. Update it."
    )
    p4 = ids.call()
    cx.item(
        {
            "type": "custom_tool_call",
            "status": "completed",
            "call_id": p4,
            "name": "apply_patch",
            "input": "*** Begin Patch\n*** Update File: src/app/cli.py\n@@\n-    print(f\"{mismatches} mismatch(es), {pending} pending{' (dry run)' if dry_run else ''}\")\n"
            "+    for line in refunded:\n+        print(line)\n"
            "+    print(f\"{mismatches} mismatch(es), {pending} pending, {len(refunded)} refunded{' (dry run)' if dry_run else ''}\")\n*** End Patch\n",
        }
    )
    cx.tokens(1_190, 210, 140)
    cx.output(p4, "Success. Updated the following files:\nM src/app/cli.py\n", custom=True)
    c6 = cx.shell(
        "python -m pytest -q tests/test_cli_refunds.py tests/test_cli.py tests/test_cli_pending.py"
    )
    c7 = cx.shell(
        "ruff check src/app/cli.py tests/test_cli_refunds.py && mypy --strict src/app/cli.py"
    )
    cx.tokens(960, 72, 24)
    cx.output(
        c6,
        ".......                                                                  [100%]\n7 passed in 0.29s",
    )
    cx.output(c7, "All checks passed!\nSuccess: no issues found in 1 source file")
    c8 = cx.shell("python -m pytest -vv -p no:randomly 2>&1 | tail -n 400", timeout_ms=600_000)
    cx.tokens(880, 60, 20)
    tail_log = "\n".join(
        f"tests/billing/test_tax_matrix.py::test_rate_table[US-{st}-{code}] PASSED{'':<20} [{40 + i // 8:>3}%]"
        for i, (st, code) in enumerate(
            (s, c)
            for s in [
                "AL",
                "AZ",
                "AR",
                "CA",
                "CO",
                "CT",
                "FL",
                "GA",
                "HI",
                "ID",
                "IL",
                "IN",
                "IA",
                "KS",
                "KY",
                "LA",
                "ME",
                "MD",
                "MA",
                "MI",
            ]
            for c in ("standard", "digital")
        )
    )
    cx.output(c8, tail_log + "\n" + "=" * 30 + " 366 passed, 2 skipped in 11.02s " + "=" * 30)
    cx.compacted(
        "Task: fix #433 — reconcile must compare settlements with invoice total minus succeeded refunds and list refunded "
        "invoices separately.\nDone: src/app/cli.py reconcile(path, since, dry_run, refunds) subtracts refunds before the "
        "to_cents comparison, collects refunded-but-consistent rows and prints them, summary line now "
        "'N mismatch(es), N pending, N refunded'; main() loads succeeded refunds via app.billing.refunds.refunds_for. "
        "New tests/test_cli_refunds.py. Targeted tests, ruff and mypy pass; full suite 366 passed, 2 skipped.\n"
        "Note: `cat var/settlements.csv` dumped a 1,284-line file into context; avoid that.\n"
        "Next: check the nightly systemd unit passes no extra flags; write the final summary."
    )
    cx.prompt = 9_210 + len(CODEX_INSTRUCTIONS) // 4
    cx.emit("turn_context", turn)
    cx.user("Does the systemd unit need changing? It runs on billing-worker-2.")
    cx.reasoning(
        "Checking deployment config",
        "The unit file lives in deploy/; check ExecStart for flags and whether the worker has DB access for refunds.",
    )
    c9 = ids.call()
    cx.item(
        {
            "type": "local_shell_call",
            "call_id": c9,
            "status": "completed",
            "action": {
                "type": "exec",
                "command": ["bash", "-lc", "cat deploy/systemd/ledgerline-reconcile.service"],
                "timeout_ms": 10_000,
                "working_directory": CWD,
                "env": None,
                "user": None,
            },
        }
    )
    cx.tokens(0, 66, 30)
    cx.output(
        c9,
        "[Unit]\nDescription=Nightly settlement reconciliation\nAfter=network-online.target\n\n[Service]\nType=oneshot\nUser=ledgerline\n"
        "WorkingDirectory=/srv/ledgerline\nEnvironmentFile=/etc/ledgerline/env\nExecStart=/srv/ledgerline/.venv/bin/python -m app.cli reconcile --since ${RECONCILE_SINCE}\n",
    )
    cx.reasoning(
        "Answering",
        "No flag changes; the worker already has DATABASE_URL via /etc/ledgerline/env, which refunds_for needs.",
    )
    cx.say(
        "No change needed. The unit runs `python -m app.cli reconcile --since ${RECONCILE_SINCE}` with `/etc/ledgerline/env`, "
        "which already provides `DATABASE_URL`, so the new refund lookup works there. Summary of the change:\n"
        "- `src/app/cli.py`: `reconcile()` subtracts succeeded refunds before comparing (in minor units), lists refunded "
        "invoices separately, and the summary line is now `N mismatch(es), N pending, N refunded`; `main()` loads refunds via "
        "`refunds_for`.\n- `tests/test_cli_refunds.py`: refunded vs short-settled vs pending.\n"
        "- Verified: targeted tests, ruff, mypy, and the full suite (366 passed, 2 skipped). Not committed."
    )
    cx.tokens(2_940, 318, 144)
    cx.emit(
        "event_msg",
        {"type": "task_complete", "last_agent_message": "No change needed. The unit runs ..."},
    )

    write_text(
        out_dir / "codex-rollout.jsonl", "\n".join(dumps_compact(line) for line in cx.lines) + "\n"
    )
    return {
        "format": "codex",
        "rule": "Only response_item lines (and the compacted line) become messages. Each `message` item is one message with "
        "its role (the AGENTS.md <user_instructions> and <environment_context> user messages count, flagged injected). A run "
        "of consecutive call items (function_call, custom_tool_call, local_shell_call) with only reasoning items between "
        "them is ONE assistant message with one tool call per item; each function_call_output / custom_tool_call_output is "
        "one tool message. Reasoning items are not messages (their summary attaches to the next assistant message). The "
        "`compacted` line is one user summary message at its position; trigger is unknown (not recorded) and pre_tokens is "
        "last_token_usage.input_tokens of the last token_count before it. event_msg duplicates (user_message, "
        "agent_message, agent_reasoning) are not messages. session_meta.instructions is the system prompt.",
        "messages": len(cx.roles),
        "roles": role_counts(cx.roles),
        "tool_calls": cx.tool_calls,
        "tool_results": cx.roles.count("tool"),
        "compactions": cx.compactions,
        "images": 0,
        "model": "gpt-5-codex",
        "context_window": 272_000,
        "session_id": session,
        "lines": len(cx.lines),
        "injected_user_messages": cx.injected,
        "usage_events": len(cx.usage_events),
        "prompt_tokens": {
            "first": cx.usage_events[0],
            "peak": max(cx.usage_events),
            "last": cx.usage_events[-1],
        },
    }


# ============================================================================== ShareGPT


SHAREGPT_TOOLS = [
    _tool_by_name("terminal")["function"],
    _tool_by_name("read_file")["function"],
    _tool_by_name("patch")["function"],
    _tool_by_name("search_files")["function"],
]


def _sharegpt_system() -> str:
    return (
        "You are a function-calling AI agent working in a software repository. Function signatures are given inside "
        "<tools></tools> XML tags. Call a function by writing a JSON object with `name` and `arguments` inside "
        "<tool_call></tool_call> tags; you may make several calls in one turn. Results come back inside "
        "<tool_response></tool_response> tags. Think step by step inside <think></think> before acting, and do not "
        "guess file contents.\n<tools>\n"
        + json.dumps(SHAREGPT_TOOLS, ensure_ascii=False)
        + "\n</tools>"
    )


class ShareGPTLog:
    def __init__(self, ids: Ids) -> None:
        self.ids = ids
        self.turns: list[dict[str, str]] = [{"from": "system", "value": _sharegpt_system()}]
        self.roles: list[str] = ["system"]
        self.tool_calls = 0
        self.compactions: list[dict[str, Any]] = []
        self.pending: list[tuple[str, str]] = []

    def human(self, text: str) -> None:
        if text.startswith(LEGACY_SUMMARY_PREFIX):
            self.compactions.append(
                {"index": len(self.roles), "trigger": "unknown", "pre_tokens": None}
            )
        self.turns.append({"from": "human", "value": text})
        self.roles.append("user")

    def gpt(self, think: str | None, text: str, *calls: tuple[str, dict[str, Any], Any]) -> None:
        parts = []
        if think:
            parts.append(f"<think>\n{think}\n</think>")
        if text:
            parts.append(text)
        for name, args, result in calls:
            parts.append(
                "<tool_call>\n"
                + json.dumps({"name": name, "arguments": args}, ensure_ascii=False)
                + "\n</tool_call>"
            )
            self.pending.append((name, result))
        self.turns.append({"from": "gpt", "value": "\n".join(parts)})
        self.roles.append("assistant")
        self.tool_calls += len(calls)
        if self.pending:
            blocks = []
            for name, result in self.pending:
                body = {"tool_call_id": self.ids.call(), "name": name, "content": result}
                blocks.append(
                    "<tool_response>\n"
                    + json.dumps(body, ensure_ascii=False)
                    + "\n</tool_response>"
                )
                self.roles.append("tool")
            self.turns.append({"from": "tool", "value": "\n".join(blocks)})
            self.pending = []

    def entry(self, prompt_index: int, model: str, stamp: str) -> dict[str, Any]:
        return {
            "prompt_index": prompt_index,
            "conversations": self.turns,
            "tools": json.dumps(SHAREGPT_TOOLS, ensure_ascii=False),
            "model": model,
            "timestamp": stamp,
            "completed": True,
            "partial": False,
            "api_calls": self.roles.count("assistant"),
            "toolsets_used": ["terminal", "file"],
        }

    def manifest(self) -> dict[str, Any]:
        return {
            "messages": len(self.roles),
            "raw_turns": len(self.turns),
            "roles": role_counts(self.roles),
            "tool_calls": self.tool_calls,
            "tool_results": self.roles.count("tool"),
            "compactions": self.compactions,
            "images": 0,
        }


def _term_result(out: str, code: int = 0) -> dict[str, Any]:
    return {"output": out, "exit_code": code, "error": None}


def build_sharegpt(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("sharegpt")
    ids = Ids(rng)
    entries: list[dict[str, Any]] = []
    per: list[dict[str, Any]] = []

    # 1: the tax default-rate bug, straight through
    repo = Repo(PROJECT_FILES)
    t = ShareGPTLog(ids)
    t.human(
        "tests/billing/test_tax.py::test_state_rate_rounds_half_up fails for US-CA (0.72 instead of 0.73). Find the cause and fix it."
    )
    t.gpt(
        "Start by running the failing test to see the exact values.",
        "",
        (
            "terminal",
            {"command": "python -m pytest -q tests/billing/test_tax.py -k rounds_half_up"},
            _term_result(
                "FF                                                                       [100%]\nFAILED tests/billing/test_tax.py::test_state_rate_rounds_half_up[US-CA] - AssertionError: assert Decimal('0.72') == Decimal('0.73')\n"
                "FAILED tests/billing/test_tax.py::test_state_rate_rounds_half_up[US-NY] - AssertionError: assert Decimal('1.77') == Decimal('1.78')\n2 failed, 27 deselected in 0.21s",
                1,
            ),
        ),
    )
    t.gpt(
        "The rate repr in the full output was 0.07249999..., which is float noise. Read the calculator and the settings.",
        "Reading the tax calculator and settings.",
        (
            "read_file",
            {"path": "src/app/billing/tax.py", "offset": 36, "limit": 8},
            {"content": repo.numbered("src/app/billing/tax.py", 36, 8)},
        ),
        (
            "read_file",
            {"path": "src/app/config.py", "offset": 12, "limit": 10},
            {"content": repo.numbered("src/app/config.py", 12, 10)},
        ),
    )
    t.gpt(
        "default_tax_rate is a float and rate_for wraps it in Decimal(), capturing the binary approximation. Type the setting as Decimal so pydantic parses '0.0725' exactly.",
        "`Settings.default_tax_rate` is a float, so `Decimal(0.0725)` is 0.07249999…; typing the setting as Decimal fixes it at the source.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/config.py",
                "old_string": "    default_tax_rate: float = Field(0.0, ge=0, le=0.3)",
                "new_string": '    default_tax_rate: Decimal = Field(Decimal("0"), ge=0, le=Decimal("0.3"))',
            },
            {
                "success": True,
                "diff": repo.patch(
                    "src/app/config.py",
                    "    default_tax_rate: float = Field(0.0, ge=0, le=0.3)",
                    '    default_tax_rate: Decimal = Field(Decimal("0"), ge=0, le=Decimal("0.3"))',
                ),
            },
        ),
    )
    t.gpt(
        None,
        "",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/config.py",
                "old_string": "from functools import lru_cache\n",
                "new_string": "from decimal import Decimal\nfrom functools import lru_cache\n",
            },
            {
                "success": True,
                "diff": repo.patch(
                    "src/app/config.py",
                    "from functools import lru_cache\n",
                    "from decimal import Decimal\nfrom functools import lru_cache\n",
                ),
            },
        ),
    )
    t.gpt(
        None,
        "",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/billing/tax.py",
                "old_string": "        return Decimal(self._settings.default_tax_rate)",
                "new_string": "        return self._settings.default_tax_rate",
            },
            {
                "success": True,
                "diff": repo.patch(
                    "src/app/billing/tax.py",
                    "        return Decimal(self._settings.default_tax_rate)",
                    "        return self._settings.default_tax_rate",
                ),
            },
        ),
    )
    t.gpt(
        None,
        "",
        (
            "terminal",
            {
                "command": "python -m pytest -q tests/billing/test_tax.py tests/billing/test_tax_matrix.py"
            },
            _term_result(
                "." * 72 + " [ 55%]\n" + "." * 58 + "              [100%]\n130 passed in 0.62s"
            ),
        ),
    )
    t.gpt(
        None,
        "Fixed. `default_tax_rate` was a float setting; `Decimal(float)` kept the binary error (0.0724999…), so 10.00 × rate rounded to 0.72. The setting is now a Decimal parsed exactly from the environment, and `rate_for` returns it unchanged. All 130 tax tests pass.",
    )
    entries.append(t.entry(0, "anthropic/claude-sonnet-4", "2025-09-15T14:52:10.418822"))
    per.append(t.manifest())

    # 2: a --json flag for reconcile, with parallel calls
    t = ShareGPTLog(ids)
    t.human(
        "Add a --json flag to `python -m app.cli reconcile` that prints a JSON object {mismatches: [...], pending: N} instead of text, so the finance dashboard can consume it."
    )
    t.gpt(
        "Look at the CLI and its tests together.",
        "Reading the CLI and its tests.",
        (
            "read_file",
            {"path": "src/app/cli.py"},
            {"content": Repo(PROJECT_FILES).numbered("src/app/cli.py")},
        ),
        (
            "search_files",
            {"pattern": "def test_", "path": "tests/test_cli.py"},
            {
                "total_count": 3,
                "matches": [
                    {
                        "path": "tests/test_cli.py",
                        "line": 12,
                        "content": "def test_reconcile_reports_mismatch(tmp_path, capsys):",
                    },
                    {
                        "path": "tests/test_cli.py",
                        "line": 24,
                        "content": "def test_reconcile_dry_run_exit_code(tmp_path):",
                    },
                    {
                        "path": "tests/test_cli.py",
                        "line": 33,
                        "content": "def test_reconcile_since_filter(tmp_path, capsys):",
                    },
                ],
            },
        ),
    )
    t.gpt(
        "reconcile prints as it goes. Collect mismatches into a list, then render text or JSON at the end. Amounts as strings to keep Decimal exactness.",
        "I'll collect results first and render at the end, with amounts as strings in JSON.",
        (
            "patch",
            {
                "mode": "patch",
                "patch": "--- a/src/app/cli.py\n+++ b/src/app/cli.py\n@@ -12,16 +12,27 @@\n-def reconcile(path: Path, since: date, dry_run: bool) -> int:\n-    mismatches = 0\n+def reconcile(path: Path, since: date, dry_run: bool, as_json: bool = False) -> int:\n+    mismatches: list[dict[str, str]] = []\n+    pending = 0\n",
            },
            {"success": True, "files_modified": ["src/app/cli.py"]},
        ),
    )
    t.gpt(
        None,
        "",
        (
            "terminal",
            {"command": "python -m app.cli reconcile --dry-run --json | python -m json.tool"},
            _term_result(
                '{\n    "mismatches": [\n        {\n            "invoice": "INV-2025-0107",\n            "currency": "USD",\n            "expected": "412.50",\n            "settled": "412.05"\n        }\n    ],\n    "pending": 1,\n    "dry_run": true\n}'
            ),
        ),
    )
    t.gpt(
        "Add tests for JSON output and make sure the text output is unchanged.",
        "Adding a test for the JSON output.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "tests/test_cli.py",
                "old_string": "def test_reconcile_since_filter(tmp_path, capsys):",
                "new_string": 'def test_reconcile_json_output(tmp_path, capsys):\n    path = _csv(tmp_path, ROWS)\n    assert reconcile(path, date(2025, 9, 1), dry_run=True, as_json=True) == 0\n    data = json.loads(capsys.readouterr().out)\n    assert data["mismatches"][0]["settled"] == "412.05"\n    assert data["pending"] == 1\n\n\ndef test_reconcile_since_filter(tmp_path, capsys):',
            },
            {"success": True, "files_modified": ["tests/test_cli.py"]},
        ),
    )
    t.gpt(
        None,
        "",
        (
            "terminal",
            {"command": "python -m pytest -q tests/test_cli.py"},
            _term_result(
                "....                                                                     [100%]\n4 passed in 0.19s"
            ),
        ),
        (
            "terminal",
            {"command": "ruff check src/app/cli.py tests/test_cli.py"},
            _term_result("All checks passed!"),
        ),
    )
    t.gpt(
        None,
        'Added `--json`: reconcile now collects results and prints either the existing text or a JSON object `{"mismatches": [{invoice, currency, expected, settled}], "pending": N, "dry_run": bool}` with amounts as strings. Exit codes are unchanged. New test covers the JSON shape; tests and lint pass.',
    )
    entries.append(t.entry(1, "anthropic/claude-sonnet-4", "2025-09-16T16:20:44.001273"))
    per.append(t.manifest())

    # 3: compacted: webhook JPY bug, resumed after a legacy summary
    t = ShareGPTLog(ids)
    t.human(
        "Payments for yen invoices never mark the invoice paid. Webhook handler is src/app/payments/webhooks.py. Fix it with a test."
    )
    t.gpt(
        "Reproduce first.",
        "",
        (
            "terminal",
            {"command": "python -m pytest -q tests/payments/test_webhooks.py"},
            _term_result(
                "....F.F........                                                          [100%]\nFAILED tests/payments/test_webhooks.py::test_payment_succeeded_marks_invoice_paid[JPY] - AssertionError: assert <InvoiceStatus.OPEN: 'open'> is <InvoiceStatus.PAID: 'paid'>\n"
                "FAILED tests/payments/test_webhooks.py::test_partial_payment_keeps_invoice_open[JPY] - AssertionError: assert Decimal('9465') == (Decimal('9515') - Decimal('5000'))\n2 failed, 13 passed in 0.44s",
                1,
            ),
        ),
    )
    t.human(
        f"{LEGACY_SUMMARY_PREFIX} Earlier turns were summarized. The handler converts `amount_received / 100` for every "
        "currency, so a ¥9,515 payment is recorded as ¥95.15 and the invoice stays open. You read webhooks.py (the "
        "conversion is in handle_event) and money.py (from_cents(minor, currency) handles the exponent). Remaining: "
        "patch handle_event to use from_cents with the event currency, drop the float, run tests/payments."
    )
    wh = Repo({"src/app/payments/webhooks.py": PROJECT_FILES["src/app/payments/webhooks.py"]})
    t.gpt(
        "Apply the fix described in the summary.",
        "Switching the conversion to `from_cents`.",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/payments/webhooks.py",
                "old_string": '        received = obj["amount_received"] / 100\n',
                "new_string": '        received = from_cents(obj["amount_received"], obj["currency"].upper())\n',
            },
            {
                "success": True,
                "diff": wh.patch(
                    "src/app/payments/webhooks.py",
                    '        received = obj["amount_received"] / 100\n',
                    '        received = from_cents(obj["amount_received"], obj["currency"].upper())\n',
                ),
            },
        ),
    )
    t.gpt(
        None,
        "",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/payments/webhooks.py",
                "old_string": "        invoices.record_payment(invoice_id, Decimal(received))\n",
                "new_string": "        invoices.record_payment(invoice_id, received)\n",
            },
            {
                "success": True,
                "diff": wh.patch(
                    "src/app/payments/webhooks.py",
                    "        invoices.record_payment(invoice_id, Decimal(received))\n",
                    "        invoices.record_payment(invoice_id, received)\n",
                ),
            },
        ),
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/payments/webhooks.py",
                "old_string": "from app.billing.invoice import InvoiceService, InvoiceStatus\n",
                "new_string": "from app.billing.invoice import InvoiceService, InvoiceStatus\nfrom app.utils.money import from_cents\n",
            },
            {
                "success": True,
                "diff": wh.patch(
                    "src/app/payments/webhooks.py",
                    "from app.billing.invoice import InvoiceService, InvoiceStatus\n",
                    "from app.billing.invoice import InvoiceService, InvoiceStatus\nfrom app.utils.money import from_cents\n",
                ),
            },
        ),
    )
    t.gpt(
        None,
        "",
        (
            "terminal",
            {"command": "python -m pytest -q tests/payments && ruff check src/app/payments"},
            _term_result(
                "src/app/payments/webhooks.py:9:21: F401 [*] `decimal.Decimal` imported but unused\nFound 1 error.\n[*] 1 fixable with the `--fix` option.\n"
                + "." * 41
                + "                               [100%]\n41 passed in 0.87s",
                1,
            ),
        ),
    )
    t.gpt(
        "Tests pass; ruff flags the now-unused Decimal import.",
        "",
        (
            "patch",
            {
                "mode": "replace",
                "path": "src/app/payments/webhooks.py",
                "old_string": "from decimal import Decimal\n",
                "new_string": "",
            },
            {
                "success": True,
                "diff": wh.patch(
                    "src/app/payments/webhooks.py", "from decimal import Decimal\n", ""
                ),
            },
        ),
    )
    t.gpt(
        None,
        "",
        (
            "terminal",
            {"command": "ruff check src/app/payments && python -m pytest -q tests/payments"},
            _term_result(
                "All checks passed!\n"
                + "." * 41
                + "                               [100%]\n41 passed in 0.85s"
            ),
        ),
    )
    t.gpt(
        None,
        "Fixed: `handle_event` divided `amount_received` by 100 for every currency, so yen payments were recorded at 1/100 of their value. It now uses `from_cents(amount, currency)`, which respects zero-decimal currencies, and passes the Decimal straight to `record_payment`. The JPY webhook tests pass (41/41 in tests/payments) and lint is clean.",
    )
    entries.append(t.entry(2, "anthropic/claude-sonnet-4", "2025-09-16T18:03:27.770104"))
    per.append(t.manifest())

    write_text(out_dir / "sharegpt.jsonl", "\n".join(dumps_compact(e) for e in entries) + "\n")
    return {
        "format": "sharegpt",
        "rule": "One trajectory per line; top-level counts are for the first line (what a reader loads by default), "
        "`trajectories` has every line. from system/human/gpt/tool map to system/user/assistant/tool. Each <tool_call> "
        "block in a gpt turn is one tool call; each <tool_response> block in a tool turn is one tool message (a tool "
        "turn holding two responses gives two tool messages). <think> stays inside its assistant message. A human turn "
        "starting with [CONTEXT SUMMARY]: is a compaction summary (trigger unknown).",
        **per[0],
        "model": "anthropic/claude-sonnet-4",
        "trajectories": per,
    }


# ============================================================================= SWE-agent


def build_swe_agent(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("swe-agent")
    ids = Ids(rng)
    history: list[dict[str, Any]] = []
    steps: list[dict[str, Any]] = []
    calls = 0
    system = (
        "SETTING: You are an autonomous programmer, and you're working directly in the command line with a special "
        "interface.\n\nThe special interface consists of a file editor that shows you 100 lines of a file at a time. "
        "In addition to typical bash commands, you can also use the following commands to help you navigate and edit "
        "files.\n\nCOMMANDS:\nopen <path> [<line_number>] - opens the file at the given path in the editor\n"
        "goto <line_number> - moves the window to show <line_number>\nsearch_dir <search_term> [<dir>] - searches for "
        "search_term in all files in dir\nedit <start_line>:<end_line>\n<replacement_text>\nend_of_edit - replaces "
        "lines start through end (inclusive) with the given text\nsubmit - submits your current code\n\nPlease note "
        "that THE EDIT COMMAND REQUIRES PROPER INDENTATION. Your shell prompt is formatted as follows:\n"
        "(Open file: <path>) <cwd> $\n\nYou need to format your output using two fields: discussion and command."
    )
    history.append(
        {"role": "system", "content": system, "agent": "main", "message_type": "system_prompt"}
    )

    def add(msg: dict[str, Any]) -> None:
        history.append({**msg, "agent": "main"})

    # demonstration (thought/action style, observations as user messages)
    add(
        {
            "role": "user",
            "content": "Here is a demonstration of how to correctly accomplish this task. It is included to show you how to correctly use the interface. You do not need to follow exactly what is done in the demonstration.\n--- DEMONSTRATION ---\nWe're currently solving the following issue within our repository: TimeDelta serialization precision loses a millisecond.",
            "message_type": "demonstration",
            "is_demo": True,
        }
    )
    add(
        {
            "role": "assistant",
            "content": "Let's first reproduce the issue with a small script.\n```\ncreate reproduce.py\n```",
            "thought": "Let's first reproduce the issue with a small script.",
            "action": "create reproduce.py",
            "message_type": "action",
            "is_demo": True,
        }
    )
    add(
        {
            "role": "user",
            "content": "[File: /marshmallow-code__marshmallow/reproduce.py (1 lines total)]\n1:\n(Open file: /marshmallow-code__marshmallow/reproduce.py)\n(Current directory: /marshmallow-code__marshmallow)\nbash-$",
            "message_type": "observation",
            "is_demo": True,
        }
    )
    add(
        {
            "role": "assistant",
            "content": 'Now search for the serialization code.\n```\nsearch_dir "def _serialize" src/marshmallow\n```',
            "thought": "Now search for the serialization code.",
            "action": 'search_dir "def _serialize" src/marshmallow',
            "message_type": "action",
            "is_demo": True,
        }
    )
    add(
        {
            "role": "user",
            "content": 'Found 12 matches for "def _serialize" in /marshmallow-code__marshmallow/src/marshmallow:\n/marshmallow-code__marshmallow/src/marshmallow/fields.py (12 matches)\nEnd of matches for "def _serialize" in /marshmallow-code__marshmallow/src/marshmallow\n(Open file: /marshmallow-code__marshmallow/reproduce.py)\n(Current directory: /marshmallow-code__marshmallow)\nbash-$',
            "message_type": "observation",
            "is_demo": True,
        }
    )
    add(
        {
            "role": "user",
            "content": "--- END OF DEMONSTRATION ---",
            "message_type": "demonstration",
            "is_demo": True,
        }
    )

    issue = (
        "<uploaded_files>\n/testbed\n</uploaded_files>\nI've uploaded a python code repository in the directory /testbed. Consider the following issue:\n\n"
        "<issue_description>\nCSV export shows yen totals with two decimals\n\nGET /v1/invoices/export.csv?month=2025-09 returns `9515.00` for JPY invoices; "
        "yen has no minor unit, finance's import rejects the file. USD rows are fine. Expected `9515`.\n</issue_description>\n\n"
        "Can you help me implement the necessary changes to the repository so that the requirements specified in the issue are met?"
    )
    add(
        {
            "role": "user",
            "content": [{"type": "text", "text": issue}],
            "message_type": "observation",
        }
    )

    obs: list[tuple[str, str, str, str]] = [
        (
            "Let me find where the export writes amounts.",
            'grep -n "writerow" -n /testbed/src/app/api/routes_invoices.py',
            '42:    writer.writerow(["number", "customer", "currency", "subtotal", "tax", "total", "status"])\n47:        writer.writerow([inv.number, inv.customer_id, inv.currency, totals.subtotal, totals.tax_total, totals.total, inv.status])',
            "routes_invoices.py",
        ),
        (
            "The totals are Decimals written with str(). For JPY, `compute_totals` quantizes per currency, so they should already have no decimals — unless the repository returns Numeric(12, 2) values with two places. Let me check how the export loads invoices.",
            'grep -n "def for_month" -A 12 /testbed/src/app/billing/invoice.py',
            "211:    def for_month(self, month: str) -> Iterator[tuple[Invoice, Totals]]:\n212:        for inv in self._repo.in_month(month):\n213:            yield inv, self._cached_totals.get(inv.id) or compute_totals(inv, self._tax)\n",
            "invoice.py",
        ),
        (
            "Cached totals come from the database as Numeric(12, 2), which keeps two decimals even for JPY. The cleanest fix is formatting at the CSV boundary with the currency's exponent. Let me reproduce first.",
            "cd /testbed && python -c \"from decimal import Decimal; from app.utils.money import quantize; print(str(Decimal('9515.00')), str(quantize(Decimal('9515.00'), 'JPY')))\"",
            "9515.00 9515",
            "routes_invoices.py",
        ),
        (
            "Confirmed: quantize(…, 'JPY') yields 9515. Now edit the writerow call to quantize each amount with the row's currency.",
            "cd /testbed && sed -i 's/totals.subtotal, totals.tax_total, totals.total, inv.status/*(quantize(x, inv.currency) for x in (totals.subtotal, totals.tax_total, totals.total)), inv.status/' src/app/api/routes_invoices.py && sed -i 's/^from app.billing.invoice import InvoiceError, InvoiceService$/from app.billing.invoice import InvoiceError, InvoiceService\\nfrom app.utils.money import quantize/' src/app/api/routes_invoices.py && git diff",
            "diff --git a/src/app/api/routes_invoices.py b/src/app/api/routes_invoices.py\nindex 5c1a2e0..9be04d7 100644\n--- a/src/app/api/routes_invoices.py\n+++ b/src/app/api/routes_invoices.py\n@@ -11,6 +11,7 @@ from app.api.deps import audit_log, invoice_service\n from app.api.schemas import InvoiceOut\n from app.billing.invoice import InvoiceError, InvoiceService\n+from app.utils.money import quantize\n@@ -44,7 +45,7 @@ def export_csv(month: str, svc: InvoiceService = Depends(invoice_service)) -> StreamingResponse:\n-        writer.writerow([inv.number, inv.customer_id, inv.currency, totals.subtotal, totals.tax_total, totals.total, inv.status])\n+        writer.writerow([inv.number, inv.customer_id, inv.currency, *(quantize(x, inv.currency) for x in (totals.subtotal, totals.tax_total, totals.total)), inv.status])",
            "routes_invoices.py",
        ),
        (
            "Now add a regression test for a JPY row and run the export tests.",
            'cd /testbed && cat >> tests/api/test_routes_invoices.py <<\'EOF\'\n\n\ndef test_export_csv_uses_currency_exponent(client, seeded_invoice):\n    seeded_invoice("JPY", cached_totals=True)\n    rows = client.get("/v1/invoices/export.csv", params={"month": "2025-09"}).text.splitlines()\n    assert any(r.endswith(",8650,865,9515,open") for r in rows)\nEOF\npython -m pytest -q tests/api/test_routes_invoices.py',
            "........................                                                 [100%]\n24 passed in 1.02s",
            "test_routes_invoices.py",
        ),
        (
            "The new test passes along with the existing export tests. The change is minimal; submitting.",
            "submit",
            "diff --git a/src/app/api/routes_invoices.py b/src/app/api/routes_invoices.py\n...\ndiff --git a/tests/api/test_routes_invoices.py b/tests/api/test_routes_invoices.py\n...",
            "",
        ),
    ]
    tokens_sent = 0
    tokens_received = 0
    for thought, action, observation, open_file in obs:
        cid = ids.call()
        add(
            {
                "role": "assistant",
                "content": thought,
                "thought": thought,
                "action": action,
                "tool_calls": [
                    {
                        "function": {"arguments": json.dumps({"command": action}), "name": "bash"},
                        "id": cid,
                        "type": "function",
                    }
                ],
                "message_type": "action",
            }
        )
        calls += 1
        add(
            {
                "role": "tool",
                "content": f"OBSERVATION:\n{observation}",
                "tool_call_ids": [cid],
                "message_type": "observation",
            }
        )
        tokens_sent += 6_200 + sum(len(json.dumps(m)) for m in history) // 4
        tokens_received += len(thought) // 4 + len(action) // 4 + 40
        steps.append(
            {
                "action": action,
                "observation": observation,
                "response": thought,
                "thought": thought,
                "execution_time": round(rng.uniform(0.05, 3.5), 3),
                "state": {
                    "open_file": f"/testbed/src/app/api/{open_file}" if open_file else "n/a",
                    "working_dir": "/testbed",
                },
                "extra_info": {},
            }
        )
    submission = (
        obs[3][2].split("\n", 1)[1]
        + "\ndiff --git a/tests/api/test_routes_invoices.py b/tests/api/test_routes_invoices.py\n"
        "--- a/tests/api/test_routes_invoices.py\n+++ b/tests/api/test_routes_invoices.py\n@@ -212,0 +213,6 @@\n"
        "+\n+\n+def test_export_csv_uses_currency_exponent(client, seeded_invoice):\n"
        '+    seeded_invoice("JPY", cached_totals=True)\n'
        '+    rows = client.get("/v1/invoices/export.csv", params={"month": "2025-09"}).text.splitlines()\n'
        '+    assert any(r.endswith(",8650,865,9515,open") for r in rows)\n'
    )
    doc = {
        "environment": "main",
        "trajectory": steps,
        "history": history,
        "info": {
            "swe_agent_hash": "4d1c39e0a8d2f6b1e57c0f9a3b21d7c6e5f48a90",
            "swe_agent_version": "1.1.0",
            "swe_rex_version": "1.2.0",
            "swe_rex_hash": "unavailable",
            "submission": submission,
            "exit_status": "submitted",
            "edited_files30": "[File: src/app/api/routes_invoices.py]\n[11 lines above omitted]\n    12: from app.billing.invoice import InvoiceError, InvoiceService\n    13: from app.utils.money import quantize\n[33 lines below omitted]",
            "model_stats": {
                "instance_cost": round(tokens_sent * 3e-6 + tokens_received * 15e-6, 4),
                "tokens_sent": tokens_sent,
                "tokens_received": tokens_received,
                "api_calls": len(obs),
            },
        },
        "replay_config": json.dumps(
            {
                "agent": {
                    "model": {
                        "name": "anthropic/claude-sonnet-4-20250514",
                        "per_instance_cost_limit": 3.0,
                    },
                    "type": "default",
                },
                "problem_statement": {"id": "ledgerline__ledgerline-418", "type": "text"},
                "env": {"repo": {"path": "/testbed", "type": "local"}},
            }
        ),
    }
    write_text(out_dir / "swe-agent.traj", json.dumps(doc, ensure_ascii=False, indent=2) + "\n")
    return {
        "format": "swe-agent",
        "rule": "Each entry of `history` is one message, demonstration entries (is_demo) included: demonstration "
        "observations stay user messages. Role tool entries are tool messages (answering tool_call_ids). Tool calls "
        "are the entries of assistant `tool_calls`; outside demonstrations, an assistant `action` without tool_calls "
        "followed by a user observation would be read as a bash call and its result (none here). Usage is aggregate "
        "only (info.model_stats).",
        "messages": len(history),
        "roles": role_counts(m["role"] for m in history),
        "tool_calls": calls,
        "tool_results": sum(1 for m in history if m["role"] == "tool"),
        "compactions": [],
        "images": 0,
        "model": "anthropic/claude-sonnet-4-20250514",
        "trajectory_steps": len(steps),
        "demonstration_messages": sum(1 for m in history if m.get("is_demo")),
        "model_stats": doc["info"]["model_stats"],
    }


# ============================================================ newer agents and datasets
#
# One short task, told once as data and rendered in each agent's own shape: Maya asks to
# stop the invoices CSV export printing yen totals with two decimals. Each step is
# (kind, target, output); the builders map kinds to their agent's tool names and count
# what a faithful reader must produce while they write.

AGENT_ASK = (
    "The invoices CSV export prints JPY totals as 9515.00 and finance's import rejects them. "
    "Yen has no minor unit: make the export use each currency's exponent and add a test."
)
AGENT_STEPS: list[list[str]] = _json("agent_steps.json")
#: Steps before the compaction each sample records.
AGENT_PRE = 3
AGENT_SUMMARY = (
    "Goal: JPY totals in the CSV export must have no decimals. Found: routes_invoices.py:47 writes "
    "str(totals.total); test_export_csv_jpy fails with '9515.00' != '9515'. Next: quantize per currency."
)
AGENT_DONE = (
    "Fixed: the export quantizes each total with its currency's exponent; tests/api passes (24)."
)


def _thought(kind: str, target: str) -> str:
    return {"search": f"Looking for where the export writes rows ({target}).",
            "read": f"Reading {target}.", "shell": f"Running `{target}`.",
            "edit": f"Quantizing the totals in {target}."}[kind]  # fmt: skip


def _agent_manifest(fmt: str, rule: str, roles: list[str], calls: int, compactions: list[dict[str, Any]],
                    model: str, **more: Any) -> dict[str, Any]:  # fmt: skip
    return {
        "format": fmt, "rule": rule, "messages": len(roles), "roles": role_counts(roles),
        "tool_calls": calls, "tool_results": roles.count("tool"), "compactions": compactions,
        "images": 0, "model": model, **more,
    }  # fmt: skip


def build_gemini_cli(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("gemini-cli")
    ids, clock = Ids(rng), Clock(datetime(2025, 9, 19, 9, 12, tzinfo=UTC), rng)
    tools = {"search": ("search_file_content", "pattern"), "read": ("read_file", "absolute_path"),
             "shell": ("run_shell_command", "command"), "edit": ("replace", "file_path")}  # fmt: skip
    sid = ids.uuid()
    lines: list[dict[str, Any]] = [{"sessionId": sid, "projectHash": ids.hex(64), "startTime": clock.z(),
                                    "lastUpdated": clock.z(), "kind": "main"}]  # fmt: skip
    roles, prompt = ["user"], 2_400

    def msg(kind: str, content: Any, **more: Any) -> dict[str, Any]:
        clock.tick()
        return {"id": ids.uuid(), "timestamp": clock.z(), "type": kind, "content": content, **more}

    lines.append(msg("user", [{"text": AGENT_ASK}]))
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        if k == AGENT_PRE:
            lines.append(msg("user", "/compress"))
            roles.append("user")
            lines.append(msg("info", f"Chat history compressed from {prompt:,} to 640 tokens."))
            snapshot = (
                f"<state_snapshot>\n<overall_goal>{AGENT_SUMMARY}</overall_goal>\n</state_snapshot>"
            )
            lines.append({"$set": {"messages": [msg("user", [{"text": snapshot}]),
                                                msg("gemini", [{"text": "Got it. Thanks for the additional context!"}])]}})  # fmt: skip
            compaction = {"index": len(roles), "trigger": "manual", "pre_tokens": prompt}
            roles += ["user", "assistant"]
        name, key = tools[kind]
        call = {"id": f"{name}-{ids.b62(10)}", "name": name, "args": {key: target}, "status": "executing",
                "timestamp": clock.z()}  # fmt: skip
        record = msg("gemini", _thought(kind, target), toolCalls=[call], model="gemini-2.5-pro",
                     thoughts=[{"subject": kind.title(), "description": _thought(kind, target), "timestamp": clock.z()}])  # fmt: skip
        lines.append(record)  # first written while the call runs, then again with its result
        prompt += len(output) // 3 + 180
        done = {**call, "status": "success", "result": [{"functionResponse": {
            "id": call["id"], "name": name, "response": {"output": output}}}]}  # fmt: skip
        lines.append({**record, "toolCalls": [done], "tokens": {
            "input": prompt, "output": 60, "cached": prompt - 400, "thoughts": 24, "tool": 0,
            "total": prompt + 84}})  # fmt: skip
        roles += ["assistant", "tool"]
    lines.append(msg("gemini", AGENT_DONE, model="gemini-2.5-pro"))
    roles.append("assistant")
    stray = msg("user", "also bump the version")
    lines += [stray, {"$rewindTo": stray["id"]}, {"$set": {"lastUpdated": clock.z()}}]
    write_text(
        out_dir / "gemini-cli-session.jsonl", "".join(dumps_compact(r) + "\n" for r in lines)
    )
    return _agent_manifest(
        "gemini-cli",
        "The JSONL log replayed: message records upsert by id (a call written twice is one message), "
        "$set.messages replaces the history, $rewindTo drops that message and later ones. user → user "
        "(/compress is injected), gemini → assistant, each toolCalls result → a tool message after it; "
        "info notes are not messages. The turns a compression replaced stay before its <state_snapshot> "
        "summary, a compaction (manual after /compress, pre_tokens from the info note).",
        roles,
        len(AGENT_STEPS),
        [compaction],
        "gemini-2.5-pro",
    )


def build_cline(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("cline")
    ids = Ids(rng)
    tools = {"search": ("search_files", "regex"), "read": ("read_file", "path"),
             "shell": ("execute_command", "command"), "edit": ("replace_in_file", "path")}  # fmt: skip
    ts = 1_758_272_400_000
    history: list[dict[str, Any]] = [{"role": "user", "ts": ts, "content": [
        {"type": "text", "text": f"<task>\n{AGENT_ASK}\n</task>"},
        {"type": "text", "text": f"<environment_details>\n# Current Working Directory ({CWD}) Files\nsrc/\ntests/\n</environment_details>"}]}]  # fmt: skip
    ui: list[dict[str, Any]] = [{"ts": ts, "type": "say", "say": "text", "text": AGENT_ASK}]
    roles, prompt, condense = ["user"], 11_800, "c" + ids.b62(8)
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        if k == AGENT_PRE:
            for m in history[1:]:
                m["condenseParent"] = condense
            history.append({"role": "user", "ts": ts + 10 * k, "isSummary": True, "condenseId": condense,
                            "content": [{"type": "text", "text": f"## Conversation Summary\n{AGENT_SUMMARY}"}]})  # fmt: skip
            ui.append({"ts": ts + 10 * k, "type": "say", "say": "condense_context", "contextCondense": {
                "cost": 0.0192, "prevContextTokens": prompt, "newContextTokens": 3_150, "summary": AGENT_SUMMARY}})  # fmt: skip
            compaction = {"index": len(roles), "trigger": "unknown", "pre_tokens": prompt}
            roles.append("user")
        name, key = tools[kind]
        tid = ids.toolu()
        prompt += len(output) // 3 + 220
        ui.append({"ts": ts + 10 * k + 1, "type": "say", "say": "api_req_started", "text": dumps_compact(
            {"request": f"[{name}]", "tokensIn": 9, "tokensOut": 70, "cacheWrites": 700, "cacheReads": prompt - 709,
             "cost": 0.006})})  # fmt: skip
        history.append({"role": "assistant", "ts": ts + 10 * k + 2, "content": [
            {"type": "text", "text": _thought(kind, target)},
            {"type": "tool_use", "id": tid, "name": name, "input": {key: target}}]})  # fmt: skip
        history.append({"role": "user", "ts": ts + 10 * k + 3, "content": [
            {"type": "tool_result", "tool_use_id": tid, "content": [{"type": "text", "text": output}]}]})  # fmt: skip
        roles += ["assistant", "tool"]
    history.append(
        {"role": "assistant", "ts": ts + 99, "content": [{"type": "text", "text": AGENT_DONE}]}
    )
    roles.append("assistant")
    task = out_dir / "cline-task"
    task.mkdir(exist_ok=True)
    write_text(
        task / "api_conversation_history.json", json.dumps(history, ensure_ascii=False) + "\n"
    )
    write_text(task / "ui_messages.json", json.dumps(ui, ensure_ascii=False) + "\n")
    meta = {"files_in_context": [{"path": "src/app/api/routes_invoices.py", "record_state": "active",
            "record_source": "read_tool"}], "model_usage": [{"ts": ts, "model_id": "claude-sonnet-4-20250514",
            "model_provider_id": "anthropic", "mode": "act"}]}  # fmt: skip
    write_text(task / "task_metadata.json", json.dumps(meta, ensure_ascii=False, indent=2) + "\n")
    return _agent_manifest(
        "cline",
        "api_conversation_history.json read as Anthropic messages (a user message of only tool_result blocks "
        "is tool messages). Roo's isSummary message is a compaction (trigger unknown, pre_tokens from the "
        "matching condense_context ui message); the turns it replaced keep condenseParent. Usage from each "
        "api_req_started ui message; the model from task_metadata.json.",
        roles,
        len(AGENT_STEPS),
        [compaction],
        "claude-sonnet-4-20250514",
    )


_OPENCODE_SCHEMA = _text("text/opencode_schema.sql")


def build_opencode(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("opencode")
    ids = Ids(rng)
    tools = {"search": ("grep", "pattern"), "read": ("read", "filePath"), "shell": ("bash", "command"),
             "edit": ("edit", "filePath")}  # fmt: skip
    t0, sid, old = 1_758_272_400_000, "ses_" + ids.b62(26), "ses_" + ids.b62(26)
    messages: list[tuple[str, str, int, dict[str, Any]]] = []
    parts: list[tuple[str, str, str, int, dict[str, Any]]] = []

    def message(session: str, data: dict[str, Any], *body: dict[str, Any]) -> None:
        mid, at = "msg_" + f"{len(messages):04d}" + ids.b62(20), t0 + 1000 * len(messages)
        messages.append((mid, session, at, {**data, "time": {"created": at}}))
        for p in body:
            parts.append(("prt_" + f"{len(parts):05d}" + ids.b62(19), mid, session, at, p))

    asst = {"role": "assistant", "modelID": "claude-sonnet-4-5", "providerID": "anthropic", "mode": "build",
            "path": {"cwd": CWD, "root": CWD}, "cost": 0}  # fmt: skip
    message(old, {"role": "user"}, {"type": "text", "text": "what does `make seed` load?"})
    message(sid, {"role": "user"}, {"type": "text", "text": AGENT_ASK})
    roles, prompt = ["user"], 9_600
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        if k == AGENT_PRE:
            message(sid, {"role": "user"}, {"type": "compaction", "auto": False})
            compaction = {"index": len(roles), "trigger": "manual", "pre_tokens": None}
            message(sid, {**asst, "mode": "compaction", "summary": True, "tokens": {
                "input": 40, "output": 180, "reasoning": 0, "cache": {"read": prompt, "write": 0}}},
                {"type": "text", "text": AGENT_SUMMARY})  # fmt: skip
            roles.append("assistant")
        name, key = tools[kind]
        prompt += len(output) // 3 + 200
        state = {"status": "completed", "input": {key: target}, "output": output, "title": target,
                 "metadata": {}, "time": {"start": t0, "end": t0 + 900}}  # fmt: skip
        message(sid, {**asst, "tokens": {"input": 12, "output": 64, "reasoning": 0,
                                         "cache": {"read": prompt, "write": 300}}},
                {"type": "step-start"}, {"type": "text", "text": _thought(kind, target)},
                {"type": "tool", "callID": ids.toolu(), "tool": name, "state": state},
                {"type": "step-finish", "reason": "tool-calls", "cost": 0})  # fmt: skip
        roles += ["assistant", "tool"]
    message(sid, {**asst, "tokens": {"input": 8, "output": 40, "reasoning": 0, "cache": {"read": prompt, "write": 0}}},
            {"type": "text", "text": AGENT_DONE})  # fmt: skip
    roles.append("assistant")
    path = out_dir / "opencode.db"
    path.unlink(missing_ok=True)
    con = sqlite3.connect(path)
    con.executescript(_OPENCODE_SCHEMA)
    con.execute(
        "INSERT INTO session VALUES (?,?,?,?,?,?,?,?)",
        (old, "global", None, CWD, "make seed", "0.15.0", t0, t0 + 500),
    )
    con.execute("INSERT INTO session VALUES (?,?,?,?,?,?,?,?)", (sid, "global", None, CWD, "JPY CSV export", "0.15.0", t0, t0 + 99_000))  # fmt: skip
    con.executemany(
        "INSERT INTO message VALUES (?,?,?,?,?)",
        [(m, s, at, at, dumps_compact(d)) for m, s, at, d in messages],
    )
    con.executemany("INSERT INTO part VALUES (?,?,?,?,?,?)", [(p, m, s, at, at, dumps_compact(d)) for p, m, s, at, d in parts])  # fmt: skip
    con.commit()
    con.execute("VACUUM")
    con.close()
    return _agent_manifest(
        "opencode",
        "opencode.db: the most recently updated session. Each message's parts in id order: a user message's text "
        "parts are one user message (one holding only a compaction part is no message); an assistant message is "
        "one assistant message (text, reasoning, tool calls) then one tool message per completed or failed tool "
        "part. An assistant message with summary: true is a compaction (manual: the compaction part says auto: "
        "false); usage from each assistant message's tokens.",
        roles,
        len(AGENT_STEPS),
        [compaction],
        "claude-sonnet-4-5",
        sessions=2,
    )


def build_aider(out_dir: Path) -> dict[str, Any]:
    out: list[str] = []

    def typed(text: str) -> None:  # Aider's user_input: "#### " per line, "  " line breaks
        out.append("\n#### " + "  \n#### ".join(text.splitlines()) + "  \n")

    def said(*lines: str) -> None:  # tool_output: "> " + text + "  "
        out.extend(f"> {ln}  \n" if ln else ">  \n" for ln in lines)

    banner = ("Aider v0.86.1", "Main model: anthropic/claude-sonnet-4-20250514 with diff edit format",
              "Git repo: .git with 214 files", "Repo-map: using 4096 tokens, auto refresh")  # fmt: skip
    out.append("\n# aider chat started at 2025-09-18 16:40:02\n\n")
    said(*banner)
    typed("which module formats money?")
    out.append("\n`app/utils/money.py` — `format_money` and `quantize`.\n\n")
    said("Tokens: 3.1k sent, 24 received. Cost: $0.0097 message, $0.0097 session.")
    out.append("\n# aider chat started at 2025-09-19 09:12:44\n\n")
    said(*banner)
    roles = ["user"]
    typed("/add src/app/api/routes_invoices.py tests/api/test_routes_invoices.py")
    said(
        "Added src/app/api/routes_invoices.py to the chat",
        "Added tests/api/test_routes_invoices.py to the chat",
    )
    roles += ["user", "user"]
    typed(AGENT_ASK)
    edit = ("I'll quantize each total with its currency's exponent:\n\nsrc/app/api/routes_invoices.py\n```python\n"
            "<<<<<<< SEARCH\n        writer.writerow([inv.number, inv.currency, totals.total])\n=======\n"
            "        writer.writerow([inv.number, inv.currency, quantize(totals.total, inv.currency)])\n"
            ">>>>>>> REPLACE\n```")  # fmt: skip
    out.append(f"\n{edit}\n\n")
    said("Tokens: 8.4k sent, 2.2k cache write, 5.9k cache hit, 196 received. Cost: $0.02 message, $0.03 session.",
         "Applied edit to src/app/api/routes_invoices.py", "Commit 9c41e02 fix: quantize CSV totals per currency")  # fmt: skip
    roles += ["user", "assistant", "tool"]
    typed("/run python -m pytest -q tests/api")
    said(
        *AGENT_STEPS[4][2].splitlines(),
        "Add 0.1k tokens of command output to the chat? (Y)es/(N)o [Yes]: y",
    )
    roles += ["user", "user"]
    typed("/clear")
    roles.append("user")
    compaction = {"index": len(roles), "trigger": "manual", "pre_tokens": None}
    typed("now add a JPY row to the export test")
    out.append(
        "\nAdded `test_export_csv_jpy_has_no_decimals` to tests/api/test_routes_invoices.py.\n\n"
    )
    roles += ["user", "assistant"]
    write_text(out_dir / "aider-chat-history.md", "".join(out))
    return _agent_manifest(
        "aider",
        "The last '# aider chat started' run. '#### ' lines are one user message (a /command is injected); reply "
        "prose is one assistant message; a block of '> ' lines after a reply is the tool result of a synthetic "
        "aider call, elsewhere injected context. /clear is a compaction (manual, no summary) at the next message.",
        roles,
        1,
        [compaction],
        "anthropic/claude-sonnet-4-20250514",
        runs=2,
    )


_GLAIVE_TOOLS = _json("glaive_tools.json")
_GLAIVE_ROWS = _json("glaive_rows.json")


def build_glaive(out_dir: Path) -> dict[str, Any]:
    lines = []
    for ask, name, args, result, answer in _GLAIVE_ROWS:
        lines.append({"conversations": [
            {"from": "human", "value": ask},
            {"from": "function_call", "value": json.dumps({"name": name, "arguments": args})},
            {"from": "observation", "value": json.dumps(result)},
            {"from": "gpt", "value": answer}],
            "system": "You are a helpful assistant with access to the following functions. Use them if required.",
            "tools": json.dumps(_GLAIVE_TOOLS)})  # fmt: skip
    write_text(out_dir / "sharegpt-glaive.jsonl", "".join(dumps_compact(r) + "\n" for r in lines))
    return _agent_manifest(
        "sharegpt",
        "LLaMA-Factory / glaive ShareGPT, one conversation per line (counts for the first): function_call turns "
        "are assistant messages holding that call, observation turns its tool result; the top-level system "
        "string is the system prompt and tools (a JSON string) the schemas.",
        ["user", "assistant", "tool", "assistant"],
        1,
        [],
        None,
        conversations=len(lines),
    )


def build_mini_swe_agent(out_dir: Path) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a helpful assistant that can interact with a computer. Reply with "
         "a THOUGHT and exactly one bash code block."},
        {"role": "user", "content": f"<pr_description>\n{AGENT_ASK}\n</pr_description>"}]  # fmt: skip
    roles, calls = ["system", "user"], 0
    commands = {"search": "grep -rn {} src/app/api", "read": "nl -ba {} | sed -n '1,60p'", "shell": "{}",
                "edit": "sed -i 's/totals.total])/quantize(totals.total, inv.currency)])/' {}"}  # fmt: skip
    for k, (kind, target, output) in enumerate(AGENT_STEPS):
        action = commands[kind].format(target)
        msgs.append(
            {
                "role": "assistant",
                "content": f"THOUGHT: {_thought(kind, target)}\n\n```bash\n{action}\n```",
            }
        )
        msgs.append({"role": "user", "content": f"<returncode>{1 if 'FAILED' in output else 0}</returncode>\n<output>\n{output}\n</output>"})  # fmt: skip
        roles += ["assistant", "tool"]
        calls += 1
        if k == 1:
            msgs.append(
                {"role": "assistant", "content": "THOUGHT: The totals are written unformatted."}
            )
            msgs.append({"role": "user", "content": "Please always provide EXACTLY ONE action in triple backticks, found 0 actions."})  # fmt: skip
            roles += ["assistant", "user"]
    msgs.append({"role": "assistant", "content": "THOUGHT: Done.\n\n```bash\necho COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT && git diff\n```"})  # fmt: skip
    roles.append("assistant")
    doc = {"info": {"exit_status": "Submitted", "submission": "diff --git a/src/app/api/routes_invoices.py ...",
                    "model_stats": {"instance_cost": 0.0412, "api_calls": len(roles) // 2},
                    "config": {"model": {"model_name": "anthropic/claude-sonnet-4-20250514"}},
                    "mini_version": "1.9.0"},
           "messages": msgs, "trajectory_format": "mini-swe-agent-1"}  # fmt: skip
    write_text(
        out_dir / "mini-swe-agent.traj.json", json.dumps(doc, ensure_ascii=False, indent=2) + "\n"
    )
    return _agent_manifest(
        "swe-agent",
        "mini-SWE-agent: messages in order; an assistant reply's ```bash block is one tool call and the user "
        "message after it (<returncode>/<output>) its tool result. A user message after a reply with no action "
        "(the format-error notice) stays a user message, injected, not an ask.",
        roles,
        calls,
        [],
        "anthropic/claude-sonnet-4-20250514",
    )


# ================================================================= manifest, README, main

BUILDERS: tuple[tuple[str, Callable[[Path], dict[str, Any]]], ...] = (
    ("demo.json", build_demo),
    ("openai-chat.json", build_openai),
    ("anthropic-messages.json", build_anthropic),
    ("hermes-gateway.jsonl", build_gateway),
    ("hermes-state.db", build_state_db),
    ("claude-code.jsonl", build_claude_code),
    ("codex-rollout.jsonl", build_codex),
    ("sharegpt.jsonl", build_sharegpt),
    ("swe-agent.traj", build_swe_agent),
    ("gemini-cli-session.jsonl", build_gemini_cli),
    ("cline-task/api_conversation_history.json", build_cline),
    ("opencode.db", build_opencode),
    ("aider-chat-history.md", build_aider),
    ("sharegpt-glaive.jsonl", build_glaive),
    ("mini-swe-agent.traj.json", build_mini_swe_agent),
)

_DESCRIPTIONS: dict[str, str] = _json("descriptions.json")


def _readme(manifest: dict[str, Any]) -> str:
    rows = "\n".join(
        f"| `{name}` | {entry['format']} | {entry['messages']} | {entry['tool_calls']} | {len(entry['compactions'])} | {entry['images']} |"
        for name, entry in manifest["files"].items()
    )
    details = "\n".join(f"- **`{name}`** — {_DESCRIPTIONS[name]}" for name in manifest["files"])
    return _text("text/sessions_readme.md").format(rows=rows, details=details)


#: Formats whose files keep the history a compaction replaced: the agent's live context
#: starts again at the last compaction's summary. The other samples hold the compacted
#: list itself (a summary between a protected head and the tail), all of it live.
_RESETTING_FORMATS = frozenset({"claude-code", "codex", "gemini-cli", "cline", "opencode", "aider"})


def _live(entry: dict[str, Any]) -> dict[str, Any]:
    """The ``live`` / ``history`` split a reader should report for a manifest entry."""
    start = 0
    if entry["format"] in _RESETTING_FORMATS and entry.get("compactions"):
        start = entry["compactions"][-1]["index"]
    return {
        "live": {"from_index": start, "messages": entry["messages"] - start},
        "history": {"messages": start},
    }


def generate(out_dir: Path) -> dict[str, Any]:
    """Write every sample, the manifest and the README into ``out_dir``; return the manifest."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {name: builder(out_dir) for name, builder in BUILDERS}
    for entry in files.values():
        entry.update(_live(entry))
    manifest = {
        "generator": "scripts/make_sessions.py",
        "seed": SEED,
        "roles_order": list(ROLE_ORDER),
        "files": files,
    }
    write_text(out_dir / "manifest.json", json.dumps(manifest, ensure_ascii=False, indent=2) + "\n")
    write_text(out_dir / "README.md", _readme(manifest))
    return manifest


def _db_rows(path: Path) -> list[str]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return list(con.iterdump())
    finally:
        con.close()


def check(sessions: Path, workdir: Path | None = None) -> list[str]:
    """Regenerate into a temporary directory and list every difference from ``sessions``."""
    problems: list[str] = []
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        fresh = Path(tmp)
        generate(fresh)
        for name in FILE_NAMES:
            new, old = fresh / name, sessions / name
            if not old.exists():
                problems.append(f"{name}: missing from {sessions}")
                continue
            if new.read_bytes() == old.read_bytes():
                continue
            if name.endswith(".db"):
                try:
                    same = _db_rows(new) == _db_rows(old)
                except sqlite3.DatabaseError as exc:
                    problems.append(f"{name}: not a readable SQLite database ({exc})")
                    continue
                if same:
                    continue  # same schema and rows; only SQLite's own header bytes differ
            problems.append(f"{name}: differs from a fresh generation")
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Generate tjui's sample sessions deterministically."
    )
    parser.add_argument(
        "--check", action="store_true", help="regenerate into a temp dir; exit 1 on any difference"
    )
    parser.add_argument(
        "--sessions",
        type=Path,
        default=SESSIONS,
        help="the sessions directory (default: %(default)s)",
    )
    parser.add_argument(
        "--workdir", type=Path, default=None, help="parent directory for --check's temp dir"
    )
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.sessions, args.workdir)
        for problem in problems:
            print(f"drift: {problem}", file=sys.stderr)
        if problems:
            print("run `python scripts/make_sessions.py` and commit the result", file=sys.stderr)
            return 1
        print(f"{args.sessions}: up to date ({len(FILE_NAMES)} files)")
        return 0
    manifest = generate(args.sessions)
    for name, entry in manifest["files"].items():
        print(f"{name:26} {entry['format']:12} {entry['messages']:>4} messages")
    return 0


if __name__ == "__main__":
    sys.exit(main())
