"""Jinja filters for the hosted invoice page and e-mails."""

from __future__ import annotations

from decimal import Decimal

from markupsafe import Markup

CURRENCY_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥", "KRW": "₩", "CAD": "CA$"}


def money(amount: Decimal, currency: str) -> str:
    symbol = CURRENCY_SYMBOLS.get(currency, currency + " ")
    return f"{symbol}{amount:,.2f}"


def status_badge(status: str) -> Markup:
    colour = {"paid": "green", "open": "blue", "void": "grey", "uncollectible": "red"}.get(status, "grey")
    return Markup(f'<span class="badge badge-{colour}">{status}</span>')


def register(env) -> None:
    env.filters["money"] = money
    env.filters["status_badge"] = status_badge
