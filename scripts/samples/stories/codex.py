"""The Codex CLI rollout sample."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import CWD, Clock, Ids, data_text, dumps_compact, rng_for, role_counts, write_text
from ..project import PROJECT_FILES, Repo
from ..writers import CodexLog

# ================================================================================= Codex

CODEX_INSTRUCTIONS = data_text("text/codex_instructions.txt")


CODEX_AGENTS = data_text("text/codex_agents.txt")


CODEX_ENV = f"""<environment_context>
  <cwd>{CWD}</cwd>
  <approval_policy>on-request</approval_policy>
  <sandbox_mode>workspace-write</sandbox_mode>
  <network_access>restricted</network_access>
  <shell>bash</shell>
</environment_context>"""


RECON_CSV_HEAD = data_text("text/recon_csv_head.txt")


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
