"""Money helpers. Amounts are Decimal; minor units are ints; floats never appear."""

from __future__ import annotations

from decimal import ROUND_HALF_EVEN, ROUND_HALF_UP, Decimal

ZERO = Decimal("0")

# ISO 4217 minor-unit exponents for the currencies we bill in.
_EXPONENTS: dict[str, int] = {"USD": 2, "EUR": 2, "GBP": 2, "CAD": 2, "JPY": 0, "KRW": 0}
_SYMBOLS: dict[str, str] = {"USD": "$", "EUR": "€", "GBP": "£", "CAD": "CA$", "JPY": "¥", "KRW": "₩"}


def exponent(currency: str) -> int:
    try:
        return _EXPONENTS[currency]
    except KeyError:
        raise ValueError(f"unsupported currency {currency!r}") from None


def quantize(amount: Decimal, currency: str = "USD") -> Decimal:
    """Round ``amount`` to the currency's minor unit."""
    step = Decimal(1).scaleb(-exponent(currency))
    return amount.quantize(step, rounding=ROUND_HALF_EVEN)


def to_cents(amount: Decimal, currency: str = "USD") -> int:
    """Minor units (cents, or yen for JPY) as an int."""
    return int(quantize(amount, currency).scaleb(exponent(currency)))


def from_cents(minor: int, currency: str = "USD") -> Decimal:
    return Decimal(minor).scaleb(-exponent(currency))


def parse_amount(raw: str | int | Decimal) -> Decimal:
    """Parse an amount from a CSV cell, a form field or a JSON string."""
    if isinstance(raw, Decimal):
        return raw
    if isinstance(raw, int):
        return Decimal(raw)
    return Decimal(raw.strip().replace(",", ""))


def format_money(amount: Decimal, currency: str = "USD") -> str:
    """``$1,234.50`` / ``¥1,200``: symbol, thousands separators, minor unit digits."""
    symbol = _SYMBOLS.get(currency, currency + " ")
    sign = "-" if amount < 0 else ""
    return f"{sign}{symbol}{abs(amount):,}"
