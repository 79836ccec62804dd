"""API response and request models."""

from __future__ import annotations

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict


class LineOut(BaseModel):
    description: str
    quantity: str
    unit_price: str
    tax_code: str


class InvoiceOut(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: str
    number: str | None
    status: str
    currency: str
    subtotal: float
    tax_total: float
    total: float
    amount_due: float
    issued_on: date | None
    due_at: datetime | None
    lines: list[LineOut]
