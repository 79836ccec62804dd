"""The Hermes gateway session and the Hermes state.db sample."""

from __future__ import annotations

import json
import random
import sqlite3
import tempfile
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tinyjuice.formats._hermes_state import STATE_SCHEMA

from ..common import (
    CWD,
    LEGACY_SUMMARY_PREFIX,
    SUMMARY_PREFIX,
    Clock,
    Ids,
    dumps_compact,
    rng_for,
    role_counts,
    write_text,
)
from ..project import PROJECT_FILES, Repo, Suite, build_inventory, demo_bugs
from ..tools import (
    hermes_system_prompt,
    patch_out,
    read_out,
    search_out,
    term,
    tool_by_name,
    tool_schema,
)
from ..writers import HermesLog
from .hermes_steps import HermesStory, HermesTools
from .steps import read_steps


class GatewayStory(HermesStory):
    """The gateway's steps; ``stamp`` timestamps the messages written since the last one."""

    def __init__(self, log: HermesLog, tools: HermesTools, clock: Clock) -> None:
        super().__init__(log, tools)
        self.clock = clock
        self.stamps: list[str] = []

    def play_world(self, kind: str, value: Any) -> None:
        if kind != "stamp":
            super().play_world(kind, value)
        while len(self.stamps) < len(self.log.messages):
            self.stamps.append(self.clock.local())


def build_gateway(out_dir: Path) -> dict[str, Any]:
    rng = rng_for("gateway")
    ids = Ids(rng)
    clock = Clock(datetime(2025, 9, 17, 7, 12, 40, 512000, tzinfo=UTC), rng)
    h = HermesLog(ids, clock)
    search_issues = tool_schema(
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
        tool_by_name(n)
        for n in (
            "terminal",
            "read_file",
            "search_files",
            "todo",
            "mcp__github__create_issue",
            "mcp__github__list_prs",
        )
    ] + [search_issues]
    story = GatewayStory(h, HermesTools(Repo({})), clock)
    for step in read_steps("gateway"):
        story.play(step)
    stamps = story.stamps

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
