"""Arrow columns as NumPy arrays in the chunked readers (snapcore.cli.chunks._columns).

Numeric columns without nulls are viewed in place over Arrow's buffers; the view must
honour the column's offset (a sliced batch) and type, and every other column must go
through Arrow's own conversion.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

from snapcore.cli.chunks import _columns  # noqa: E402

TYPES = ["float64", "float32", "int64", "int32", "int16", "int8", "uint64", "uint32", "uint8"]


@pytest.mark.parametrize("type_name", TYPES)
@pytest.mark.parametrize("start", [0, 1, 5])
def test_numeric_columns_are_read_exactly_at_any_offset(type_name: str, start: int) -> None:
    typ = getattr(pa, type_name)()
    dtype = np.dtype(type_name)
    values = np.arange(11, dtype=np.float64) * 3 + 1
    if dtype.kind == "f":
        values = values / 4  # dyadic: exact in every float width
    batch = pa.record_batch([pa.array(values.astype(dtype), type=typ)], names=["x"])
    got = _columns(batch.slice(start, 4))["x"]
    assert got.dtype == dtype
    assert got.tolist() == values.astype(dtype)[start : start + 4].tolist()


def test_columns_with_nulls_or_other_types_use_arrows_conversion() -> None:
    batch = pa.record_batch(
        [pa.array([1.5, None, 2.5]), pa.array(["a", "b", "c"]), pa.array([True, False, True])],
        names=["f", "s", "b"],
    )
    cols = _columns(batch.slice(1))
    assert np.isnan(cols["f"][0]) and cols["f"][1] == 2.5
    assert cols["s"].tolist() == ["b", "c"]
    assert cols["b"].tolist() == [False, True]


def test_a_small_csv_is_read_whole_without_pyarrow(tmp_path: Path) -> None:
    """A file within one block is read by the whole-file reader (no pyarrow import, a
    fifth of a one-shot run) and releases exactly what the chunked reader releases."""
    import json
    import subprocess
    import sys

    p = tmp_path / "d.csv"
    rng = np.random.default_rng(5)
    p.write_text("x\n" + "\n".join(repr(float(v)) for v in rng.uniform(-1, 3, 500)) + "\n")
    args = ["release", "mean", str(p), "-c", "x", "-b", "0", "2", "-e", "1", "--seed", "9"]
    probe = (
        "import sys, runpy; sys.argv = ['snapcore', *sys.argv[1:]]\n"
        "from snapcore.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print('PYARROW', 'pyarrow' in sys.modules)\n"
    )
    whole = subprocess.run(
        [sys.executable, "-c", probe, *args, "--json"], capture_output=True, text=True
    )
    assert whole.returncode == 0, whole.stderr
    body, flag = whole.stdout.rsplit("PYARROW", 1)
    assert flag.strip() == "False"
    chunked = subprocess.run(
        [sys.executable, "-c", probe, *args, "--json", "--block-size", "1024"],
        capture_output=True,
        text=True,
    )
    cbody, cflag = chunked.stdout.rsplit("PYARROW", 1)
    assert cflag.strip() == "True"
    assert json.loads(body)["value"] == json.loads(cbody)["value"]
