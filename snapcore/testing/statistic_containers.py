"""The containers a statistic's records are handed to snapcore in: lists, tuples,
NumPy arrays of every dtype that holds them exactly, pandas and polars series and
frames, mappings of columns (:func:`containers`)."""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any

import attrs
import numpy as np

from snapcore.testing.statistic_datasets import exactly_as

__all__ = ["Container", "containers"]


@attrs.frozen(kw_only=True)
class Container:
    """A way to hand records to snapcore.

    Attributes
    ----------
    name : str
        ``list``, ``ndarray[float32]``, ``pandas.Series[object]``, ...
    build : callable
        ``build(records) -> (data, column)``, or None when the container cannot hold
        these records exactly (an int8 array and 0.5, a str array and 1).
    expr : callable
        ``expr(records) -> str``: a Python expression that builds the same data (for
        the reproduction line; ``np``, ``pd``, ``pl`` and ``Fraction`` are imported).
    """

    name: str
    build: Callable[[list[Any]], tuple[Any, Any] | None]
    expr: Callable[[list[Any]], str]


def _object_array(records: list[Any]) -> np.ndarray:
    arr = np.empty(len(records), dtype=object)
    arr[:] = records
    return arr


def _rl(records: list[Any]) -> str:
    return repr(list(records))


def _col(records: list[Any], j: int) -> list[Any]:
    return [r[j] for r in records]


def _numeric_dtype_container(dtype: Any, columns: int) -> Container:
    name = np.dtype(dtype).name

    def build(records: list[Any]) -> tuple[Any, Any] | None:
        flat = [v for r in records for v in (r if columns >= 2 else (r,))]
        vals = [exactly_as(v, dtype) for v in flat]
        if any(v is None for v in vals):
            return None
        arr = np.array(vals, dtype=dtype)
        return (arr.reshape(len(records), columns) if columns >= 2 else arr), None

    def expr(records: list[Any]) -> str:
        shape = f".reshape({len(records)}, {columns})" if columns >= 2 else ""
        flat = [v for r in records for v in (r if columns >= 2 else (r,))]
        return f"np.array({flat!r}, dtype=np.{name}){shape}"

    return Container(name=f"ndarray[{name}]", build=build, expr=expr)


def containers(columns: int, records: str = "numeric") -> list[Container]:
    """Every container snapcore accepts for records of this shape.

    Python lists (the records' own, mixed types) and tuples; NumPy arrays of every
    numeric dtype that holds the records exactly, object arrays and (categories) str
    arrays; pandas Series and DataFrame columns of several dtypes; polars Series and
    DataFrames when polars is importable; and mappings of columns.
    """
    out: list[Container] = []
    names = [f"c{j}" for j in range(max(columns, 1))]
    col_arg: Any = names[0] if columns <= 1 else tuple(names)

    def mapping(records: list[Any]) -> dict[str, list[Any]]:
        if columns >= 2:
            return {nm: _col(records, j) for j, nm in enumerate(names)}
        return {names[0]: list(records)}

    out.append(Container(name="list", build=lambda r: (list(r), None), expr=_rl))
    out.append(
        Container(name="tuple", build=lambda r: (tuple(r), None), expr=lambda r: repr(tuple(r)))
    )
    if columns >= 2:
        out.append(
            Container(
                name="ndarray[object]",
                build=lambda r: (
                    np.array([list(x) for x in r], dtype=object).reshape(-1, columns),
                    None,
                ),
                expr=lambda r: f"np.array({[list(x) for x in r]!r}, dtype=object)",
            )
        )
    else:
        out.append(
            Container(
                name="ndarray[object]",
                build=lambda r: (_object_array(r), None),
                expr=lambda r: f"np.array({_rl(r)}, dtype=object)",
            )
        )
    dtypes: list[Any] = [np.float64, np.float32, np.float16, np.longdouble]
    dtypes += [np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64]
    out += [_numeric_dtype_container(dt, columns) for dt in dtypes]
    if records == "categorical" and columns <= 1:
        out.append(
            Container(
                name="ndarray[str]",
                build=lambda r: (
                    (np.array(r, dtype=str), None)
                    if r and all(isinstance(v, str) for v in r)
                    else None
                ),
                expr=lambda r: f"np.array({_rl(r)}, dtype=str)",
            )
        )
    out.append(
        Container(
            name="mapping",
            build=lambda r: (mapping(r), col_arg),
            expr=lambda r: repr(mapping(r)),
        )
    )
    out += _pandas_containers(columns, records, names, col_arg)
    out += _polars_containers(columns, names, col_arg)
    return out


def _series_expr(kind: str, r: list[Any]) -> str:
    return f"pd.Series({_rl(r)}, dtype={kind!r})"


def _frame_expr(kind: str, names: list[str], r: list[Any]) -> str:
    if len(names) == 1:
        cols = {names[0]: list(r)}
    else:
        cols = {nm: _col(r, j) for j, nm in enumerate(names)}
    body = ", ".join(f"{nm!r}: pd.Series({v!r}, dtype={kind!r})" for nm, v in cols.items())
    return "pd.DataFrame({" + body + "})"


def _pandas_containers(
    columns: int, records: str, names: list[str], col_arg: Any
) -> list[Container]:
    try:
        import pandas as pd
    except ImportError:  # pragma: no cover - pandas is in the test extra
        return []
    out: list[Container] = []
    kinds: list[str] = ["object", "float64", "int64"]
    if records == "categorical":
        kinds += ["category", "string"]

    def series(vals: list[Any], kind: str) -> Any:
        if kind == "float64" and any(exactly_as(v, np.float64) is None for v in vals):
            return None
        if kind == "int64" and any(exactly_as(v, np.int64) is None for v in vals):
            return None
        if kind == "string" and not all(isinstance(v, str) for v in vals):
            return None
        if kind == "category" and (
            not vals or len({type(v) for v in vals}) != 1 or isinstance(vals[0], np.generic)
        ):
            return None
        if kind in ("float64", "int64"):
            vals = [exactly_as(v, kind) for v in vals]
        return pd.Series(vals if kind != "object" else _object_array(vals), dtype=kind)

    for kind in kinds:
        if columns <= 1:

            def build_s(r: list[Any], kind: str = kind) -> tuple[Any, Any] | None:
                s = series(list(r), kind)
                return None if s is None else (s, None)

            def build_f(r: list[Any], kind: str = kind) -> tuple[Any, Any] | None:
                s = series(list(r), kind)
                return None if s is None else (pd.DataFrame({names[0]: s}), col_arg)

            out.append(
                Container(
                    name=f"pandas.Series[{kind}]",
                    build=build_s,
                    expr=functools.partial(_series_expr, kind),
                )
            )
            out.append(
                Container(
                    name=f"pandas.DataFrame[{kind}]",
                    build=build_f,
                    expr=functools.partial(_frame_expr, kind, names),
                )
            )
        else:

            def build_m(r: list[Any], kind: str = kind) -> tuple[Any, Any] | None:
                cols = [series(_col(r, j), kind) for j in range(columns)]
                if any(c is None for c in cols):
                    return None
                return pd.DataFrame(dict(zip(names, cols, strict=True))), col_arg

            out.append(
                Container(
                    name=f"pandas.DataFrame[{kind}]",
                    build=build_m,
                    expr=functools.partial(_frame_expr, kind, names),
                )
            )
    return out


def _holds_exactly(given: list[Any], held: list[Any]) -> bool:
    """Whether a container kept every record as the same exact value (or kind)."""
    from snapcore.data._values import category_key

    if len(given) != len(held):
        return False
    for a, b in zip(given, held, strict=True):
        if a is None or b is None:
            if (a is None) != (b is None):
                return False
            continue
        try:
            if category_key(a) != category_key(b):
                return False
        except Exception:  # a record the key does not read (NaN, bytes, ...): compare as is
            if not (a is b or (type(a) is type(b) and repr(a) == repr(b))):
                return False
    return True


def _polars_containers(columns: int, names: list[str], col_arg: Any) -> list[Container]:
    try:
        pl = importlib.import_module("polars")
    except ImportError:
        return []

    def columns_of(r: list[Any]) -> dict[str, list[Any]]:
        if columns >= 2:
            return {nm: _col(r, j) for j, nm in enumerate(names)}
        return {names[0]: list(r)}

    def frame(r: list[Any]) -> Any:
        data = columns_of(r)
        try:
            f = pl.DataFrame(data, strict=True)
        except Exception:  # polars refuses mixed types: not this container
            return None
        # polars may still convert (0.1 next to a float32 becomes float32): a container
        # that does not hold the records exactly is not a way of giving them.
        for nm, recs in data.items():
            if not _holds_exactly(recs, f[nm].to_list()):
                return None
        return f

    def build_s(r: list[Any]) -> tuple[Any, Any] | None:
        f = frame(r)
        return None if f is None else (f[names[0]], None)

    def build_f(r: list[Any]) -> tuple[Any, Any] | None:
        f = frame(r)
        return None if f is None else (f, col_arg)

    out = [
        Container(
            name="polars.DataFrame",
            build=build_f,
            expr=lambda r: f"pl.DataFrame({columns_of(r)!r})",
        )
    ]
    if columns <= 1:
        out.append(
            Container(name="polars.Series", build=build_s, expr=lambda r: f"pl.Series({_rl(r)})")
        )
    return out
