"""The command line reads CSV and Parquet, from a path or standard input, in chunks
through the statistics' partial states: the same state and release as the whole data
in memory (pandas), whatever the chunk size."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import snapcore
from snapcore.plugins._manager import get_registries

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

from snapcore.cli._chunks import stream_partial  # noqa: E402


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    rng = np.random.default_rng(12)
    n = 20_000
    return pd.DataFrame(
        {
            "age": rng.uniform(-5, 105, n) * 2.0 ** rng.integers(-40, 1, n),
            "income": rng.normal(5e4, 4e4, n),
            "region": rng.choice(["north", "south", "east"], n),
        }
    )


def _csv_bytes(frame: pd.DataFrame) -> bytes:
    # repr() of a double reads back as the same double (shortest round trip)
    lines = ["age,income,region"] + [
        f"{a!r},{b!r},{c}"
        for a, b, c in zip(frame.age.tolist(), frame.income.tolist(), frame.region, strict=True)
    ]
    return ("\n".join(lines) + "\n").encode()


CASES = [
    ("variance", "age", {"data_bounds": (0.0, 100.0)}, {}),
    ("covariance", ("age", "income"), {"data_bounds": ((0.0, 100.0), (0.0, 2e5))}, {}),
    ("histogram", "region", {"data_bounds": None}, {"categories": ["north", "east"]}),
    ("count", None, {"data_bounds": None}, {}),
]


def _streamed_json(cli, monkeypatch, argv):
    """``snapcore release ARGV -e 1 --seed s --block-size 1024 --json``: the parsed
    JSON record."""
    tail = ["-e", "1", "--seed", "s", "--block-size", "1024", "--json"]
    return cli.json("release", *argv, *tail)


@pytest.mark.parametrize(("name", "column", "kw", "options"), CASES, ids=[c[0] for c in CASES])
def test_streamed_state_equals_the_whole_in_memory(frame, name, column, kw, options):
    stat = get_registries().statistics.get(name)
    whole = snapcore.partial(stat, frame, column=column, data_bounds=kw["data_bounds"], **options)
    for block in (1 << 12, 1 << 16):  # dozens of chunks, then a few
        got = stream_partial(
            stat,
            io.BytesIO(_csv_bytes(frame)),
            label="test",
            file_format="csv",
            column=column,
            data_bounds=kw["data_bounds"],
            options=options,
            block_bytes=block,
        )
        assert got == whole


def test_csv_path_stdin_and_parquet_release_like_pandas(cli, frame, tmp_path: Path):
    csv_path = tmp_path / "d.csv"
    csv_path.write_bytes(_csv_bytes(frame))
    pq_path = tmp_path / "d.parquet"
    pq.write_table(pa.Table.from_pandas(frame), pq_path, row_group_size=3000)
    args = [
        "-c",
        "age",
        "-b",
        "0",
        "100",
        "-e",
        "1",
        "--seed",
        "4",
        "--json",
        "--clamp",
        "40",
        "60",
    ]
    want = snapcore.release(
        "mean",
        frame,
        column="age",
        data_bounds=(0, 100),
        epsilon=1,
        clamp_bounds=(40, 60),
        source=snapcore.SeededSource("4"),
    )
    outs = [
        cli.json("release", "mean", str(csv_path), "--block-size", "4096", *args),
        cli.json(
            "release", "mean", "-", "--block-size", "4096", *args, input=csv_path.read_bytes()
        ),
        cli.json("release", "mean", str(pq_path), *args),
        cli.json("release", "mean", "-", "--format", "parquet", *args, input=pq_path.read_bytes()),
    ]
    for out in outs:
        assert out["value"] == want.value and out["n"] == len(frame)


def test_bad_values_in_a_chunk_are_refused_by_column_not_value(cli, tmp_path: Path):
    p = tmp_path / "d.csv"
    p.write_text("x,y\n" + "1.25,2\n" * 3000 + "oops,2\n")
    r = cli(
        "release", "mean", str(p), "-c", "x", "-b", "0", "2", "-e", "1", "--block-size", "1024"
    )
    assert r.exit_code == 3  # a data error (snapcore.cli's exit codes)
    assert "column 'x': every record must be a finite real number" in r.stderr
    assert "oops" not in r.stdout + r.stderr


@pytest.mark.parametrize(
    ("args", "kwargs"),
    [
        (
            ["sum", "--missing", "drop", "--relation", "add-remove", "--n", "900"],
            {"missing": "drop", "relation": "add-remove", "n": 900},
        ),
        (["mean", "--missing", "impute", "--impute", "26"], {"missing": "impute", "impute": 26}),
        (
            ["variance", "--missing", "impute", "--impute", "26.5"],
            {"missing": "impute", "impute": 26.5},
        ),
    ],
)
def test_missing_policies_read_in_chunks(cli, tmp_path: Path, monkeypatch, args, kwargs):
    """--missing drop/impute read the file block by block: each chunk gets the policy,
    and the release equals the in-memory one (pandas, the same seed)."""
    rng = np.random.default_rng(5)
    bmi = rng.uniform(15, 45, 800)
    cells = [
        "" if i % 37 == 0 else ('""' if i % 53 == 0 else repr(float(v))) for i, v in enumerate(bmi)
    ]
    text = ["bmi,id"] + [f"{c},{i}" for i, c in enumerate(cells)]  # a blank cell, not line
    p = tmp_path / "m.csv"
    p.write_text("\n".join(text) + "\n")
    got = _streamed_json(
        cli, monkeypatch, [args[0], str(p), "-c", "bmi", "-b", "15", "45", *args[1:]]
    )
    df = pd.read_csv(p)
    assert df["bmi"].isna().sum() == 22 + 16 - 1  # blank and "" cells (0 is both kinds)
    want = snapcore.release(
        args[0],
        df,
        column="bmi",
        data_bounds=(15, 45),
        epsilon=1,
        source=snapcore.SeededSource("s"),
        **kwargs,
    )
    assert got["value"] == want.value and got["n"] == want.n


def test_missing_policy_checked_before_reading(cli, tmp_path: Path):
    p = tmp_path / "m.csv"
    p.write_text("bmi\n1\n\n2\n")
    r = cli(
        "release",
        "mean",
        str(p),
        "-c",
        "bmi",
        "-b",
        "0",
        "5",
        "-e",
        "1",
        "--missing",
        "drop",
        "--json",
    )
    err = json.loads(r.stdout)["error"]
    assert err["parameter"] == "--missing" and r.exit_code == 2


@pytest.mark.parametrize(
    ("args", "kwargs", "keys"),
    [
        (["count", "--n", "5000"], {"n": 5000}, "1,2,3"),
        (["mean", "-c", "bmi", "-b", "15", "45", "--group-sizes", "1=0,2=0,3=0"], None, "1,2,3"),
        (
            ["sum", "-c", "bmi", "-b", "15", "45", "--n", "900", "--missing", "drop"],
            {"column": "bmi", "data_bounds": (15, 45), "n": 900, "missing": "drop"},
            "1,2,3",
        ),
        (
            ["histogram", "-c", "bmi", "--bins", "15,25,35,45", "--n", "900", "--missing", "drop"],
            {"column": "bmi", "bins": [15.0, 25.0, 35.0, 45.0], "n": 900, "missing": "drop"},
            "north,2,3",
        ),
    ],
)
def test_group_by_reads_in_chunks(cli, tmp_path: Path, monkeypatch, args, kwargs, keys):
    """--by reads the file block by block, one partial state per key: the same release
    as the whole table in memory (the same seed), keys matched by exact value (a field
    1.0 is the key 1), blank keys and keys outside the key set in no group."""
    rng = np.random.default_rng(9)
    n = 700
    g = rng.choice(["1.0", "2", "3.0", "", "7", "north"], n)
    bmi = rng.uniform(15, 45, n)
    cells = ["" if i % 41 == 0 else repr(float(v)) for i, v in enumerate(bmi)]
    p = tmp_path / "g.csv"
    p.write_text("g,bmi\n" + "".join(f"{a},{b}\n" for a, b in zip(g, cells, strict=True)))
    from snapcore.data._files import cell

    key_list = [cell(k) for k in keys.split(",")]
    table = {"g": [cell(a) for a in g], "bmi": [cell(b) for b in cells]}
    if kwargs is None:  # group sizes are public: count them, and drop the blank cells first
        keep = [i for i, b in enumerate(table["bmi"]) if b is not None]
        table = {k: [v[i] for i in keep] for k, v in table.items()}
        sizes = {k: sum(1 for a in table["g"] if a == k) for k in key_list}
        p.write_text("g,bmi\n" + "".join(f"{g[i]},{cells[i]}\n" for i in keep))
        args = [*args[:-1], ",".join(f"{k}={sizes[k]}" for k in key_list)]
        kwargs = {"column": "bmi", "data_bounds": (15, 45), "group_sizes": sizes}
    got = _streamed_json(
        cli, monkeypatch, [args[0], str(p), *args[1:], "--by", "g", "--keys", keys]
    )
    want = snapcore.release(
        args[0],
        table,
        by="g",
        keys=key_list,
        epsilon=1,
        source=snapcore.SeededSource("s"),
        **kwargs,
    )
    assert got["values"] == [list(v) if isinstance(v, tuple) else v for v in want.values.values()]
    assert [grp["n"] for grp in got["groups"]] == [want[k].n for k in key_list]


def test_group_by_parquet_equals_csv(cli, tmp_path: Path):
    df = pd.DataFrame({"g": [1.0, 2.0, 2.0, 3.0, None, 1.0] * 50, "x": np.arange(300) % 17 * 1.0})
    df.to_parquet(tmp_path / "t.parquet")
    df.to_csv(tmp_path / "t.csv", index=False)
    out = []
    for name in ("t.parquet", "t.csv"):
        got = cli.json(
            "release",
            "sum",
            str(tmp_path / name),
            "-c",
            "x",
            "-b",
            "0",
            "20",
            "--by",
            "g",
            "--keys",
            "1,2,4",
            "--n",
            "400",
            "-e",
            "1",
            "--seed",
            "p",
            "--json",
        )
        out.append(got["values"])
    assert out[0] == out[1]


# -- reading: one reader, whatever the source --------------------------------------------


def test_parquet_on_standard_input_is_found_by_its_magic_bytes(cli, tmp_path: Path):
    path = tmp_path / "d.parquet"
    pq.write_table(pa.table({"x": [0.5, 1.5, 2.5]}), path)
    args = ["-c", "x", "-b", "0", "4", "-e", "1", "--seed", "m", "--json"]
    by_magic = cli.json("release", "mean", "-", *args, input=path.read_bytes())
    by_name = cli.json("release", "mean", str(path), *args)
    assert by_magic["value"] == by_name["value"] and by_magic["n"] == 3
    message = cli.error(
        3, "data", "release", "mean", "-", "--format", "csv", *args, input=path.read_bytes()
    )
    assert "--format parquet" in message


#: Column x within [0, 1], epsilon 1, JSON output.
_COLUMN_X = ("-c", "x", "-b", "0", "1", "-e", "1", "--json")


@pytest.mark.parametrize("statistic", ["mean", "sum", "variance"])
def test_a_header_only_csv_has_no_records(cli, statistic):
    message = cli.error(3, "data", "release", statistic, "-", *_COLUMN_X, input=b"x,y\r\n")
    assert "has no records" in message and "--n" not in message


def test_a_cell_of_thousands_of_digits_is_read_exactly(cli, tmp_path: Path):
    """A 5,000-digit integer is a number like any other (clamped to the data bounds),
    not a usage error that depends on its length."""
    path = tmp_path / "d.csv"
    path.write_text("x\n1\n" + "9" * 5000 + "\n2\n")
    same = tmp_path / "e.csv"
    same.write_text("x\n1\n4\n2\n")  # the record clamped to the upper bound
    args = ["-c", "x", "-b", "0", "4", "-e", "1", "--seed", "d", "--json"]
    assert (
        cli.json("release", "sum", str(path), *args)["value"]
        == cli.json("release", "sum", str(same), *args)["value"]
    )


def test_counting_reads_no_cell(cli):
    """A count reads the number of records only: a cell no rule reads refuses nothing."""
    data = b"x,y\n1e999,a\n2,b\n"
    out = cli.json(
        "release", "count", "-", "--n", "10", "-e", "1", "--seed", "c", "--json", input=data
    )
    assert out["statistic"] == "count"
    cli.error(3, "data", "release", "sum", "-", *_COLUMN_X, input=data)


def test_an_option_item_beyond_the_double_range_is_a_usage_error(cli):
    message = cli.error(
        2,
        "usage",
        "release",
        "histogram",
        "-c",
        "region",
        "--categories",
        "north,1e999",
        "-e",
        "1",
        "--json",
    )
    assert message.startswith("--categories") and "1e999" not in message
