"""The public mechanism object: :class:`SnappingMechanism`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any, overload

import numpy as np

from snapcore._display import short
from snapcore.calibration._guarantee import calibration_accuracy
from snapcore.calibration._params import Calibration, PrivacyAnalysis, calibrate
from snapcore.data._values import exact_ratio as exact_ratio_of, read_value, read_values
from snapcore.errors import ParameterError
from snapcore.mechanism._padding import Padding
from snapcore.padding._pad import fallbacks_covered, resolve_mode
from snapcore.pipeline._backend import Backend
from snapcore.pipeline._stages import Pipeline
from snapcore.pipeline._threads import check_threads
from snapcore.plugins._manager import get_registries
from snapcore.randomness._draw import draw_from_u
from snapcore.randomness._sources import RandomSource, require_draws

__all__ = ["DEFAULT_SOURCE", "SnappingMechanism"]

#: The source a mechanism uses when none is given: ChaCha20 keyed from the OS CSPRNG
#: (:class:`~snapcore.ChaCha20Source`), as safe as ``os.urandom`` and fast
#: enough for the array path (``docs/sources.md``).
DEFAULT_SOURCE = "chacha20"


def _offer_batch(backend: Backend, doubles: np.ndarray) -> bool:
    """Whether the float64 array ``doubles`` goes to
    :meth:`Backend.batch <snapcore.Backend.batch>`: at least ``batch_min_size``
    elements.  Only arrays whose elements *are* exact doubles get here
    (:func:`snapcore.data.read_values` decides that exactly); every other value takes
    the exact element-wise path."""
    return bool(doubles.size >= backend.batch_min_size)


class SnappingMechanism:
    """Mironov's snapping mechanism, exact at every step (docs/semantics.md).

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
        Randomness: a :class:`~snapcore.RandomSource`, or the name of a
        registered source that needs no options (default ``"chacha20"``: ChaCha20
        keyed from the OS CSPRNG, re-keyed and fork-safe; see ``docs/sources.md``).
    precision : int, optional
        Working precision in bits; at least the required one (the default).
    timing : {None, "constant", "off"}
        ``"constant"`` pads every release to a whole number of fixed time quanta so
        its duration does not depend on the value or the noise (``docs/timing.md``);
        ``"off"`` does not.  Default: ``"constant"`` for cryptographic sources,
        ``"off"`` for seeded and replay sources (simulations).
    threads : int, optional
        Threads an array release may use (an int >= 1); the output is the same for
        every number.  Default: the CPUs this process may run on, for arrays of at
        least 2**15 elements (one thread below).

    Raises
    ------
    ParameterError
        On any invalid parameter, before anything is drawn.
    BackendUnavailableError
        If the backend's library is not installed.

    Examples
    --------
    >>> from snapcore import SnappingMechanism
    >>> from snapcore.randomness._sources import SeededSource
    >>> m = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0), source=SeededSource(7))
    >>> m.precision, m.granularity
    (118, Fraction(2, 1))
    >>> 0.0 <= m.release(42.0) <= 100.0
    True
    """

    __slots__ = (
        "_backend",
        "_cal",
        "_padding",
        "_pipeline",
        "_scalar",
        "_source",
        "_threads",
        "_uniform",
    )
    _padding: Padding | None
    _scalar: Callable[[float], float] | None

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
        timing: str | None = None,
        threads: int | None = None,
    ) -> None:
        checked_threads = check_threads(threads)
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
            source = DEFAULT_SOURCE
        if isinstance(source, RandomSource):
            self._source = source
        elif isinstance(source, str):
            try:
                self._source = reg.sources.create(source)
            except TypeError as exc:
                raise ParameterError(
                    f"source {source!r} needs options; pass an instance instead, for "
                    f"example snapcore.randomness._sources.SeededSource(seed) ({exc})"
                ) from None
        else:
            raise ParameterError(
                f"source must be a source name {reg.sources.names()} or a RandomSource, "
                f"got {source!r}"
            )
        padded = resolve_mode(timing, self._source.cryptographic) == "constant"
        pipeline = Pipeline(self._cal, self._backend.arithmetic(self._cal.precision))
        self._assemble(
            self._cal,
            self._backend,
            pipeline,
            self._source,
            uniform=padded,
            threads=checked_threads,
        )
        if padded:
            # A backend's fused release may name its path (MPFR's: exact or compiled).
            path = getattr(self._scalar, "path", None)
            self._padding = Padding(
                self._cal,
                self._backend,
                self._source,
                self._unpadded_release,
                path,
                threads=checked_threads,
            )

    def _assemble(
        self,
        calibration: Calibration,
        backend: Backend,
        pipeline: Pipeline,
        source: RandomSource,
        *,
        uniform: bool,
        threads: int | None,
    ) -> None:
        """Set this mechanism's parts, without padding: it draws from ``source``, on
        the backend's uniform paths or not.

        A padded mechanism takes the uniform paths (``scalar_padded``,
        ``batch_padded``): a path whose time depends on the draw (a certificate with a
        rare exact fallback) would need a quantum covering its slowest case.  Without
        padding, a backend may offer faster ones (``scalar``, the same contract;
        MPFR's loads a compiled kernel once the process has made enough scalar
        releases).  The backend's fused release of one double, when it offers one
        (bit-identical), is bound to ``source``.
        """
        self._cal = calibration
        self._backend = backend
        self._pipeline = pipeline
        self._source = source
        self._uniform = uniform
        self._threads = threads
        self._padding = None
        if uniform:
            self._scalar = backend.scalar_padded(pipeline, source)
        else:
            self._scalar = backend.scalar(pipeline, source)

    def unpadded_copy(self, source: RandomSource) -> SnappingMechanism:
        """A copy of this mechanism that draws from ``source`` and does not pad.

        Its releases take the same paths as this mechanism's (a padded mechanism's
        uniform paths) without waiting for a quantum: what the padding's calibration
        times (:class:`~snapcore.mechanism.Padding`).

        Parameters
        ----------
        source : RandomSource
            The copy's source; this mechanism's own is never drawn from.

        Returns
        -------
        SnappingMechanism
            Same calibration, backend and pipeline; :attr:`padding` is None.
        """
        copy = type(self).__new__(type(self))
        # Its calibration, backend and pipeline are this one's (shared, never re-derived).
        type(self)._assemble(
            copy,
            self._cal,
            self._backend,
            self._pipeline,
            source,
            uniform=self._uniform,
            threads=self._threads,
        )
        return copy

    def _unpadded_release(self, source: RandomSource) -> Callable[[Any], object]:
        return self.unpadded_copy(source).release

    # -- exact parameters ----------------------------------------------------------
    @property
    def calibration(self) -> Calibration:
        """All exact constants (see :class:`snapcore.Calibration`)."""
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
    def threads(self) -> int | None:
        """The threads an array release may use; None: the CPUs this process may run
        on, for arrays of at least 2**15 elements (one thread below)."""
        return self._threads

    @property
    def privacy(self) -> PrivacyAnalysis:
        """The privacy analysis this mechanism relies on, with exact numbers."""
        return self._cal.privacy()

    @property
    def pipeline(self) -> Pipeline:
        """The exact stages this mechanism runs (:class:`~snapcore.pipeline.Pipeline`)."""
        return self._pipeline

    @property
    def padding(self) -> Padding | None:
        """The release padding (quanta and overrun counts), or None when timing is off."""
        return self._padding

    def accuracy(self, alpha: Any) -> float:
        """The accuracy ``a`` at confidence ``alpha``: ``P(|output − f(D)| > a) <= alpha``
        for every f(D) in the interval; data-independent (see
        :func:`snapcore.calibration.calibration_accuracy`).
        """
        return calibration_accuracy(self._cal, alpha).bound

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
        v = read_value(value)
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
            The statistic value(s), each read exactly by the rule of
            docs/semantics.md ("Values that enter"): int, float, Fraction, Decimal,
            NumPy integers and floats of every width (long doubles too), gmpy2
            numbers; nested sequences, mixed lists and arrays of any numeric or
            object dtype.  Each element is released as its exact value, with the
            same output for the same draw as a scalar release of it.  Each element
            gets independent noise and costs ε (composition across elements is the
            caller's concern).

        Returns
        -------
        float, list of float, or numpy.ndarray
            Same shape as ``value``.  All or nothing: on any error nothing is
            returned and, for invalid input, nothing is drawn; a vector checks
            that the source can supply every draw before it draws any.

        Raises
        ------
        ParameterError
            If a value is not an exact real (the message names its type, never its
            value or position); :class:`~snapcore.errors.MissingValueError` for NaN.
        SourceExhaustedError
            If the source cannot supply every draw; nothing is drawn.
        """
        padding = self._padding
        if padding is None:
            return self._release(value)
        return padding.padded_call(self._release, value)

    def _release(self, value: Any) -> Any:
        """:meth:`release` without the padding."""
        pipe = self._pipeline
        if type(value) is float:  # the hot path: no ABC checks, no Fraction
            if value - value != 0.0:
                read_value(value)  # raises, naming the problem, not the value
            fused = self._scalar
            if fused is not None:
                return fused(value)  # the backend's fused release, bit-identical
            x = pipe.centre_ratio(*value.as_integer_ratio())
        elif isinstance(value, np.ndarray) or (
            isinstance(value, Sequence) and not isinstance(value, str | bytes | memoryview)
        ):
            return self._release_many(value)
        else:
            x = pipe.centre_ratio(*exact_ratio_of(value))
        return pipe.run(x, self._source.draw_raw(self._cal.precision))

    def _release_many(self, value: Any) -> Any:
        """Arrays and sequences: every element read exactly, all draws or none."""
        pipe = self._pipeline
        vals = read_values(value, "value")
        n = vals.size
        self.check_can_draw(n)
        outs: Any = None
        if vals.doubles is not None and _offer_batch(self._backend, vals.doubles):
            # e.g. the vectorised fast path, bit-identical to MPFR (or None: declined)
            if not self._uniform:
                outs = self._backend.batch(pipe, vals.doubles, self._source, threads=self._threads)
            else:  # as many exact fallbacks' work as the quantum covers, always
                floor = fallbacks_covered(n)
                outs = self._backend.batch_padded(
                    pipe, vals.doubles, self._source, floor, threads=self._threads
                )
        if outs is None:
            centre = pipe.centre_ratio
            xs = [centre(vn, vd) for vn, vd in vals.as_ratios()]
            draws = self._source.draws_raw(n, self._cal.precision)
            outs = np.array(pipe.run_many(xs, draws), dtype=np.float64)
        outs = np.asarray(outs, dtype=np.float64).reshape(vals.shape)
        return outs if isinstance(value, np.ndarray) else outs.tolist()

    def check_can_draw(self, count: int) -> None:
        """Raise, before drawing anything, if the source cannot supply ``count`` draws.

        Raises
        ------
        SourceExhaustedError
            If ``self.source.can_draw(count, precision)`` is false; nothing is drawn.
        """
        require_draws(self._source, count, self._cal.precision)

    def __repr__(self) -> str:
        cal = self._cal
        return (
            f"SnappingMechanism(epsilon={short(cal.epsilon)}, "
            f"sensitivity={short(cal.sensitivity)}, clamp_bounds=("
            f"{short(cal.lower)}, {short(cal.upper)}), "
            f"backend={self._backend.name!r}, source={self._source.name!r}, "
            f"precision={self.precision})"
        )
