from __future__ import annotations

import pytest

from app.billing.invoice import InvoiceStatus
from app.payments.webhooks import handle_event


def _event(event_id, kind, *, invoice_id="inv_test0001", amount=1999, currency="usd"):
    return {
        "id": event_id,
        "type": kind,
        "data": {"object": {"id": "pi_test", "amount_received": amount, "currency": currency, "metadata": {"invoice_id": invoice_id}}},
    }


@pytest.mark.parametrize(("currency", "amount"), [("usd", 9277), ("jpy", 9515)], ids=["USD", "JPY"])
def test_payment_succeeded_marks_invoice_paid(open_invoice, invoice_service, currency, amount):
    inv = open_invoice(currency.upper())
    handle_event(_event("evt_paid_1", "payment_intent.succeeded", invoice_id=inv.id, amount=amount, currency=currency), invoice_service)
    assert invoice_service.get(inv.id).status is InvoiceStatus.PAID


@pytest.mark.parametrize(("currency", "amount"), [("usd", 5000), ("jpy", 5000)], ids=["USD", "JPY"])
def test_partial_payment_keeps_invoice_open(open_invoice, invoice_service, currency, amount):
    inv = open_invoice(currency.upper())
    handle_event(_event("evt_part_1", "payment_intent.succeeded", invoice_id=inv.id, amount=amount, currency=currency), invoice_service)
    assert invoice_service.totals(inv.id).amount_due == invoice_service.totals(inv.id).total - from_cents(amount, currency.upper())


def test_duplicate_events_are_ignored(open_invoice, invoice_service):
    inv = open_invoice("USD")
    event = _event("evt_1", "payment_intent.succeeded", invoice_id=inv.id)
    assert handle_event(event, invoice_service) == "applied"
    assert handle_event(event, invoice_service) == "duplicate"
