"""The exception classes (snapcore.errors): the hierarchy its docstring draws is the real one,
and errors about data depend on no private value."""

from __future__ import annotations

import builtins
import inspect
import re

import numpy as np
import pytest

import snapcore
from snapcore import errors
from snapcore.errors import (
    BackendUnavailableError,
    ParameterError,
    PluginError,
    SnapcoreError,
    SourceExhaustedError,
)
from tests.helpers.plants import PLANTS


def test_error_hierarchy():
    for cls in (ParameterError, PluginError, BackendUnavailableError, SourceExhaustedError):
        assert issubclass(cls, SnapcoreError)
    assert issubclass(ParameterError, ValueError)
    assert issubclass(BackendUnavailableError, ImportError)


def _drawn_tree() -> dict[str, set[str]]:
    """Each class in the docstring's tree -> the names of its bases there: the parent
    in the tree and the classes in parentheses."""
    doc = errors.__doc__ or ""
    tree = doc.split("The hierarchy::", 1)[1].split("\n\n", 2)[1]
    lines = tree.splitlines()
    path = [lines[0].strip()]  # the root, Exception
    bases: dict[str, set[str]] = {}
    for line in lines[1:]:
        # four spaces of the literal block, then one "│   " or "    " per level
        found = re.match(r"^    ((?:[│ ]   )*)[├└]── (\w+)(?: \((\w+)\))?", line)
        if found is None:  # a description continued on its own line
            continue
        depth = len(found[1]) // 4 + 1
        name = found[2]
        del path[depth:]
        bases[name] = {path[-1]} | ({found[3]} if found[3] else set())
        path.append(name)
    return bases


def test_the_docstrings_hierarchy_is_the_real_one():
    drawn = _drawn_tree()
    defined = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == errors.__name__
    }
    drawn_here = {name for name in drawn if not hasattr(builtins, name)}
    assert defined == drawn_here, "a class missing from the docstring or drawn but not defined"
    for name in defined:
        cls = getattr(errors, name)
        want = {getattr(errors, b, None) or getattr(builtins, b) for b in drawn[name]}
        assert set(cls.__bases__) == want, name


# -- errors never depend on a private value beyond its type ----------------------------
#
# Each scenario is run with two different plants: a distinctive value, a distinctive
# length (digit count) and a distinctive number of records.  The error must have the
# same kind and the very same message for both, and neither plant (nor its length or
# count) may appear in it.


def _texts(plant):
    v = plant["value"]
    return {str(v), f"{float(v):g}", str(plant["digits"]), str(plant["count"]), str(v)[:8]}


def _long_digits(plant):
    return "7" * plant["digits"]


def _bad_records(plant):
    """A numeric column with one text record (the planted value's digits)."""
    return [0.5] * plant["count"] + [str(plant["value"])]


def _long_text_records(plant):
    """A numeric column with a text record of more than 4,300 digits (Python refuses
    to convert such a string to an int without a limit)."""
    return [0.5] * plant["count"] + [_long_digits(plant)]


class _ValuesPlugin(snapcore.Statistic):
    """A plugin whose prepare returns f(D) in a type Prepared refuses."""

    name = "planted_values"
    needs_data_bounds = False

    def __init__(self, kind):
        self.kind = kind

    def prepare(self, data, *, data_bounds, n, relation, **options):
        x = sum(data.column(0).fractions())
        value = np.int64(int(x) % 2**62) if self.kind == "numpy" else [x, x]
        return snapcore.Prepared(
            statistic=self.name,
            relation=relation,
            values=(value,),
            labels=("v",),
            sensitivity=1,
            value_range=(0, 2**63),
        )


def _prepared(kind):
    def run(plant):
        data = [plant["value"]] * 3 + [1] * plant["count"]
        snapcore.release(_ValuesPlugin(kind), data, epsilon=1, data_bounds=None)

    return run


SCENARIOS = {
    "text-record": lambda p: snapcore.release(
        "mean", _bad_records(p), data_bounds=(0, 1), epsilon=1
    ),
    "long-text-record": lambda p: snapcore.release(
        "mean", _long_text_records(p), data_bounds=(0, 1), epsilon=1
    ),
    "long-text-category-record": lambda p: snapcore.release(
        "histogram", [*_long_text_records(p), b"x"], categories=[1, 2], epsilon=1
    ),
    "bytes-record": lambda p: snapcore.release(
        "sum", [p["value"]] * p["count"] + [b"1"], data_bounds=(0, 1), epsilon=1
    ),
    "missing-record": lambda p: snapcore.release(
        "sum", [p["value"]] * p["count"] + [None], data_bounds=(0, 1), epsilon=1
    ),
    "prepared-numpy-int": _prepared("numpy"),
    "prepared-list": _prepared("list"),
    "wrong-n": lambda p: snapcore.release(
        "mean", [0.5] * p["count"], data_bounds=(0, 1), epsilon=1, n=5
    ),
    "wrong-group-size": lambda p: snapcore.release(
        "mean",
        {"g": [1] * p["count"] + [2], "x": [0.5] * (p["count"] + 1)},
        column="x",
        by="g",
        keys=[1, 2],
        group_sizes={1: 5, 2: 1},
        data_bounds=(0, 1),
        epsilon=1,
        relation="replace",
    ),
    "not-doubles": lambda p: snapcore.data.as_dataset([p["value"]] * p["count"]).numeric(0),
}


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_an_error_about_data_depends_on_no_value_length_or_count(scenario):
    run = SCENARIOS[scenario]
    seen = []
    for plant in PLANTS:
        with pytest.raises(ParameterError) as info:
            run(plant)
        message = str(info.value)
        for text in _texts(plant):
            assert text not in message, (scenario, text, message)
        seen.append((type(info.value), message, getattr(info.value, "parameter", None)))
    assert seen[0] == seen[1], scenario


def test_a_long_integer_record_is_read_exactly():
    for plant in PLANTS:
        big = int(_long_digits(plant)[:50]) * 10 ** (plant["digits"] - 50)  # > 4,300 digits
        col = snapcore.data.as_dataset([big, -big, 3]).column(0)
        assert col.fractions() == [big, -big, 3]
