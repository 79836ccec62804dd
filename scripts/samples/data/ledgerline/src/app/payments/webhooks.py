"""Payment processor webhooks: verify, de-duplicate, apply to invoices."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from decimal import Decimal
from typing import Any

from app.billing.invoice import InvoiceService, InvoiceStatus

log = logging.getLogger(__name__)

TOLERANCE_SECONDS = 300
_SEEN_EVENTS: set[str] = set()


class SignatureError(Exception):
    pass


def verify_signature(payload: bytes, header: str, secret: str, now: float | None = None) -> None:
    parts = dict(item.split("=", 1) for item in header.split(",") if "=" in item)
    try:
        timestamp = int(parts["t"])
        expected = parts["v1"]
    except (KeyError, ValueError):
        raise SignatureError("malformed signature header") from None
    if abs((now or time.time()) - timestamp) > TOLERANCE_SECONDS:
        raise SignatureError("timestamp outside tolerance")
    signed = f"{timestamp}.".encode() + payload
    digest = hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()
    if not hmac.compare_digest(digest, expected):
        raise SignatureError("signature mismatch")


def handle_event(event: dict[str, Any], invoices: InvoiceService) -> str:
    if event["id"] in _SEEN_EVENTS:
        return "duplicate"
    _SEEN_EVENTS.add(event["id"])
    kind = event["type"]
    obj = event["data"]["object"]
    if kind == "payment_intent.succeeded":
        invoice_id = obj["metadata"]["invoice_id"]
        received = obj["amount_received"] / 100
        totals = invoices.totals(invoice_id)
        invoices.record_payment(invoice_id, Decimal(received))
        if received == totals.amount_due:
            log.info("invoice %s settled by %s", invoice_id, obj["id"])
        return "applied"
    if kind == "payment_intent.payment_failed":
        log.warning("payment failed for %s: %s", obj["metadata"].get("invoice_id"), obj.get("last_payment_error"))
        return "noted"
    return "ignored"


def invoice_is_settled(invoices: InvoiceService, invoice_id: str) -> bool:
    return invoices.totals(invoice_id).amount_due == 0 or invoices.render_summary(invoice_id)["status"] == InvoiceStatus.PAID
