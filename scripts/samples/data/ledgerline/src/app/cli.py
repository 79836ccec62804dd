"""Operational commands: ``python -m app.cli reconcile --dry-run``."""

from __future__ import annotations

import argparse
import csv
import sys
from datetime import date
from pathlib import Path

from app.utils.money import format_money, parse_amount, to_cents


def reconcile(path: Path, since: date, dry_run: bool) -> int:
    mismatches = 0
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            if date.fromisoformat(row["date"]) < since:
                continue
            expected = parse_amount(row["invoice_total"])
            settled = parse_amount(row["settled_amount"])
            if to_cents(expected, row["currency"]) != to_cents(settled, row["currency"]):
                mismatches += 1
                print(f"{row['invoice']}: expected {format_money(expected, row['currency'])}, settled {format_money(settled, row['currency'])}")
    print(f"{mismatches} mismatch(es){' (dry run)' if dry_run else ''}")
    return 1 if mismatches and not dry_run else 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="app.cli")
    sub = parser.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("reconcile")
    rec.add_argument("--file", type=Path, default=Path("var/settlements.csv"))
    rec.add_argument("--since", type=date.fromisoformat, default=date(2025, 9, 1))
    rec.add_argument("--dry-run", action="store_true")
    args = parser.parse_args(argv)
    return reconcile(args.file, args.since, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
