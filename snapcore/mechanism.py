"""The public mechanism object: :class:`SnappingMechanism`."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from fractions import Fraction
from typing import Any, overload

import numpy as np

from snapcore.backend import Backend
from snapcore.errors import ParameterError
from snapcore.params import Calibration, PrivacyAnalysis, calibrate
from snapcore.pipeline import Pipeline
from snapcore.plugins import get_registries
from snapcore.sources import RandomSource, draw_from_u

__all__ = ["SnappingMechanism", "check_value"]


def check_value(value: Any, name: str = "value") -> Fraction:
    """A finite real statistic value as an exact Fraction, else a ParameterError."""
    if isinstance(value, float):  # the hot path
        if value - value != 0.0:
            raise ParameterError(f"{name} must be a finite real number, got {value!r}")
        return Fraction(value)
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Real):
        raise ParameterError(
            f"{name} must be a finite real number, got {type(value).__name__} {value!r}"
        )
    if isinstance(value, numbers.Rational):
        return Fraction(int(value.numerator), int(value.denominator))  # NumPy ints too
    f = float(value)
    if not math.isfinite(f):
        raise ParameterError(f"{name} must be a finite real number, got {f!r}")
    return Fraction(f)


def _batch_capability(backend: Backend, arr: np.ndarray) -> Any:
    """The backend's batch release for ``arr``, or None for the element-wise path.

    A backend may offer ``batch(pipeline, values, source)`` (bit-identical to the
    element-wise path, or returning None to decline before drawing anything) and
    ``batch_min_size`` (default 0): arrays at least that long whose elements are exact
    doubles go through it.  The MPFR backend offers its vectorised fast path this way.
    """
    batch = getattr(backend, "batch", None)
    if batch is None or arr.size < getattr(backend, "batch_min_size", 0):
        return None
    kind, size = arr.dtype.kind, arr.dtype.itemsize
    if kind == "f" and size <= 8:
        return batch
    if kind in "iu" and (arr.size == 0 or max(-int(arr.min()), int(arr.max())) <= 1 << 53):
        return batch
    return None


class SnappingMechanism:
    """Mironov's snapping mechanism, exact at every step (DESIGN.md §1).

    Parameters
    ----------
    epsilon : real
        The privacy budget ε > 0 this mechanism spends per release of one value.
    sensitivity : real, default 1
        Δ > 0: how much one record can change the statistic.
    clamp_bounds : (lower, upper), optional
        The clamp interval, finite doubles with ``lower < upper``; outputs lie in it.
    clamp_bound : real, optional
        Symmetric clamp bound ``B > 0`` (the interval ``[-B, B]``).  Give exactly
        one of ``clamp_bounds`` and ``clamp_bound``.
    backend : str, default "mpfr"
        Name of a registered arithmetic backend.
    source : str or RandomSource, optional
        Randomness: a :class:`~snapcore.sources.RandomSource`, or the name of a
        registered source that needs no options (default ``"system"``, the OS CSPRNG).
    precision : int, optional
        Working precision in bits; at least the required one (the default).

    Raises
    ------
    ParameterError
        On any invalid parameter, before anything is drawn.
    BackendUnavailableError
        If the backend's library is not installed.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> from snapcore.sources import SeededSource
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), source=SeededSource(7))
    >>> m.precision, m.granularity
    (118, Fraction(2, 1))
    >>> 0.0 <= m.release(42.0) <= 100.0
    True
    """

    __slots__ = ("_backend", "_cal", "_pipeline", "_source")

    def __init__(
        self,
        *,
        epsilon: Any,
        sensitivity: Any = 1,
        clamp_bounds: Any = None,
        clamp_bound: Any = None,
        backend: str | Backend = "mpfr",
        source: str | RandomSource | None = None,
        precision: int | None = None,
    ) -> None:
        self._cal = calibrate(
            epsilon=epsilon,
            sensitivity=sensitivity,
            clamp_bounds=clamp_bounds,
            clamp_bound=clamp_bound,
            precision=precision,
        )
        reg = get_registries()
        if isinstance(backend, Backend):
            self._backend = backend
        elif isinstance(backend, str):
            self._backend = reg.backends.create(backend)
        else:
            raise ParameterError(
                f"backend must be a backend name {reg.backends.names()} or a Backend, "
                f"got {backend!r}"
            )
        if source is None:
            source = "system"
        if isinstance(source, RandomSource):
            self._source = source
        elif isinstance(source, str):
            try:
                self._source = reg.sources.create(source)
            except TypeError as exc:
                raise ParameterError(
                    f"source {source!r} needs options; pass an instance instead, for "
                    f"example snapcore.sources.SeededSource(seed) ({exc})"
                ) from None
        else:
            raise ParameterError(
                f"source must be a source name {reg.sources.names()} or a RandomSource, "
                f"got {source!r}"
            )
        self._pipeline = Pipeline(self._cal, self._backend.arithmetic(self._cal.precision))

    # -- exact parameters ----------------------------------------------------------
    @property
    def calibration(self) -> Calibration:
        """All exact constants (see :class:`snapcore.params.Calibration`)."""
        return self._cal

    @property
    def precision(self) -> int:
        """Working precision p in bits (η = 2**-p)."""
        return self._cal.precision

    @property
    def epsilon(self) -> Fraction:
        """The requested ε, exactly."""
        return self._cal.epsilon

    @property
    def epsilon_prime(self) -> Fraction:
        """ε′ = RZ((ε − 2η)/(1 + 12·b·η)), the Laplace parameter actually used."""

        return self._cal.epsilon_prime

    @property
    def scale(self) -> Fraction:
        """λ = RU(1/ε′), the noise scale in sensitivity units."""

        return self._cal.scale

    @property
    def granularity(self) -> Fraction:
        """Λ, the smallest power of two >= λ (sensitivity units); outputs lie on
        ``c + Δ·Λ·ℤ`` (see :attr:`grid_step`)."""
        return self._cal.granularity

    @property
    def grid_step(self) -> Fraction:
        """Δ·Λ, the spacing of the output grid in data units."""
        return self._cal.sensitivity * self._cal.granularity

    @property
    def unit_clamp_bound(self) -> Fraction:
        """b = RN(B/Δ), the clamp bound in sensitivity units."""
        return self._cal.unit_clamp_bound

    @property
    def half_width(self) -> Fraction:
        """B = (upper − lower)/2, the half-width of the clamp interval in data units."""
        return self._cal.half_width

    @property
    def clamp_bounds(self) -> tuple[float, float]:
        """The clamp interval ``(lower, upper)``; every output lies in it."""
        return (float(self._cal.lower), float(self._cal.upper))

    @property
    def sensitivity(self) -> Fraction:
        """Δ, exactly."""
        return self._cal.sensitivity

    @property
    def backend(self) -> Backend:
        """The arithmetic backend."""
        return self._backend

    @property
    def source(self) -> RandomSource:
        """The randomness source."""
        return self._source

    @property
    def privacy(self) -> PrivacyAnalysis:
        """The privacy analysis this mechanism relies on, with exact numbers."""
        return self._cal.privacy()

    def accuracy(self, alpha: Any) -> float:
        """The accuracy ``a`` at confidence ``alpha``: ``P(|output − f(D)| > a) <= alpha``
        for every f(D) in the interval; data-independent (see :func:`snapcore.accuracy.accuracy`).
        """
        from snapcore.accuracy import accuracy

        return accuracy(self, alpha)

    # -- the mechanism -------------------------------------------------------------
    def transform(self, value: Any, u: Fraction | float, sign: int) -> float:
        """The stages after sampling, as a pure function of ``(value, U*, S)``.

        Parameters
        ----------
        value : real
            The statistic value f(D), finite.
        u : Fraction or float
            ``U*``: a p-bit float in (0, 1) (``p = self.precision``).
        sign : int
            ``S``: 1 or -1.

        Returns
        -------
        float
            The mechanism's output for that draw.

        Raises
        ------
        ParameterError
            If ``value`` is not finite, ``u`` is not a p-bit float in (0, 1), or
            ``sign`` is not ±1.
        """
        v = check_value(value)
        draw = draw_from_u(u, sign, self._cal.precision)
        pipe = self._pipeline
        return pipe.run(pipe.centre(v), draw)

    @overload
    def release(self, value: float) -> float: ...
    @overload
    def release(self, value: np.ndarray) -> np.ndarray: ...
    @overload
    def release(self, value: Sequence[Any]) -> list[float]: ...

    def release(self, value: Any) -> Any:
        """Release ``value`` with fresh noise: ε-differentially private.

        Parameters
        ----------
        value : real, sequence of reals, or numpy array
            The statistic value(s).  Each element gets independent noise and costs ε
            (composition across elements is the caller's concern).

        Returns
        -------
        float, list of float, or numpy.ndarray
            Same shape as ``value``.  All or nothing: on any error nothing is
            returned and, for invalid input, nothing is drawn.
        """
        pipe = self._pipeline
        p = self._cal.precision
        if isinstance(value, np.ndarray) or (
            isinstance(value, Sequence) and not isinstance(value, str | bytes)
        ):
            if not isinstance(value, np.ndarray):
                # Check the elements as given, before NumPy coerces them (True would
                # become 1.0) or chokes on ragged rows.
                for v in np.asarray(value, dtype=object).reshape(-1):
                    check_value(v, "each element of value")
            arr = np.asarray(value)
            if arr.dtype == object or arr.dtype.kind not in "iuf":
                raise ParameterError(
                    f"value must be an array of finite real numbers, got dtype {arr.dtype}"
                )
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise ParameterError(
                    "value must contain only finite numbers; it contains nan or inf"
                )
            flat = arr.reshape(-1)
            batch = _batch_capability(self._backend, arr)
            outs = None if batch is None else batch(pipe, arr, self._source)
            if outs is not None:  # e.g. the vectorised fast path, bit-identical to MPFR
                return outs if isinstance(value, np.ndarray) else outs.tolist()
            centre = pipe.centre_ratio
            if arr.dtype.kind == "f":  # finite, checked above
                xs = [centre(*v.as_integer_ratio()) for v in flat.astype(np.float64).tolist()]
            else:  # integers, exactly (int64 values beyond 2**53 stay exact)
                xs = [centre(int(v), 1) for v in flat.tolist()]
            draws = self._draws_raw(len(xs))
            outs = np.array(pipe.run_many(xs, draws), dtype=np.float64).reshape(arr.shape)
            if isinstance(value, np.ndarray):
                return outs
            return outs.tolist()
        if type(value) is float:  # the hot path: no Fraction
            try:
                vn, vd = value.as_integer_ratio()
            except (ValueError, OverflowError):
                raise ParameterError(
                    f"value must be a finite real number, got {value!r}"
                ) from None
            x = pipe.centre_ratio(vn, vd)
        else:
            x = pipe.centre(check_value(value))
        return pipe.run(x, self._source.draw_raw(p))

    def _draws_raw(self, count: int) -> list[tuple[int, int, int]]:
        src = self._source
        p = self._cal.precision
        bulk = getattr(src, "draws_raw", None)
        if bulk is not None:
            return bulk(count, p)  # type: ignore[no-any-return]
        return [(d.sign, d.mantissa, d.exponent) for d in src.draws(count, p)]

    def __repr__(self) -> str:
        lo, hi = self.clamp_bounds
        return (
            f"SnappingMechanism(epsilon={float(self.epsilon)!r}, "
            f"sensitivity={float(self.sensitivity)!r}, clamp_bounds=({lo!r}, {hi!r}), "
            f"backend={self._backend.name!r}, source={self._source.name!r}, "
            f"precision={self.precision})"
        )
