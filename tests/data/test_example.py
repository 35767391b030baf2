"""The bundled example table (snapcore.data._example): the file is installed with the
package and holds the columns its docstring describes, in the ranges it states."""

from __future__ import annotations

import csv

from snapcore.data._example import EXAMPLE_NAME, example_path


def test_the_example_table_is_what_its_docstring_says():
    path = example_path()
    assert path.name == EXAMPLE_NAME and path.is_file()
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert list(rows[0]) == ["age", "income", "hours_per_week", "region", "education"]
    assert len(rows) >= 100
    for row in rows:
        assert 18 <= int(row["age"]) <= 90
        assert 0 <= int(row["income"]) <= 500_000
        assert 0 <= int(row["hours_per_week"]) <= 80
        assert row["region"] in {"north", "south", "east", "west"}
        assert row["education"] in {"primary", "secondary", "tertiary"}
