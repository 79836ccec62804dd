from __future__ import annotations

from decimal import Decimal

import pytest

from app.billing.invoice import Invoice, LineItem


@pytest.fixture
def invoice_factory():
    def make(currency: str = "USD", lines: list[tuple[str, str, str]] | None = None, **kw) -> Invoice:
        items = [
            LineItem(desc, Decimal(qty), Decimal(price))
            for desc, qty, price in (lines or [("Pro plan (monthly)", "1", "49.00"), ("Extra seats", "3", "12.50")])
        ]
        return Invoice(id=kw.pop("id", "inv_test0001"), customer_id=kw.pop("customer_id", "cus_test"), currency=currency, lines=items, **kw)

    return make


@pytest.fixture
def app_settings(monkeypatch):
    monkeypatch.setenv("DATABASE_URL", "sqlite+pysqlite:///:memory:")
    monkeypatch.setenv("STRIPE_API_KEY", "sk_test_dummy")
    from app.config import Settings

    return Settings(_env_file=None)
