"""The OpenAI Chat, Anthropic Messages and ShareGPT samples."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from ..common import (
    CWD,
    LEGACY_SUMMARY_PREFIX,
    Ids,
    data_text,
    data_url,
    dumps_compact,
    png_ci_dashboard,
    png_invoice,
    rng_for,
    role_counts,
    write_text,
)
from ..project import PROJECT_FILES, Repo
from ..tools import Call, tool_schema
from ..writers import AnthropicLog, ChatLog, ShareGPTLog
from .steps import LogStory

# =========================================================================== OpenAI chat


def _oa_tools() -> list[dict[str, Any]]:
    return [
        tool_schema(
            "shell",
            "Run a bash command in the repository and return stdout, stderr and the exit code.",
            {"command": {"type": "string"}, "timeout_s": {"type": "integer", "default": 120}},
            ["command"],
        ),
        tool_schema(
            "read_file",
            "Read a file (optionally a line range) with line numbers.",
            {"path": {"type": "string"}, "start": {"type": "integer"}, "end": {"type": "integer"}},
            ["path"],
        ),
        tool_schema(
            "apply_patch",
            "Apply a unified diff to the working tree. Fails if any hunk does not apply cleanly.",
            {"diff": {"type": "string", "description": "A unified diff with a/ and b/ prefixes."}},
            ["diff"],
        ),
        tool_schema(
            "list_files",
            "List files under a directory, respecting .gitignore.",
            {"path": {"type": "string"}, "glob": {"type": "string"}},
            ["path"],
        ),
    ]


def _shell(out: str, code: int = 0, err: str = "") -> str:
    return json.dumps({"stdout": out, "stderr": err, "exit_code": code})


class OpenAITools:
    """The OpenAI story's tools (see ``steps``): reads and patches on the webhook module."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def read(self, path: str, start: int | None = None, end: int | None = None) -> Call:
        args: dict[str, Any] = {"path": path}
        lines = self.repo.lines(path)
        a, b = start or 1, end or len(lines)
        if start is not None:
            args["start"], args["end"] = a, b
        return ("read_file", args, self.repo.numbered(path, a, b - a + 1))

    def apply(self, path: str, old: str, new: str) -> Call:
        diff = self.repo.patch(path, old, new)
        out = json.dumps({"applied": True, "files": [path]})
        return ("apply_patch", {"diff": diff + "\n"}, out)

    shell = staticmethod(_shell)

    @staticmethod
    def image() -> str:
        return data_url(png_ci_dashboard(rng_for("openai-png"), 40, 28))


def build_openai(out_dir: Path) -> dict[str, Any]:
    wh = "src/app/payments/webhooks.py"
    c = ChatLog(Ids(rng_for("openai")))
    LogStory({"chat": c}, OpenAITools(Repo({wh: PROJECT_FILES[wh]}))).replay("openai")
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


AnthropicCall = tuple[str, dict[str, Any], str, bool]


class AnthropicTools:
    """The Anthropic story's tools (see ``steps``): views and edits of the web filters."""

    def __init__(self, repo: Repo) -> None:
        self.repo = repo

    def view(self, path: str, start: int | None = None, end: int | None = None) -> AnthropicCall:
        args: dict[str, Any] = {"path": path}
        if start:
            args["view_range"] = [start, end]
        lines = self.repo.lines(path)
        s, e = start or 1, end or len(lines)
        return ("view_file", args, self.repo.numbered(path, s, e - s + 1, arrow=True), False)

    def edit(self, path: str, old: str, new: str) -> AnthropicCall:
        diff = self.repo.patch(path, old, new)
        out = json.dumps({"path": path, "replaced": 1, "diff": diff})
        return ("edit_file", {"path": path, "old_str": old, "new_str": new}, out, False)

    def edit_many(self, path: str, edits: list[tuple[str, str]]) -> AnthropicCall:
        diff = self.repo.patch_many(path, edits)
        out = json.dumps({"path": path, "applied": True})
        return ("edit_file", {"path": path, "diff": diff}, out, False)

    @staticmethod
    def image() -> str:
        return base64.b64encode(png_invoice(rng_for("anthropic-png"), 36, 36)).decode()


def build_anthropic(out_dir: Path) -> dict[str, Any]:
    a = AnthropicLog(Ids(rng_for("anthropic")))
    fp = "src/app/web/filters.py"
    repo = Repo({fp: data_text(f"ledgerline/{fp}")})
    LogStory({"messages": a}, AnthropicTools(repo)).replay("anthropic")

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
