"""Clean a CSV export: snake_case unique headers, trimmed cells, ISO dates, no empty rows."""

import csv
import re
import sys
from datetime import datetime

FORMATS = ("%d/%m/%Y", "%Y-%m-%d", "%d.%m.%Y", "%b %d, %Y")


def header(name: str) -> str:
    return re.sub(r"[^0-9a-z]+", "_", name.strip().lower()).strip("_")


def iso(cell: str) -> str:
    for fmt in FORMATS:
        try:
            return datetime.strptime(cell, fmt).date().isoformat()
        except ValueError:
            continue
    return cell


def main(source: str, target: str) -> None:
    with open(source, newline="") as file:
        rows = list(csv.reader(file))
    names = [header(name) for name in rows[0]]
    if len(set(names)) != len(names):
        sys.exit(f"headers collide after cleaning: {names}")
    kept = [[iso(cell.strip()) for cell in row] for row in rows[1:] if any(cell.strip() for cell in row)]
    with open(target, "w", newline="") as file:
        csv.writer(file).writerows([names, *kept])
    print(f"{len(rows) - 1 - len(kept)} empty rows dropped")


if __name__ == "__main__":
    main(*sys.argv[1:3])
