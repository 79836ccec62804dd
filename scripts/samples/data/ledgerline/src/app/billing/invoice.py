"""Invoice domain logic: drafting, totals, finalisation, payment and credit notes.

Every amount in this module is a :class:`decimal.Decimal` quantized to the invoice
currency's minor unit by :func:`app.utils.money.quantize`. Never build an amount from
a float: ``LineItem`` rejects floats outright so the mistake fails loudly in tests.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from enum import StrEnum
from typing import Protocol
from uuid import uuid4

from app.billing.tax import TaxCalculator, TaxLine
from app.utils.money import ZERO, quantize, to_cents

log = logging.getLogger(__name__)

DEFAULT_PAYMENT_TERMS_DAYS = 30
MAX_LINE_ITEMS = 250
NUMBER_PREFIX = "INV"
HUNDRED = Decimal("100")


class InvoiceStatus(StrEnum):
    DRAFT = "draft"
    OPEN = "open"
    PAID = "paid"
    VOID = "void"
    UNCOLLECTIBLE = "uncollectible"


_ALLOWED: dict[InvoiceStatus, frozenset[InvoiceStatus]] = {
    InvoiceStatus.DRAFT: frozenset({InvoiceStatus.OPEN, InvoiceStatus.VOID}),
    InvoiceStatus.OPEN: frozenset(
        {InvoiceStatus.PAID, InvoiceStatus.VOID, InvoiceStatus.UNCOLLECTIBLE}
    ),
    InvoiceStatus.UNCOLLECTIBLE: frozenset({InvoiceStatus.PAID, InvoiceStatus.VOID}),
    InvoiceStatus.PAID: frozenset(),
    InvoiceStatus.VOID: frozenset(),
}


class InvoiceError(Exception):
    """Base class for invoice errors the API maps to a 4xx response."""


class InvalidTransition(InvoiceError):
    def __init__(self, invoice_id: str, current: InvoiceStatus, target: InvoiceStatus) -> None:
        super().__init__(f"invoice {invoice_id}: cannot move from {current} to {target}")
        self.invoice_id = invoice_id
        self.current = current
        self.target = target


class LineItemLimitExceeded(InvoiceError):
    pass


class CreditExceedsTotal(InvoiceError):
    pass


@dataclass(frozen=True, slots=True)
class LineItem:
    description: str
    quantity: Decimal
    unit_price: Decimal
    tax_code: str = "standard"
    sku: str | None = None
    discountable: bool = True

    def __post_init__(self) -> None:
        if isinstance(self.quantity, float) or isinstance(self.unit_price, float):
            raise TypeError("LineItem amounts must be Decimal, not float")
        if self.quantity <= 0:
            raise ValueError(f"quantity must be positive, got {self.quantity}")

    def subtotal(self, currency: str) -> Decimal:
        return quantize(self.quantity * self.unit_price, currency)


@dataclass(frozen=True, slots=True)
class Discount:
    """A percentage (0-100) or a fixed amount off the discountable subtotal."""

    percent: Decimal | None = None
    amount: Decimal | None = None
    code: str | None = None

    def __post_init__(self) -> None:
        if (self.percent is None) == (self.amount is None):
            raise ValueError("a discount needs exactly one of percent or amount")
        if self.percent is not None and not ZERO <= self.percent <= HUNDRED:
            raise ValueError(f"percent must be within 0..100, got {self.percent}")

    def applied_to(self, base: Decimal, currency: str) -> Decimal:
        if self.percent is not None:
            return quantize(base * self.percent / HUNDRED, currency)
        assert self.amount is not None
        return min(quantize(self.amount, currency), base)


@dataclass(frozen=True, slots=True)
class Totals:
    subtotal: Decimal
    discount: Decimal
    tax_lines: tuple[TaxLine, ...]
    tax_total: Decimal
    total: Decimal
    amount_paid: Decimal
    amount_due: Decimal


@dataclass(slots=True)
class Invoice:
    id: str
    customer_id: str
    currency: str
    status: InvoiceStatus = InvoiceStatus.DRAFT
    number: str | None = None
    lines: list[LineItem] = field(default_factory=list)
    discount: Discount | None = None
    amount_paid: Decimal = ZERO
    issued_on: date | None = None
    due_at: datetime | None = None
    paid_at: datetime | None = None
    voided_at: datetime | None = None
    memo: str = ""
    credit_notes: list[CreditNote] = field(default_factory=list)

    @property
    def is_final(self) -> bool:
        return self.status in (InvoiceStatus.PAID, InvoiceStatus.VOID)


@dataclass(frozen=True, slots=True)
class CreditNote:
    id: str
    invoice_id: str
    amount: Decimal
    reason: str
    created_at: datetime


class InvoiceRepository(Protocol):
    def get(self, invoice_id: str) -> Invoice: ...

    def save(self, invoice: Invoice) -> None: ...

    def next_sequence(self, year: int) -> int: ...


class Clock(Protocol):
    def now(self) -> datetime: ...


class SystemClock:
    def now(self) -> datetime:
        return datetime.now(UTC)


def compute_totals(invoice: Invoice, tax: TaxCalculator) -> Totals:
    """Subtotal, discount, tax and amount due for ``invoice`` (pure; no side effects)."""
    cur = invoice.currency
    subtotal = sum((line.subtotal(cur) for line in invoice.lines), ZERO)
    discountable = sum((line.subtotal(cur) for line in invoice.lines if line.discountable), ZERO)
    discount = invoice.discount.applied_to(discountable, cur) if invoice.discount else ZERO
    taxable = _taxable_by_code(invoice.lines, cur, discount, discountable)
    tax_lines = tuple(tax.lines_for(invoice.customer_id, taxable, cur))
    tax_total = sum((t.amount for t in tax_lines), ZERO)
    total = quantize(subtotal - discount + tax_total, cur)
    credited = sum((c.amount for c in invoice.credit_notes), ZERO)
    amount_due = max(ZERO, quantize(total - invoice.amount_paid - credited, cur))
    log.debug(
        "totals for %s: subtotal=%s discount=%s tax=%s total=%s due=%s",
        invoice.id,
        subtotal,
        discount,
        tax_total,
        total,
        amount_due,
    )
    return Totals(
        subtotal=subtotal,
        discount=discount,
        tax_lines=tax_lines,
        tax_total=tax_total,
        total=total,
        amount_paid=invoice.amount_paid,
        amount_due=amount_due,
    )


def _taxable_by_code(
    lines: Sequence[LineItem], currency: str, discount: Decimal, discountable: Decimal
) -> dict[str, Decimal]:
    """Spread the discount over discountable lines pro rata, then group by tax code."""
    out: dict[str, Decimal] = {}
    remaining = discount
    eligible = [line for line in lines if line.discountable]
    for line in lines:
        base = line.subtotal(currency)
        share = ZERO
        if line.discountable and discountable > ZERO and discount > ZERO:
            if line is eligible[-1]:
                share = remaining
            else:
                share = quantize(discount * base / discountable, currency)
                remaining -= share
        out[line.tax_code] = out.get(line.tax_code, ZERO) + base - share
    return out


class InvoiceService:
    """Application service for invoices; the API layer calls only these methods."""

    def __init__(
        self,
        repo: InvoiceRepository,
        tax: TaxCalculator,
        clock: Clock | None = None,
        payment_terms_days: int = DEFAULT_PAYMENT_TERMS_DAYS,
    ) -> None:
        self._repo = repo
        self._tax = tax
        self._clock = clock or SystemClock()
        self._terms = timedelta(days=payment_terms_days)

    # -- drafting ------------------------------------------------------------------

    def create_draft(self, customer_id: str, currency: str, memo: str = "") -> Invoice:
        invoice = Invoice(id=f"inv_{uuid4().hex[:16]}", customer_id=customer_id, currency=currency, memo=memo)
        self._repo.save(invoice)
        log.info("draft %s created for %s (%s)", invoice.id, customer_id, currency)
        return invoice

    def add_line(self, invoice_id: str, item: LineItem) -> Invoice:
        invoice = self._editable(invoice_id)
        if len(invoice.lines) >= MAX_LINE_ITEMS:
            raise LineItemLimitExceeded(f"invoice {invoice_id} already has {MAX_LINE_ITEMS} lines")
        invoice.lines.append(item)
        self._repo.save(invoice)
        return invoice

    def remove_line(self, invoice_id: str, index: int) -> Invoice:
        invoice = self._editable(invoice_id)
        try:
            invoice.lines.pop(index)
        except IndexError:
            raise InvoiceError(f"invoice {invoice_id} has no line {index}") from None
        self._repo.save(invoice)
        return invoice

    def apply_discount(self, invoice_id: str, discount: Discount) -> Invoice:
        invoice = self._editable(invoice_id)
        invoice.discount = discount
        self._repo.save(invoice)
        log.info("discount %s applied to %s", discount.code or discount.percent or discount.amount, invoice_id)
        return invoice

    def totals(self, invoice_id: str) -> Totals:
        return compute_totals(self._repo.get(invoice_id), self._tax)

    # -- lifecycle -----------------------------------------------------------------

    def finalize(self, invoice_id: str) -> Invoice:
        invoice = self._repo.get(invoice_id)
        self._transition(invoice, InvoiceStatus.OPEN)
        if not invoice.lines:
            raise InvoiceError(f"invoice {invoice_id} has no lines")
        now = self._clock.now()
        invoice.number = self._next_number(now.year)
        invoice.issued_on = now.date()
        invoice.due_at = now + self._terms
        totals = compute_totals(invoice, self._tax)
        if totals.amount_due == ZERO:
            self._transition(invoice, InvoiceStatus.PAID)
            invoice.paid_at = now
        self._repo.save(invoice)
        log.info("finalized %s as %s, total %s %s", invoice_id, invoice.number, totals.total, invoice.currency)
        return invoice

    def record_payment(self, invoice_id: str, amount: Decimal, at: datetime | None = None) -> Invoice:
        invoice = self._repo.get(invoice_id)
        if invoice.status not in (InvoiceStatus.OPEN, InvoiceStatus.UNCOLLECTIBLE):
            raise InvalidTransition(invoice_id, invoice.status, InvoiceStatus.PAID)
        amount = quantize(amount, invoice.currency)
        if amount <= ZERO:
            raise InvoiceError(f"payment amount must be positive, got {amount}")
        invoice.amount_paid = quantize(invoice.amount_paid + amount, invoice.currency)
        totals = compute_totals(invoice, self._tax)
        if totals.amount_due == ZERO:
            self._transition(invoice, InvoiceStatus.PAID)
            invoice.paid_at = at or self._clock.now()
        self._repo.save(invoice)
        log.info(
            "payment of %s on %s; due now %s (%s cents)",
            amount,
            invoice_id,
            totals.amount_due,
            to_cents(totals.amount_due, invoice.currency),
        )
        return invoice

    def void(self, invoice_id: str, reason: str) -> Invoice:
        invoice = self._repo.get(invoice_id)
        if invoice.amount_paid > ZERO:
            raise InvoiceError(f"invoice {invoice_id} has payments; issue a credit note instead")
        self._transition(invoice, InvoiceStatus.VOID)
        invoice.voided_at = self._clock.now()
        invoice.memo = (invoice.memo + f"\nvoided: {reason}").strip()
        self._repo.save(invoice)
        return invoice

    def mark_uncollectible(self, invoice_id: str) -> Invoice:
        invoice = self._repo.get(invoice_id)
        self._transition(invoice, InvoiceStatus.UNCOLLECTIBLE)
        self._repo.save(invoice)
        return invoice

    # -- credit notes --------------------------------------------------------------

    def issue_credit_note(self, invoice_id: str, amount: Decimal, reason: str) -> CreditNote:
        invoice = self._repo.get(invoice_id)
        if invoice.status is InvoiceStatus.DRAFT:
            raise InvoiceError("draft invoices are edited, not credited")
        amount = quantize(amount, invoice.currency)
        totals = compute_totals(invoice, self._tax)
        already = sum((c.amount for c in invoice.credit_notes), ZERO)
        if amount <= ZERO or already + amount > totals.total:
            raise CreditExceedsTotal(
                f"credit {amount} on {invoice_id} exceeds remaining {totals.total - already}"
            )
        note = CreditNote(
            id=f"cn_{uuid4().hex[:16]}",
            invoice_id=invoice_id,
            amount=amount,
            reason=reason,
            created_at=self._clock.now(),
        )
        invoice.credit_notes.append(note)
        self._repo.save(invoice)
        return note

    def credit_lines(self, invoice_id: str, indexes: Iterable[int], reason: str) -> CreditNote:
        """Credit whole lines, including their share of tax."""
        invoice = self._repo.get(invoice_id)
        picked = [invoice.lines[i] for i in sorted(set(indexes))]
        partial = replace(invoice, lines=picked, credit_notes=[], amount_paid=ZERO)
        amount = compute_totals(partial, self._tax).total
        return self.issue_credit_note(invoice_id, amount, reason)

    # -- rendering -----------------------------------------------------------------

    def render_summary(self, invoice_id: str) -> dict[str, str]:
        """The plain-text summary shown in emails and on the hosted invoice page."""
        invoice = self._repo.get(invoice_id)
        t = compute_totals(invoice, self._tax)
        return {
            "number": invoice.number or "(draft)",
            "status": invoice.status.value,
            "subtotal": str(t.subtotal),
            "discount": str(t.discount),
            "tax": str(t.tax_total),
            "total": str(t.total),
            "amount_due": str(t.amount_due),
            "currency": invoice.currency,
            "due": invoice.due_at.date().isoformat() if invoice.due_at else "",
        }

    # -- helpers -------------------------------------------------------------------

    def _editable(self, invoice_id: str) -> Invoice:
        invoice = self._repo.get(invoice_id)
        if invoice.status is not InvoiceStatus.DRAFT:
            raise InvoiceError(f"invoice {invoice_id} is {invoice.status}; only drafts can change")
        return invoice

    def _transition(self, invoice: Invoice, target: InvoiceStatus) -> None:
        if target not in _ALLOWED[invoice.status]:
            raise InvalidTransition(invoice.id, invoice.status, target)
        log.debug("invoice %s: %s -> %s", invoice.id, invoice.status, target)
        invoice.status = target

    def _next_number(self, year: int) -> str:
        seq = self._repo.next_sequence(year)
        return f"{NUMBER_PREFIX}-{year}-{seq:04d}"


def overdue(invoices: Iterable[Invoice], now: datetime, grace: timedelta = timedelta(0)) -> list[Invoice]:
    """Open invoices whose due date plus ``grace`` has passed, oldest first."""
    late = [
        inv
        for inv in invoices
        if inv.status is InvoiceStatus.OPEN and inv.due_at is not None and inv.due_at + grace < now
    ]
    return sorted(late, key=lambda inv: inv.due_at or now)


def summarize_batch(invoices: Sequence[Invoice], tax: TaxCalculator) -> dict[str, Decimal]:
    """Totals per currency for a batch (used by the nightly finance export)."""
    out: dict[str, Decimal] = {}
    for inv in invoices:
        if inv.status is InvoiceStatus.VOID:
            continue
        t = compute_totals(inv, tax)
        out[inv.currency] = quantize(out.get(inv.currency, ZERO) + t.total, inv.currency)
    return dict(sorted(out.items()))
