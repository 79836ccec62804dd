"""demo.json: the Hermes session the inspector and the pipeline are shown on."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..common import (
    CWD,
    LATEST_ASK,
    SUMMARY_PREFIX,
    Clock,
    Ids,
    data_text,
    data_url,
    env_file,
    make_secrets,
    png_ci_dashboard,
    png_invoice,
    rng_for,
    role_counts,
    write_text,
)
from ..project import PROJECT_FILES, TEST_SOURCES, Repo, Suite, build_inventory, demo_bugs
from ..tools import (
    HERMES_TOOLS,
    Call,
    grep_repo,
    hermes_system_prompt,
    patch_out,
    read_out,
    search_out,
    term,
)
from ..writers import HermesLog

# ================================================================================ demo.json

FIRST_ASK = data_text("text/first_ask.txt")


CHANGELOG_MD = data_text("ledgerline/CHANGELOG.md")


SETTLEMENTS_HEAD = data_text("text/settlements_head.txt")


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
