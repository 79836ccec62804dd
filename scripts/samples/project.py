"""The made-up project ledgerline: its files (data/ledgerline/), its test suite and bugs."""

from __future__ import annotations

import difflib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .common import data_json, data_text

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
    path: data_text(f"ledgerline/{path}")
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
_INVENTORY_SPEC: list[list[Any]] = data_json("test_inventory.json")


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


_LOG_TEMPLATES: dict[str, list[str]] = data_json("log_templates.json")


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
    path: data_text(f"ledgerline/{path}")
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
