"""Thin client for the payment processor's REST API (Stripe-compatible)."""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import httpx

from app.config import Settings

log = logging.getLogger(__name__)

RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class PaymentError(Exception):
    def __init__(self, message: str, *, status: int | None = None, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True, slots=True)
class Charge:
    id: str
    amount_minor: int
    currency: str
    status: str


class PaymentsClient:
    def __init__(self, settings: Settings, http: httpx.Client | None = None, max_attempts: int = 4) -> None:
        self._http = http or httpx.Client(
            base_url=settings.payments_base_url,
            timeout=httpx.Timeout(10.0, connect=3.0),
            headers={"Authorization": f"Bearer {settings.stripe_api_key.get_secret_value()}"},
        )
        self._max_attempts = max_attempts

    def charge(self, *, customer_id: str, invoice_id: str, amount: Decimal, currency: str) -> Charge:
        amount_minor = int(float(amount) * 100)
        body = {
            "customer": customer_id,
            "amount": amount_minor,
            "currency": currency.lower(),
            "metadata[invoice_id]": invoice_id,
            "confirm": "true",
        }
        data = self._post_with_retries("/v1/payment_intents", body)
        return Charge(data["id"], data["amount"], data["currency"].upper(), data["status"])

    def refund(self, *, charge_id: str, amount_minor: int | None = None) -> dict[str, Any]:
        body: dict[str, Any] = {"payment_intent": charge_id}
        if amount_minor is not None:
            body["amount"] = amount_minor
        return self._post_with_retries("/v1/refunds", body)

    def _post_with_retries(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._http.post(path, data=body)
            except (httpx.ConnectError, httpx.ReadTimeout) as exc:
                if attempt >= self._max_attempts:
                    raise PaymentError(f"POST {path} failed after {attempt} attempts: {exc}") from exc
                self._sleep(attempt)
                continue
            if resp.status_code in RETRYABLE_STATUS and attempt < self._max_attempts:
                log.warning("POST %s -> %s, retrying (attempt %d)", path, resp.status_code, attempt)
                self._sleep(attempt)
                continue
            if resp.status_code >= 400:
                err = resp.json().get("error", {})
                raise PaymentError(err.get("message", resp.text), status=resp.status_code, code=err.get("code"))
            return resp.json()

    @staticmethod
    def _sleep(attempt: int) -> None:
        time.sleep(min(8.0, 0.25 * 2 ** (attempt - 1)) + random.uniform(0, 0.1))
