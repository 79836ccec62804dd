"""Proration when a subscription changes plan mid-cycle."""

from __future__ import annotations

from datetime import date
from decimal import Decimal

from app.utils.money import quantize


def prorate(old_price: Decimal, new_price: Decimal, start: date, end: date, changed_on: date, currency: str) -> Decimal:
    """The amount to charge (positive) or credit (negative) for the rest of the period."""
    days_in_period = (end - start).days
    days_left = (end - changed_on).days
    if days_in_period <= 0 or not 0 <= days_left <= days_in_period:
        raise ValueError("changed_on must fall within the billing period")
    ratio = days_left / days_in_period
    return quantize((new_price - old_price) * ratio, currency)
