"""Reminder e-mails for unpaid invoices."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from app.billing.invoice import Invoice, InvoiceStatus

GRACE = timedelta(days=3)
SCHEDULE = (timedelta(days=1), timedelta(days=7), timedelta(days=14))


@dataclass(frozen=True, slots=True)
class Reminder:
    invoice_id: str
    send_at: datetime
    template: str


def is_overdue(invoice: Invoice, now: datetime | None = None) -> bool:
    now = now or datetime.utcnow()
    return invoice.status is InvoiceStatus.OPEN and invoice.due_at is not None and now > invoice.due_at + GRACE


def reminders_for(invoices: Iterable[Invoice], now: datetime | None = None) -> list[Reminder]:
    now = now or datetime.utcnow()
    out = []
    for inv in invoices:
        if not is_overdue(inv, now) or inv.due_at is None:
            continue
        for n, delay in enumerate(SCHEDULE, start=1):
            send_at = inv.due_at + GRACE + delay
            if send_at >= now:
                out.append(Reminder(inv.id, send_at, f"overdue_{n}"))
    return sorted(out, key=lambda r: r.send_at)
