"""The one rule for every value that enters snapcore (docs/semantics.md, "Values that enter").

A value is accepted only if it is an exact real number that snapcore reads exactly,
and it is then used **as that exact value**; anything else is refused with a
:class:`~snapcore.errors.ParameterError` that names the parameter, the rule and the
type.  Accepted, and how each is read:

- ``int`` (not ``bool``): itself;
- ``float`` (finite): ``float.as_integer_ratio()``;
- ``fractions.Fraction``: numerator / denominator;
- ``decimal.Decimal`` (finite): ``Decimal.as_integer_ratio()``, for exponents within
  ``±MAX_DECIMAL_EXPONENT``;
- NumPy integers (every width, signed or unsigned): ``int(x)``;
- NumPy floats (float16, float32, float64; finite): ``x.as_integer_ratio()``; long
  doubles (finite) from their bits, so a long double keeps its 64-bit mantissa whatever
  the FPU's precision control;
- ``gmpy2.mpz`` / ``gmpy2.mpq``: ``int(x)`` / numerator, denominator;
- ``gmpy2.mpfr`` (finite): ``x.as_mantissa_exp()``, for binary exponents within
  ``±MAX_BINARY_EXPONENT``.

Refused: ``bool`` and ``numpy.bool_`` (truth values are not numbers), strings (even
of digits), bytes, ``bytearray``, ``memoryview``, ``None``, pandas ``NA``/``NaT``,
NaN, ±inf, complex numbers, mappings, dates and every other type.

Values about private data are reported by type only, never by value or position
(:func:`read_value`, :func:`read_values`, :func:`read_column`); parameters are
public and are shown, kept short by :func:`snapcore.errors.show`.

A NumPy masked array is read as its records with each masked element missing
(:func:`unmasked`); parameters given as containers (bin edges, categories) are read
item by item by the same rule (:func:`parameter_items`), whatever the container.

Missing values (``None``, NaN, pandas ``NA``, ``NaT``) in a data column raise one
error, :class:`~snapcore.errors.MissingValueError`, by the rule of
:mod:`snapcore.data._missing` (``is_missing``, ``check_missing``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction
from typing import Any

import numpy as np

from snapcore.data._missing import check_missing, is_missing, missing_values_error, with_nulls
from snapcore.errors import (
    ParameterError,
    parameter_name,
    show,
)

__all__ = [
    "ACCEPTED",
    "MAX_BINARY_EXPONENT",
    "MAX_DECIMAL_EXPONENT",
    "CategoryKey",
    "Column",
    "ReadValues",
    "category_key",
    "category_keys",
    "exact_ratio",
    "is_masked",
    "key_positions",
    "parameter_items",
    "read_column",
    "read_double",
    "read_double_pair",
    "read_real",
    "read_value",
    "read_values",
    "type_name",
    "unmasked",
]

#: The accepted types, in words (used in messages).
ACCEPTED = "int, float, Fraction, Decimal, a NumPy integer or float, or a gmpy2 mpz/mpq/mpfr"
#: A Decimal ``c·10**e`` with ``|e|`` above this is refused (reading it exactly would
#: build an integer of millions of digits).
MAX_DECIMAL_EXPONENT = 100_000
#: An mpfr ``m·2**e`` with ``|e|`` above this is refused, for the same reason.
MAX_BINARY_EXPONENT = 1 << 22

_RULE = "must be a finite real number read exactly"


class _Refused(Exception):
    """Internal: why a value is not an exact real (a phrase without the value)."""


def type_name(value: Any) -> str:
    """The type of ``value`` for messages: ``str``, ``numpy.float32``, ``decimal.Decimal``."""
    t = type(value)
    mod = t.__module__.split(".")[0]
    return t.__name__ if mod == "builtins" else f"{mod}.{t.__name__}"


def exact_ratio(value: Any) -> tuple[int, int]:
    """``value`` as an exact ``(numerator, denominator)`` pair, in lowest terms.

    The single reader behind every function here (see the module docstring for the
    accepted types).  Raises ``ParameterError`` naming only the type.
    """
    r, why = _try(value)
    if r is None:
        raise ParameterError(f"value {_RULE} ({ACCEPTED}); got {why}")
    return r


def _try(value: Any) -> tuple[tuple[int, int] | None, str]:
    """``(_ratio(value), "")`` or ``(None, why)``; callers raise outside any handler, so
    no exception context is chained to their errors."""
    try:
        return _ratio(value), ""
    except _Refused as exc:
        return None, str(exc)


def _ratio(value: Any) -> tuple[int, int]:
    t = type(value)
    if t is float:
        if value - value != 0.0:
            raise _Refused(f"{'a NaN' if value != value else 'an infinite'} float")
        n, d = value.as_integer_ratio()
        return (n, d)
    if t is int:
        return (value, 1)
    if t is Fraction:
        return (value.numerator, value.denominator)
    if isinstance(value, bool | np.bool_):
        raise _Refused(f"{type_name(value)} (truth values are not numbers)")
    if isinstance(value, np.generic):
        if isinstance(value, np.integer):
            return (int(value), 1)
        if isinstance(value, np.floating):
            if not np.isfinite(value):
                raise _Refused(
                    f"{'a NaN' if value != value else 'an infinite'} {type_name(value)}"
                )
            if value.dtype.itemsize > 8:
                return _wide_float_ratio(value)
            n, d = value.as_integer_ratio()
            return (int(n), int(d))
        raise _Refused(type_name(value))
    if isinstance(value, int):  # int subclasses (not bool, refused above)
        return (int(value), 1)
    if isinstance(value, float):
        return _ratio(float(value))
    if isinstance(value, Fraction):
        return (int(value.numerator), int(value.denominator))
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise _Refused(f"{'a NaN' if value.is_nan() else 'an infinite'} decimal.Decimal")
        exp = value.as_tuple().exponent
        if isinstance(exp, int) and abs(exp) > MAX_DECIMAL_EXPONENT:
            raise _Refused(f"a decimal.Decimal with exponent beyond ±{MAX_DECIMAL_EXPONENT}")
        n, d = value.as_integer_ratio()
        return (n, d)
    if t.__module__ == "gmpy2":
        name = t.__name__
        if name == "mpz":
            return (int(value), 1)
        if name == "mpq":
            return (int(value.numerator), int(value.denominator))
        if name == "mpfr":
            if not value.is_finite():
                raise _Refused(f"{'a NaN' if value != value else 'an infinite'} gmpy2.mpfr")
            m, e = value.as_mantissa_exp()
            m, e = int(m), int(e)
            if abs(e) > MAX_BINARY_EXPONENT:
                raise _Refused(f"a gmpy2.mpfr with binary exponent beyond ±{MAX_BINARY_EXPONENT}")
            if m == 0:
                return (0, 1)
            return (m << e, 1) if e >= 0 else _reduce_dyadic(m, -e)
    raise _Refused("None" if value is None else type_name(value))


def _reduce_dyadic(m: int, s: int) -> tuple[int, int]:
    """``m / 2**s`` in lowest terms (``m != 0``)."""
    tz = (m & -m).bit_length() - 1
    k = min(tz, s)
    return (m >> k, 1 << (s - k))


# -- parameters (public: the value may be shown, kept short) ------------------------


def _named(name: str, parameter: str | None) -> tuple[str, str | None]:
    """(the name as the interface in use spells it, the Python keyword) for a message
    about parameter ``name``; ``parameter`` defaults to ``name`` when it is one word."""
    if parameter is None and name.isidentifier():
        parameter = name
    if parameter is not None and name.startswith(parameter):
        name = parameter_name(parameter) + name[len(parameter) :]
    return name, parameter


def read_real(
    name: str, value: Any, *, positive: bool = False, parameter: str | None = None
) -> Fraction:
    """The parameter ``value`` as an exact Fraction, else a ParameterError naming ``name``.

    Parameters
    ----------
    name : str
        The parameter's name, for the message.
    value : object
        One of the accepted types (module docstring).
    positive : bool
        Also require ``value > 0``.
    parameter : str, optional
        The Python keyword the error carries (default: ``name``, when it is one word).
    """
    r, why = _try(value)
    shown, parameter = _named(name, parameter)
    if r is None:
        raise ParameterError(
            f"{shown} {_RULE} ({ACCEPTED}); got {type_name(value)} {show(value)} ({why})",
            parameter=parameter,
        )
    n, d = r
    if positive and n <= 0:
        raise ParameterError(
            f"{shown} must be a finite number > 0, got {show(value)}", parameter=parameter
        )
    return Fraction(n, d)


def read_double(name: str, value: Any, *, parameter: str | None = None) -> Fraction:
    """A parameter that must be exactly a finite double (bounds), as a Fraction."""
    q = read_real(name, value, parameter=parameter)
    n, d = q.numerator, q.denominator
    try:
        exact = Fraction(n / d) == q  # int / int is correctly rounded
    except OverflowError:
        exact = False
    if not exact:
        shown, parameter = _named(name, parameter)
        raise ParameterError(
            f"{shown} must be exactly representable as a double, got {show(value)} "
            f"({type_name(value)})",
            parameter=parameter,
        )
    return q


def read_double_pair(
    name: str, pair: Any, *, parameter: str | None = None
) -> tuple[Fraction, Fraction]:
    """A ``(lower, upper)`` pair of exact finite doubles with ``lower < upper``."""
    shown, parameter = _named(name, parameter)
    if (
        isinstance(pair, str | bytes | bytearray | memoryview)
        or not hasattr(pair, "__len__")
        or not hasattr(pair, "__getitem__")
        or isinstance(pair, dict)
    ):
        raise ParameterError(
            f"{shown} must be a pair (lower, upper), got {type_name(pair)} {show(pair)}",
            parameter=parameter,
        )
    if len(pair) != 2:
        raise ParameterError(
            f"{shown} must be a pair (lower, upper), got {len(pair)} items", parameter=parameter
        )
    lo = read_double(f"{name}[0] (lower)", pair[0], parameter=parameter)
    hi = read_double(f"{name}[1] (upper)", pair[1], parameter=parameter)
    if not lo < hi:
        raise ParameterError(
            f"{shown} must satisfy lower < upper, got lower={show(pair[0])}, "
            f"upper={show(pair[1])}",
            parameter=parameter,
        )
    return lo, hi


# -- private values: reported by type only ------------------------------------------


def read_value(value: Any, name: str = "value") -> Fraction:
    """A private scalar as an exact Fraction; the message names the type, never the value."""
    r, why = _try(value)
    if r is None:
        raise ParameterError(f"{name} {_RULE} ({ACCEPTED}); got {why}")
    return Fraction(*r)


class ReadValues:
    """Values read exactly from a scalar container: a shape and one of two forms.

    Attributes
    ----------
    shape : tuple of int
        The container's shape.
    doubles : numpy.ndarray or None
        float64, flat, when every element is exactly a double (then it *is* the
        elements, exactly); None otherwise.
    ratios : list of (int, int) or None
        The exact ``(numerator, denominator)`` of every element, flat, when some
        element is not a double.
    """

    __slots__ = ("doubles", "ratios", "shape")

    def __init__(
        self,
        shape: tuple[int, ...],
        doubles: np.ndarray | None,
        ratios: list[tuple[int, int]] | None,
    ) -> None:
        self.shape = shape
        self.doubles = doubles
        self.ratios = ratios

    @property
    def size(self) -> int:
        """The number of elements."""
        return len(self.doubles) if self.doubles is not None else len(self.ratios or ())

    def as_ratios(self) -> list[tuple[int, int]]:
        """Every element as ``(numerator, denominator)``, exactly."""
        if self.ratios is not None:
            return self.ratios
        assert self.doubles is not None
        return [v.as_integer_ratio() for v in self.doubles.tolist()]


def _bytes_like(obj: Any) -> bool:
    return isinstance(obj, str | bytes | bytearray | memoryview)


def _is_container(obj: Any) -> bool:
    if isinstance(obj, np.ndarray):
        return obj.ndim > 0
    return isinstance(obj, Sequence) and not _bytes_like(obj)


_TWO53 = 1 << 53

#: The long double's layout: 63 (x87 80-bit extended), 112 (IEEE binary128) or 52
#: (the same as a double).
_LD_MANT = int(np.finfo(np.longdouble).nmant)


def _wide_float_ratio(value: Any) -> tuple[int, int]:
    """A finite long double's exact value, decoded from its bits.

    NumPy's ``as_integer_ratio`` for long doubles computes in long-double arithmetic,
    which on x87 obeys the FPU's precision control: a library that sets it to 53 bits
    for the whole process (some correctly rounded math libraries do) would make it
    drop mantissa bits.  The bits of the number never depend on that state.
    """
    raw = np.asarray(value, dtype=np.longdouble).tobytes()
    if _LD_MANT == 63 and sys.byteorder == "little":  # x87 extended: 64-bit significand
        bits = int.from_bytes(raw[:10], "little")
        mant, biased = bits & ((1 << 64) - 1), (bits >> 64) & 0x7FFF
        sign, exp = (bits >> 79) & 1, (biased or 1) - 16383 - 63
    elif _LD_MANT == 112:  # IEEE binary128: 112-bit fraction, implicit leading bit
        bits = int.from_bytes(raw[:16], sys.byteorder)
        frac, biased = bits & ((1 << 112) - 1), (bits >> 112) & 0x7FFF
        mant = frac | (1 << 112) if biased else frac
        sign, exp = bits >> 127, (biased or 1) - 16383 - 112
    else:  # a double in a wider slot, or a layout read by NumPy itself
        n, d = value.as_integer_ratio()
        return (int(n), int(d))
    if mant == 0:
        return (0, 1)
    m = -mant if sign else mant
    return (m << exp, 1) if exp >= 0 else _reduce_dyadic(m, -exp)


def _from_array(arr: np.ndarray, what: str) -> ReadValues:
    """An array of any dtype, read by the rule (vectorised where the dtype allows)."""
    shape = tuple(arr.shape)
    flat = arr.reshape(-1)
    kind = arr.dtype.kind
    if kind == "f":
        if not _all_finite(flat):
            if np.isnan(flat).any():
                raise missing_values_error(what)
            raise _bad_element(what, f"an infinite {type_name(flat.dtype.type(0))}")
        if arr.dtype.itemsize <= 8:
            return ReadValues(shape, _as_float64(flat), None)
        d = flat.astype(np.float64)
        if bool((d.astype(arr.dtype) == flat).all()):
            return ReadValues(shape, d, None)
        # A long double that is not a double: read each exactly (64-bit mantissa).
        return ReadValues(shape, None, [_ratio(v) for v in flat])
    if kind in "iu":
        if flat.size and (int(flat.min()) < -_TWO53 or int(flat.max()) > _TWO53):
            return ReadValues(shape, None, [(v, 1) for v in flat.tolist()])
        return ReadValues(shape, flat.astype(np.float64), None)
    if kind == "O":
        return _from_objects(list(flat), shape, what)
    if kind in "mM" and np.isnat(flat).any():
        raise missing_values_error(what)
    refused = {"b": "bool", "c": "complex", "U": "str", "S": "bytes"}.get(kind, str(arr.dtype))
    raise _bad_element(what, f"an array of dtype {refused}")


def _all_finite(flat: np.ndarray) -> bool:
    """Whether every element is finite.  A float sum is NaN or ±inf whenever an element
    is (NaN propagates; an infinity never becomes finite again), so a finite sum, one
    pass without a temporary array, settles it; an overflowed sum is checked again."""
    with np.errstate(all="ignore"):
        if np.isfinite(np.add.reduce(flat)):
            return True
    return bool(np.isfinite(flat).all())


def _as_float64(flat: np.ndarray) -> np.ndarray:
    """float16/32/64 as float64 (exact); a float64 array is not copied but viewed
    read-only, so that nothing downstream can write into the caller's data."""
    if flat.dtype != np.float64:
        return flat.astype(np.float64)
    view = flat.view()
    view.flags.writeable = False
    return view


def _bad_element(what: str, why: str) -> ParameterError:
    unit = "record" if what.startswith("column") else "element"
    return ParameterError(f"{what}: every {unit} {_RULE} ({ACCEPTED}); got {why}")


def _from_objects(items: list[Any], shape: tuple[int, ...], what: str) -> ReadValues:
    """Elements of any type, each read on its own by the rule."""
    types = set(map(type, items))
    if types <= {float}:
        arr = np.array(items, dtype=np.float64)
        if not np.isfinite(arr).all():
            if np.isnan(arr).any():
                raise missing_values_error(what)
            raise _bad_element(what, "an infinite float")
        return ReadValues(shape, arr, None)
    ratios: list[tuple[int, int]] = []
    append = ratios.append
    bad = None
    for v in items:
        r, why = _try(v)
        if r is None:
            bad = v
            break
        append(r)
    if bad is not None or len(ratios) < len(items):
        # Missing values take precedence over other refusals: one error for them
        # wherever they are (checked only on this error path, so it costs nothing).
        if any(is_missing(v) for v in items):
            raise missing_values_error(what)
        raise _bad_element(what, why)
    doubles = _ratios_to_doubles(ratios)
    if doubles is not None:
        return ReadValues(shape, doubles, None)
    return ReadValues(shape, None, ratios)


def _ratios_to_doubles(ratios: list[tuple[int, int]]) -> np.ndarray | None:
    """The float64 array equal to ``ratios`` exactly, or None if one is not a double."""
    out = []
    for n, d in ratios:
        if d & (d - 1):
            return None
        try:
            f = n / d  # correctly rounded
        except OverflowError:
            return None
        if f.as_integer_ratio() != (n, d):
            return None
        out.append(f)
    return np.array(out, dtype=np.float64)


def _flatten(obj: Any, leaves: list[Any], what: str) -> tuple[int, ...]:
    """Append the leaves of a rectangular nest of sequences; return its shape."""
    if isinstance(obj, np.ndarray):
        items: list[Any] = list(obj) if obj.ndim > 1 else list(obj.reshape(-1))
    else:
        items = list(obj)
    if not items:
        return (0,)
    subs = [_is_container(x) for x in items]
    if not any(subs):
        leaves.extend(x[()] if isinstance(x, np.ndarray) else x for x in items)
        return (len(items),)
    if not all(subs):
        raise ParameterError(f"{what} must be a rectangular nest of sequences (a ragged mix)")
    shapes = {_flatten(x, leaves, what) for x in items}
    if len(shapes) != 1:
        raise ParameterError(f"{what} must be a rectangular nest of sequences (ragged rows)")
    return (len(items), *shapes.pop())


def read_values(value: Any, name: str = "value") -> ReadValues:
    """A sequence (nested or not) or a NumPy array of private values, read exactly.

    Every element is read by the same rule as a scalar (:func:`read_value`), each on
    its own: no element changes how another is read, and nothing is rounded.  Arrays
    of integer or float dtypes are read vectorised; long doubles that are not
    doubles, integers beyond 2**53 and object arrays element by element.

    Raises
    ------
    ParameterError
        Naming the type of a refused element, never its value or position;
        :class:`~snapcore.errors.MissingValueError` for NaN, None, NA, NaT.
    """
    what = name
    if is_masked(value):
        value = unmasked(value.reshape(-1)).reshape(value.shape)
    if isinstance(value, np.ndarray):
        if value.dtype.kind == "O":
            leaves: list[Any] = []
            shape = tuple(value.shape)
            for v in value.reshape(-1):
                leaves.append(v)
            return _from_objects(leaves, shape, what)
        return _from_array(value, what)
    if not _is_container(value):
        raise ParameterError(
            f"{what} must be a real number, a sequence or an array of them; got {type_name(value)}"
        )
    leaves = []
    shape = _flatten(value, leaves, what)
    return _from_objects(leaves, shape, what)


# -- data columns -------------------------------------------------------------------


def is_masked(obj: Any) -> bool:
    """Whether ``obj`` is a NumPy masked array.  No object is one before ``numpy.ma`` is
    imported, so this does not import it (tens of milliseconds at start-up)."""
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(obj, ma.MaskedArray)


def unmasked(arr: np.ndarray) -> np.ndarray:
    """A NumPy masked array as a plain array of its records, a masked element missing
    (:func:`~snapcore.data._missing.with_nulls`: integers stay exact); any other array
    as given."""
    if not is_masked(arr):
        return arr
    return with_nulls(np.asarray(arr.data), np.ma.getmaskarray(arr))


def _column_array(obj: Any) -> np.ndarray:
    """The records of one column as a 1-D NumPy array, without converting any record
    (pandas extension dtypes become object arrays of their records)."""
    if is_masked(obj):
        return unmasked(obj.reshape(-1))
    if isinstance(obj, np.ndarray):
        return obj.reshape(-1) if obj.ndim == 0 else obj
    if hasattr(obj, "to_numpy") and not isinstance(obj, Sequence):
        dtype = getattr(obj, "dtype", None)
        if isinstance(dtype, np.dtype):
            arr = np.asarray(obj.to_numpy())
        else:  # pandas extension dtypes (nullable ints, "string", categorical, ...)
            arr = np.asarray(obj.to_numpy(dtype=object), dtype=object)
        return arr
    items = list(obj)
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


def parameter_items(value: Any, parameter: str, what: str = "a sequence of values") -> list[Any]:
    """The items of a one-dimensional parameter given as a container (bin edges,
    categories): a list, a tuple, a NumPy array, or a pandas, polars or pyarrow series.

    Each item is returned as the container holds it (a NumPy scalar stays a NumPy
    scalar, a long double a long double), to be read by the value rules like a record:
    no container rounds an item on the way in.

    Raises
    ------
    ParameterError
        If ``value`` is a string, a mapping or a scalar (the message names
        ``parameter`` and says it must be ``what``); an item that is itself a
        container is the caller's to refuse, as any item of the wrong type.
    """
    name = parameter_name(parameter)
    if isinstance(value, str | bytes | bytearray | memoryview | dict) or not (
        isinstance(value, Sequence | np.ndarray) or hasattr(value, "to_numpy")
    ):
        raise ParameterError(f"{name} must be {what}, got {show(value)}", parameter=parameter)
    if isinstance(value, Sequence | np.ndarray):
        return list(unmasked(value) if isinstance(value, np.ndarray) else value)
    return list(_column_array(value))  # a series: its items, none converted


class Column:
    """One data column read exactly: ``doubles`` (float64) or exact ``ratios``.

    Attributes
    ----------
    doubles : numpy.ndarray or None
        float64 when every record is exactly a double.
    ratios : list of (int, int) or None
        Every record as an exact ``(numerator, denominator)`` otherwise.
    """

    __slots__ = ("doubles", "ratios")

    def __init__(self, doubles: np.ndarray | None, ratios: list[tuple[int, int]] | None) -> None:
        self.doubles = doubles
        self.ratios = ratios

    def __len__(self) -> int:
        return len(self.doubles) if self.doubles is not None else len(self.ratios or ())

    def fractions(self) -> list[Fraction]:
        """Every record as a Fraction."""
        if self.ratios is not None:
            return [Fraction(n, d) for n, d in self.ratios]
        assert self.doubles is not None
        return [Fraction(v) for v in self.doubles.tolist()]


def read_column(obj: Any, column: str) -> Column:
    """A numeric data column, every record read on its own by the rule.

    A record that is not an exact real is refused (it never makes the others be read
    differently); missing records raise :class:`~snapcore.errors.MissingValueError`
    (``check_missing``).  Messages name the column and the type, never a record.
    """
    what = f"column {column!r}"
    if isinstance(obj, list | tuple):  # read the records as given, no array first
        rv = _from_objects(list(obj), (len(obj),), what)
        return Column(rv.doubles, rv.ratios)
    arr = _column_array(obj)
    if arr.ndim != 1:
        raise ParameterError(f"column {column!r} must be one-dimensional")
    if arr.dtype.kind == "O":  # the reader raises the missing-values error itself
        rv = _from_objects(list(arr), (len(arr),), what)
    elif arr.dtype.kind == "f":  # _from_array raises the same missing-values error
        rv = _from_array(arr, what)
    else:
        check_missing(arr, column)
        rv = _from_array(arr, what)
    return Column(rv.doubles, rv.ratios)


# -- categories ---------------------------------------------------------------------

#: A normalised category: ``("number", Fraction)``, ``("str", str)`` or ``("bool", bool)``.
CategoryKey = tuple[str, Any]


def category_key(value: Any) -> CategoryKey:
    """The one normalisation under which categories and records are matched.

    Numbers (the accepted types) by their exact rational value, so ``1``, ``1.0``,
    ``np.float32(1)``, ``Fraction(1)`` and ``Decimal("1.00")`` are one category, while
    ``0.1`` and ``float(np.float32(0.1))`` are two.  Strings (``str``, ``numpy.str_``) as
    strings, code point by code point: ``"1"`` is never the number 1.  Truth values
    (``bool``, ``numpy.bool_``) as their own kind: ``True`` is neither 1 nor ``"True"``.

    Raises
    ------
    ParameterError
        For any other type (message: the type only); missing values are the caller's
        concern (``check_missing``).
    """
    key, why = _key(value)
    if key is None:
        raise ParameterError(
            f"a category must be a number ({ACCEPTED}), a string or a bool; got {why}"
        )
    return key


def _key(value: Any) -> tuple[CategoryKey | None, str]:
    if isinstance(value, str):
        return ("str", str(value)), ""
    if isinstance(value, bool | np.bool_):
        return ("bool", bool(value)), ""
    r, why = _try(value)
    return (None, why) if r is None else (("number", Fraction(*r)), "")


def category_keys(obj: Any, column: str) -> list[CategoryKey]:
    """Every record of a column as its :func:`category_key` (each record on its own)."""
    arr = _column_array(obj)
    if arr.ndim != 1:
        raise ParameterError(f"column {column!r} must be one-dimensional")
    check_missing(arr, column)
    if arr.dtype.kind != "O":
        if arr.dtype.kind not in "biufUS" or arr.dtype.kind == "S":
            raise ParameterError(
                f"column {column!r}: records must be numbers, strings or bools for "
                f"categories; got dtype {arr.dtype}"
            )
        if arr.dtype.kind == "f" and not np.isfinite(arr).all():
            raise ParameterError(f"column {column!r}: a category record is an infinite float")
        uniq, inverse = np.unique(arr, return_inverse=True)
        ukeys = [category_key(u) for u in uniq]
        return [ukeys[i] for i in inverse.reshape(-1).tolist()]
    out = []
    for v in arr:
        key, why = _key(v)
        if key is None:
            raise ParameterError(
                f"column {column!r}: every record must be a number ({ACCEPTED}), a string "
                f"or a bool for categories; got {why}"
            )
        out.append(key)
    return out


def key_positions(records: np.ndarray, keys: Sequence[Any]) -> np.ndarray:
    """Each record's position in ``keys`` (a group-by's key set) under
    :func:`category_key` matching; -1 for a missing record, one that is not a category,
    or a key not in ``keys``.

    Each distinct record (by type and value) is matched once: equal values of one type
    have one category key, and the memo holds the position for every later record.
    """
    index = {category_key(k): i for i, k in enumerate(keys)}

    def position(v: Any) -> int:
        key = None if is_missing(v) else _key(v)[0]
        return -1 if key is None else index.get(key, -1)

    memo: dict[tuple[type, Any], int] = {}
    group = np.empty(records.size, dtype=np.int64)
    for j, v in enumerate(records):
        try:
            group[j] = memo[type(v), v]
        except KeyError:
            group[j] = memo[type(v), v] = position(v)
        except TypeError:  # an unhashable record
            group[j] = position(v)
    return group
