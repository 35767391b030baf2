"""Errors name the parameter at fault as the interface in use spells it.

The Python API names keywords (``n=``) and carries the keyword as
``ParameterError.parameter``; the command line names its own flags (``--n``), in the
text and, with ``--json``, as the error's ``parameter`` field.  One case per flag of
``snapcore release`` that is also a keyword of :func:`snapcore.release`.
"""

from __future__ import annotations

import inspect
import json
import re
from pathlib import Path
from typing import Any

import click
import pytest

import snapcore
from snapcore.cli._release import release as release_command
from snapcore.errors import ParameterError, keyword, parameter_name, spelling
from snapcore.plugins._manager import resolve_statistic

#: A data value that must never appear in a message.
SECRET = "73.0625"

#: Python keyword -> the flag snapcore release spells it as (written here by hand).
FLAGS = {
    "column": "--column",
    "data_bounds": "--data-bounds",
    "epsilon": "--epsilon",
    "gamma": "--gamma",
    "clamp_bounds": "--clamp",
    "n": "--n",
    "relation": "--relation",
    "bins": "--bins",
    "categories": "--categories",
    "other": "--other",
    "out_of_range": "--out-of-range",
    "by": "--by",
    "keys": "--keys",
    "group_sizes": "--group-sizes",
    "missing": "--missing",
    "impute": "--impute",
    "backend": "--backend",
    "label": "--label",
    "threads": "--threads",
}

B = ("-b", "0", "100")
# keyword: (CLI arguments after the file, Python call arguments)
CASES: dict[str, tuple[tuple[str, ...], tuple[str, dict[str, Any]]]] = {
    "column": (
        ("mean", "-c", "nope", *B, "-e", "1"),
        ("mean", {"column": "nope", "data_bounds": (0, 100)}),
    ),
    "data_bounds": (
        ("mean", "-c", "x", "-b", "5", "1", "-e", "1"),
        ("mean", {"column": "x", "data_bounds": (5, 1)}),
    ),
    "epsilon": (
        ("mean", "-c", "x", *B, "-e", "-1"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "epsilon": -1}),
    ),
    "gamma": (
        ("mean", "-c", "x", *B, "-e", "1", "-g", "2"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "gamma": 2}),
    ),
    "clamp_bounds": (
        ("mean", "-c", "x", *B, "-e", "1", "--clamp", "5", "1"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "clamp_bounds": (5, 1)}),
    ),
    "n": (("count", "-e", "1"), ("count", {})),
    "relation": (
        ("mean", "-c", "x", *B, "-e", "1", "--relation", "add-remove", "--n", "9"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "relation": "add-remove", "n": 9}),
    ),
    "bins": (
        ("histogram", "-c", "x", "--bins", "3,1", "-e", "1"),
        ("histogram", {"column": "x", "bins": [3.0, 1.0]}),
    ),
    "categories": (
        ("histogram", "-c", "c", "--categories", "a,a", "-e", "1"),
        ("histogram", {"column": "c", "categories": ["a", "a"]}),
    ),
    "other": (
        ("histogram", "-c", "x", "--bins", "0,1", "--other", "-e", "1"),
        ("histogram", {"column": "x", "bins": [0.0, 1.0], "other": True}),
    ),
    "out_of_range": (
        ("histogram", "-c", "c", "--categories", "a,b", "--out-of-range", "drop", "-e", "1"),
        ("histogram", {"column": "c", "categories": ["a", "b"], "out_of_range": "drop"}),
    ),
    "by": (
        ("count", "--by", "nope", "--keys", "1", "--n", "9", "-e", "1"),
        ("count", {"by": "nope", "keys": [1], "n": 9}),
    ),
    "keys": (
        ("count", "--by", "g", "--keys", "1,1.0", "--n", "9", "-e", "1"),
        ("count", {"by": "g", "keys": [1, 1.0], "n": 9}),
    ),
    "group_sizes": (
        (
            "count",
            "--by",
            "g",
            "--keys",
            "1,2",
            "--group-sizes",
            "1=2,2=2",
            "--relation",
            "add-remove",
            "--n",
            "9",
            "-e",
            "1",
        ),
        (
            "count",
            {
                "by": "g",
                "keys": [1, 2],
                "group_sizes": {1: 2, 2: 2},
                "relation": "add-remove",
                "n": 9,
            },
        ),
    ),
    "missing": (
        ("mean", "-c", "x", *B, "-e", "1", "--missing", "drop"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "missing": "drop"}),
    ),
    "impute": (
        ("mean", "-c", "x", *B, "-e", "1", "--missing", "impute"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "missing": "impute"}),
    ),
    "backend": (
        ("mean", "-c", "x", *B, "-e", "1", "--backend", "nope"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "backend": "nope"}),
    ),
    "label": (
        ("mean", "-c", "x", *B, "-e", "1", "--label", " "),
        ("mean", {"column": "x", "data_bounds": (0, 100), "label": " "}),
    ),
    "threads": (
        ("mean", "-c", "x", *B, "-e", "1", "--threads", "0"),
        ("mean", {"column": "x", "data_bounds": (0, 100), "threads": 0}),
    ),
}

ROWS = [("x", "g", "c"), (SECRET, "1", "a"), ("12.5", "2", "b"), ("40", "1", "a"), ("7", "2", "b")]


def _data() -> dict[str, list[Any]]:
    cols = list(zip(*ROWS[1:], strict=True))
    return {
        "x": [float(v) for v in cols[0]],
        "g": [int(v) for v in cols[1]],
        "c": list(cols[2]),
    }


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    p = tmp_path / "t.csv"
    p.write_text("\n".join(",".join(r) for r in ROWS) + "\n")
    return p


def _spelled_in_python(message: str, kw: str) -> bool:
    return re.search(rf"(?<![\w-]){kw}(?![\w-])", message) is not None


def test_every_flag_that_is_a_keyword_has_a_case():
    py = set(inspect.signature(snapcore.release).parameters)
    py |= set(resolve_statistic("histogram").options)
    cli = {p.name for p in release_command.params if isinstance(p, click.Option)}
    assert cli & py == set(CASES) == set(FLAGS)


@pytest.mark.parametrize("kw", sorted(CASES))
def test_python_error_names_the_keyword(kw: str):
    stat, kwargs = CASES[kw][1]
    kwargs = {"epsilon": 1, **kwargs}
    with pytest.raises(ParameterError) as info:
        snapcore.release(stat, _data(), **kwargs)
    exc = info.value
    assert exc.parameter == kw and exc.shown_as == kw
    message = str(exc)
    assert _spelled_in_python(message, kw), message
    assert "--" not in message, message
    assert SECRET not in message


@pytest.mark.parametrize("kw", sorted(CASES))
@pytest.mark.parametrize("as_json", [False, True])
def test_cli_error_names_the_flag(cli, kw: str, as_json: bool, csv_file: Path):
    args, _ = CASES[kw]
    argv = ["release", args[0], str(csv_file), *args[1:]] + (["--json"] if as_json else [])
    r = cli(*argv)
    assert r.exit_code in (2, 3), (r.exit_code, r.stdout, r.stderr)
    flag = FLAGS[kw]
    if as_json:
        err = json.loads(r.stdout)["error"]
        message = err["message"]
        assert err["parameter"] == flag, err
    else:
        assert r.stdout == ""
        message = r.stderr
    assert flag in message, message
    if "_" in kw:  # other keywords are words of the prose too ("n is public", "impute")
        assert not _spelled_in_python(message, kw), message
    assert f"{kw}=" not in message, message
    assert SECRET not in message


def test_spelling_is_context_local_and_restored():
    def cli(name: str) -> tuple[str, bool] | None:
        return {"n": ("--n", False), "other": ("--other", True)}.get(name)

    assert keyword("missing", "drop") == "missing='drop'"
    with spelling(cli):
        assert keyword("n") == "--n" and keyword("other", True) == "--other"
        assert parameter_name("precision") == "precision"  # not a flag: Python's name
        assert ParameterError("x", parameter="n").shown_as == "--n"
    assert keyword("n") == "n=" and parameter_name("n") == "n"
    assert ParameterError("x").parameter is None  # parameter= is optional


def test_parameter_survives_pickling():
    import pickle

    exc = pickle.loads(pickle.dumps(ParameterError("n must be ...", parameter="n")))
    assert isinstance(exc, ParameterError) and exc.parameter == "n" and str(exc) == "n must be ..."


@pytest.mark.parametrize(
    ("args", "flag"),
    [
        (("count", "--keys", "1,2", "--n", "5", "-e", "1"), "--by"),
        (("count", "--by", "g", "--n", "5", "-e", "1"), "--keys"),
        (("histogram", "-c", "x", "--bins", "1,x", "-e", "1"), "--bins"),
        (("count", "--by", "g", "--keys", "1", "--group-sizes", "1", "-e", "1"), "--group-sizes"),
        (("mean", "-c", "x", "-b", "0", "1", "-e", "1", "-o", "k"), "--option"),
    ],
)
def test_cli_own_usage_errors_name_the_flag(cli, args, flag, csv_file: Path):
    argv = ["release", args[0], str(csv_file), *args[1:], "--json"]
    r = cli(*argv)
    err = json.loads(r.stdout)["error"]
    assert r.exit_code == 2 and err["parameter"] == flag and flag in err["message"], err
    assert err["type"] == "UsageError"
