from __future__ import annotations

from decimal import Decimal

import pytest

from app.utils.money import format_money, from_cents, parse_amount, quantize, to_cents


def test_quantize_usd():
    assert quantize(Decimal("1.234")) == Decimal("1.23")


def test_quantize_jpy():
    assert quantize(Decimal("1199.6"), "JPY") == Decimal("1200")


@pytest.mark.parametrize(
    ("amount", "expected"),
    [("10.005", 1001), ("0.125", 13), ("2.675", 268), ("0.005", 1)],
    ids=["10.005-1001", "0.125-13", "2.675-268", "0.005-1"],
)
def test_to_cents_rounds_half_up(amount, expected):
    assert to_cents(Decimal(amount)) == expected


@pytest.mark.parametrize(
    ("amount", "currency", "expected"),
    [("1234.5", "USD", "$1,234.50"), ("1200", "JPY", "¥1,200"), ("-5", "EUR", "-€5.00"), ("0.5", "GBP", "£0.50")],
    ids=["1234.5-USD-$1,234.50", "1200-JPY-¥1,200", "-5-EUR--€5.00", "0.5-GBP-£0.50"],
)
def test_format_money(amount, currency, expected):
    assert format_money(Decimal(amount), currency) == expected
