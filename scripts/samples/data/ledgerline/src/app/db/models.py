"""SQLAlchemy tables for invoices and line items."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal

from sqlalchemy import ForeignKey, Numeric, String
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship


class Base(DeclarativeBase):
    pass


class InvoiceRow(Base):
    __tablename__ = "invoices"

    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    customer_id: Mapped[str] = mapped_column(String(32), index=True)
    currency: Mapped[str] = mapped_column(String(3))
    status: Mapped[str] = mapped_column(String(16), default="draft")
    number: Mapped[str | None] = mapped_column(String(24), unique=True)
    amount_paid: Mapped[Decimal] = mapped_column(Numeric(12, 2, asdecimal=False), default=0)
    issued_on: Mapped[date | None]
    due_at: Mapped[datetime | None]
    lines: Mapped[list[LineRow]] = relationship(back_populates="invoice", order_by="LineRow.position")


class LineRow(Base):
    __tablename__ = "invoice_lines"

    id: Mapped[int] = mapped_column(primary_key=True)
    invoice_id: Mapped[str] = mapped_column(ForeignKey("invoices.id"))
    position: Mapped[int]
    description: Mapped[str] = mapped_column(String(500))
    quantity: Mapped[Decimal] = mapped_column(Numeric(12, 4))
    unit_price: Mapped[Decimal] = mapped_column(Numeric(12, 2, asdecimal=False))
    tax_code: Mapped[str] = mapped_column(String(16), default="standard")
    invoice: Mapped[InvoiceRow] = relationship(back_populates="lines")
