"""Sales tax and VAT lines for an invoice."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal

from app.config import Settings
from app.utils.money import quantize

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class TaxLine:
    code: str
    name: str
    rate: Decimal
    taxable: Decimal
    amount: Decimal


@dataclass(frozen=True, slots=True)
class Region:
    code: str
    rates: Mapping[str, Decimal]  # tax code -> rate
    name: str


class CustomerDirectory:
    def region_of(self, customer_id: str) -> str: ...

    def is_exempt(self, customer_id: str) -> bool: ...


class TaxCalculator:
    def __init__(self, settings: Settings, customers: CustomerDirectory, regions: Mapping[str, Region]) -> None:
        self._settings = settings
        self._customers = customers
        self._regions = regions

    def rate_for(self, region: Region, tax_code: str) -> Decimal:
        if tax_code in region.rates:
            return region.rates[tax_code]
        return Decimal(self._settings.default_tax_rate)

    def lines_for(self, customer_id: str, taxable: Mapping[str, Decimal], currency: str) -> list[TaxLine]:
        if self._customers.is_exempt(customer_id):
            log.debug("customer %s is tax exempt", customer_id)
            return []
        region = self._regions[self._customers.region_of(customer_id)]
        lines = []
        for code, base in sorted(taxable.items()):
            rate = self.rate_for(region, code)
            if rate == 0 or base == 0:
                continue
            lines.append(TaxLine(code, region.name, rate, base, quantize(base * rate, currency)))
        log.debug("tax lines for region=%s: %s", region.code, lines)
        return lines

    def total_tax(self, customer_id: str, taxable: Mapping[str, Decimal], currency: str) -> Decimal:
        lines = self.lines_for(customer_id, taxable, currency)
        return quantize(sum(line.amount for line in lines), currency)
