"""Invoice endpoints."""

from __future__ import annotations

import csv
import io
import json
import logging

from fastapi import APIRouter, Depends, HTTPException
from fastapi.responses import StreamingResponse

from app.api.deps import audit_log, invoice_service
from app.api.schemas import InvoiceOut
from app.billing.invoice import InvoiceError, InvoiceService

router = APIRouter(prefix="/v1/invoices", tags=["invoices"])
log = logging.getLogger(__name__)


@router.get("/{invoice_id}", response_model=InvoiceOut)
def get_invoice(invoice_id: str, svc: InvoiceService = Depends(invoice_service)) -> InvoiceOut:
    try:
        summary = svc.render_summary(invoice_id)
    except KeyError:
        raise HTTPException(404, f"no invoice {invoice_id}") from None
    return InvoiceOut.model_validate({**summary, "id": invoice_id})


@router.post("/{invoice_id}/finalize", response_model=InvoiceOut)
def finalize(invoice_id: str, svc: InvoiceService = Depends(invoice_service)) -> InvoiceOut:
    try:
        svc.finalize(invoice_id)
    except InvoiceError as exc:
        raise HTTPException(409, str(exc)) from exc
    return get_invoice(invoice_id, svc)


@router.get("/export.csv")
def export_csv(month: str, svc: InvoiceService = Depends(invoice_service)) -> StreamingResponse:
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["number", "customer", "currency", "subtotal", "tax", "total", "status"])
    for inv, totals in svc.for_month(month):
        row = {"number": inv.number, "total": totals.total, "tax": totals.tax_total}
        audit_log.info("export row %s", json.dumps(row))
        writer.writerow([inv.number, inv.customer_id, inv.currency, totals.subtotal, totals.tax_total, totals.total, inv.status])
    buf.seek(0)
    return StreamingResponse(iter([buf.getvalue()]), media_type="text/csv")
