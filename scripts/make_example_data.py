"""Generate ``snapcore/data/example.csv``, the synthetic table the CLI uses by default.

Run once from the repository root; the output is committed.  The generator is
Python's ``random.Random`` with a fixed seed (its sequence for ``random()`` and
``gauss()`` is stable across Python versions), so rerunning reproduces the file.

    python scripts/make_example_data.py
"""

from __future__ import annotations

import csv
import math
import random
from pathlib import Path

SEED = 20260101
ROWS = 1000
REGIONS = ("north", "south", "east", "west")
REGION_WEIGHTS = (0.30, 0.25, 0.25, 0.20)
EDUCATION = ("primary", "secondary", "tertiary")


def make_rows(rng: random.Random, rows: int) -> list[dict[str, object]]:
    out = []
    for _ in range(rows):
        age = min(90, max(18, round(rng.gauss(44, 15))))
        r = rng.random()
        edu = EDUCATION[0] if r < 0.15 else EDUCATION[1] if r < 0.60 else EDUCATION[2]
        region = rng.choices(REGIONS, REGION_WEIGHTS)[0]
        retired = age >= 67 and rng.random() < 0.85
        unemployed = not retired and rng.random() < 0.06
        hours = 0 if retired or unemployed else min(80, max(5, round(rng.gauss(38, 8))))
        # Income: log-normal around an age curve peaking in the fifties, higher with
        # education; pensions for the retired; a little for the unemployed.
        peak = 1.0 - ((age - 52) / 40) ** 2
        base = {"primary": 28000, "secondary": 38000, "tertiary": 55000}[edu]
        if retired:
            income = base * 0.55 * math.exp(rng.gauss(0, 0.3))
        elif unemployed:
            income = 6000 * math.exp(rng.gauss(0, 0.5))
        else:
            income = base * (0.6 + 0.6 * peak) * (hours / 38) * math.exp(rng.gauss(0, 0.45))
        income = min(400000, max(0, round(income, -2)))
        out.append(
            {
                "age": age,
                "income": int(income),
                "hours_per_week": hours,
                "region": region,
                "education": edu,
            }
        )
    return out


def main() -> None:
    rng = random.Random(SEED)
    rows = make_rows(rng, ROWS)
    path = Path(__file__).resolve().parent.parent / "snapcore" / "data" / "example.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
    print(f"wrote {len(rows)} rows to {path}")


if __name__ == "__main__":
    main()
