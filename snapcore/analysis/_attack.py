"""Mironov's attack on textbook floating-point Laplace noise, and the same attack
against snapcore (why snapping exists).

The textbook sampler, as :meth:`numpy.random.Generator.laplace` runs it (NumPy's
``random_laplace`` in ``numpy/random/src/distributions/distributions.c``)::

    U = next_double()              # k * 2**-53, k uniform in [0, 2**53); 0 is redrawn
    if U >= 0.5:  y = loc - scale * log(2.0 - U - U)
    else:         y = loc + scale * log(U + U)

in double arithmetic.  :func:`numpy_laplace` replays it for a given ``k`` (the test
suite checks it against NumPy bit for bit).  For fixed ``loc`` and ``scale`` the
map ``k -> y`` is non-decreasing on ``[1, 2**53)`` (each operation is a monotone
rounding of a monotone function, and the two branches meet at ``y = loc``), so the
set of ``k`` producing a given double ``y`` is an interval, found by bisection
(:func:`naive_preimage`): its size over ``2**53 - 1`` is ``P(y | loc)`` exactly.
Most doubles are produced by one ``loc`` and not by its neighbour: seeing such a
``y`` reveals the input with certainty (infinite privacy loss).

:func:`attack` is the Bayes-optimal distinguisher for a uniform prior given exact
likelihoods: it picks the input under which the observed output is more likely
(certain when the other likelihood is 0).  :func:`run_numpy_attack` runs it on
NumPy's own sampler; :func:`run_snapcore_attack` runs it on
:meth:`SnappingMechanism.release`, with the likelihoods of the exact audit.  No
distinguisher can succeed with probability above ``e**ε / (1 + e**ε)`` against an
ε-DP mechanism.

The one assumption about the platform is that the C library's ``log`` (used by
both NumPy and :func:`math.log`) is monotone, which every faithful ``log`` is;
:func:`find_witness` additionally checks a window around each witness by
exhaustive enumeration.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from fractions import Fraction

import attrs
import numpy as np

from snapcore.analysis._audit import exact_output_distribution
from snapcore.errors import ParameterError
from snapcore.mechanism._mechanism import SnappingMechanism

__all__ = [
    "AttackReport",
    "Witness",
    "attack",
    "find_witness",
    "naive_likelihood",
    "naive_preimage",
    "numpy_laplace",
    "run_numpy_attack",
    "run_snapcore_attack",
]

#: NumPy draws U = k * 2**-53 with k in [1, 2**53); k = 0 is redrawn.
K_MIN, K_MAX = 1, (1 << 53) - 1
_INV53 = 1.0 / 9007199254740992.0


def numpy_laplace(loc: float, scale: float, k: int) -> float:
    """NumPy's ``random_laplace`` for the draw ``U = k * 2**-53`` (``1 <= k < 2**53``)."""
    u = k * _INV53  # exact
    if u >= 0.5:
        return loc - scale * math.log(2.0 - u - u)
    return loc + scale * math.log(u + u)


def _first(pred: Callable[[int], bool], lo: int, hi: int) -> int:
    """Least ``k`` in ``[lo, hi]`` with ``pred(k)`` for a monotone ``pred``; ``hi + 1`` if none."""
    if not pred(hi):
        return hi + 1
    lo -= 1  # invariant: pred(lo) false (or lo below range), pred(hi) true
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid
    return hi


def naive_preimage(loc: float, scale: float, y: float) -> tuple[int, int]:
    """All ``k`` with ``numpy_laplace(loc, scale, k) == y``: the half-open ``[start, stop)``.

    Empty (``start == stop``) when ``y`` cannot be produced from ``loc``.
    """
    start = _first(lambda k: numpy_laplace(loc, scale, k) >= y, K_MIN, K_MAX)
    stop = _first(lambda k: numpy_laplace(loc, scale, k) > y, start, K_MAX)
    return start, max(start, stop)


def naive_likelihood(loc: float, scale: float, y: float) -> Fraction:
    """``P(y | loc)`` for NumPy's Laplace sampler, exactly."""
    start, stop = naive_preimage(loc, scale, y)
    return Fraction(stop - start, K_MAX)


def attack(likelihoods: tuple[Fraction, Fraction], coin: Callable[[], int]) -> int:
    """Guess which of two inputs produced an output, from its exact likelihoods.

    Returns 0 or 1: the more likely input (certain when the other likelihood is 0);
    ``coin()`` breaks ties.
    """
    a, b = likelihoods
    if a > b:
        return 0
    if b > a:
        return 1
    return coin()


@attrs.frozen(kw_only=True)
class AttackReport:
    """Success of the distinguisher over repeated trials.

    Attributes
    ----------
    sampler : str
        What was attacked.
    epsilon : float
        The privacy budget the sampler was run at.
    inputs : tuple of float
        The two neighbouring inputs; each trial picks one uniformly at random.
    trials, successes : int
        Trials run and correct guesses.
    certain : int
        Trials whose output was impossible under the other input.
    bound : float
        ``e**ε / (1 + e**ε)``, the best success rate ε-DP allows.
    """

    sampler: str
    epsilon: float
    inputs: tuple[float, float]
    trials: int
    successes: int
    certain: int
    bound: float

    @property
    def rate(self) -> float:
        """Fraction of correct guesses."""
        return self.successes / self.trials

    @property
    def certain_rate(self) -> float:
        """Fraction of trials decided with certainty."""
        return self.certain / self.trials


def _dp_bound(epsilon: float) -> float:
    return math.exp(epsilon) / (1 + math.exp(epsilon))


def run_numpy_attack(
    epsilon: float,
    inputs: tuple[float, float] = (0.0, 1.0),
    *,
    sensitivity: float = 1.0,
    trials: int = 10_000,
    seed: int = 0,
) -> AttackReport:
    """Attack :meth:`numpy.random.Generator.laplace` at scale ``sensitivity/epsilon``."""
    if trials < 1:
        raise ParameterError(f"trials must be an int >= 1, got {trials!r}")
    scale = sensitivity / epsilon
    rng = np.random.default_rng(seed)
    coin_rng = random.Random(seed)
    secrets = rng.integers(0, 2, size=trials)
    ok = sure = 0
    for s in secrets:
        y = float(rng.laplace(inputs[int(s)], scale))
        lik = (naive_likelihood(inputs[0], scale, y), naive_likelihood(inputs[1], scale, y))
        guess = attack(lik, lambda: coin_rng.randrange(2))
        ok += guess == s
        sure += (lik[0] == 0) != (lik[1] == 0)
    return AttackReport(
        sampler=f"numpy {np.__version__} Generator.laplace",
        epsilon=epsilon,
        inputs=inputs,
        trials=trials,
        successes=ok,
        certain=sure,
        bound=_dp_bound(epsilon),
    )


def run_snapcore_attack(
    mechanism: SnappingMechanism,
    inputs: tuple[float, float] = (0.0, 1.0),
    *,
    trials: int = 10_000,
    seed: int = 0,
) -> tuple[AttackReport, float]:
    """Attack ``mechanism.release`` with the exact likelihoods from the audit.

    The mechanism's own randomness source is used for the releases.

    Returns
    -------
    tuple of (AttackReport, float)
        The empirical report, and the exact success probability of this (optimal)
        distinguisher, ``(1/2)·Σ_o max(P(o|v), P(o|v'))``.
    """
    if trials < 1:
        raise ParameterError(f"trials must be an int >= 1, got {trials!r}")
    d0 = exact_output_distribution(mechanism, inputs[0]).as_dict()
    d1 = exact_output_distribution(mechanism, inputs[1]).as_dict()
    exact = (
        sum(
            (max(d0.get(o, Fraction(0)), d1.get(o, Fraction(0))) for o in set(d0) | set(d1)),
            Fraction(0),
        )
        / 2
    )
    rng = random.Random(seed)
    ok = sure = 0
    for _ in range(trials):
        s = rng.randrange(2)
        y = mechanism.release(inputs[s])
        lik = (d0.get(y, Fraction(0)), d1.get(y, Fraction(0)))
        ok += attack(lik, lambda: rng.randrange(2)) == s
        sure += (lik[0] == 0) != (lik[1] == 0)
    report = AttackReport(
        sampler=f"snapcore SnappingMechanism ({mechanism.backend.name})",
        epsilon=float(mechanism.epsilon),
        inputs=inputs,
        trials=trials,
        successes=ok,
        certain=sure,
        bound=_dp_bound(float(mechanism.epsilon)),
    )
    return report, float(exact)


@attrs.frozen(kw_only=True)
class Witness:
    """An output of NumPy's Laplace possible from ``value`` and impossible from ``neighbour``.

    Re-check: ``U = u`` gives ``numpy_laplace(value, scale, k) == output``; and for the
    neighbour, the adjacent draws ``k_below = k_above - 1`` and ``k_above`` give
    ``below < output < above``, so by monotonicity no draw gives ``output``.

    Attributes
    ----------
    value, neighbour, scale : float
        The inputs and the Laplace scale.
    k : int
        The draw, ``U = k * 2**-53``.
    u : float
        ``U`` itself.
    output : float
        ``numpy_laplace(value, scale, k)``.
    probability : Fraction
        ``P(output | value)``, exactly (``P(output | neighbour) = 0``).
    k_above : int
        The least draw whose output from ``neighbour`` is ``>= output``.
    below, above : float
        The neighbour's outputs at ``k_above - 1`` and ``k_above``.
    checked_window : int
        The neighbour's outputs were also checked exhaustively for every draw within
        this distance of ``k_above``.
    """

    value: float
    neighbour: float
    scale: float
    k: int
    u: float
    output: float
    probability: Fraction
    k_above: int
    below: float
    above: float
    checked_window: int

    def lines(self) -> list[str]:
        """A human-readable, re-checkable description."""
        return [
            f"U = {self.u!r} = {self.u.hex()} (k = {self.k}), loc = {self.value!r}, "
            f"scale = {self.scale!r}",
            f"  numpy Laplace output y = {self.output!r} = {self.output.hex()}",
            f"  P(y | loc={self.value!r}) = {self.probability * K_MAX}/(2**53 - 1)",
            f"  loc = {self.neighbour!r}: U = {(self.k_above - 1) * _INV53!r} gives "
            f"{self.below!r} < y < {self.above!r} from U = {self.k_above * _INV53!r}"
            f" (the next possible U), so P(y | loc={self.neighbour!r}) = 0",
        ]


def find_witness(
    value: float,
    neighbour: float,
    scale: float,
    *,
    seed: int = 0,
    window: int = 1 << 12,
    max_tries: int = 10_000,
) -> Witness:
    """Search random draws for an output of ``value`` that ``neighbour`` cannot produce.

    Raises
    ------
    LookupError
        If none is found in ``max_tries`` draws.
    """
    rng = random.Random(seed)
    for _ in range(max_tries):
        k = rng.randrange(K_MIN, K_MAX + 1)
        y = numpy_laplace(value, scale, k)
        start, stop = naive_preimage(neighbour, scale, y)
        if start != stop or start > K_MAX or start == K_MIN:
            continue
        lo, hi = max(K_MIN, start - window), min(K_MAX, start + window)
        if any(numpy_laplace(neighbour, scale, j) == y for j in range(lo, hi + 1)):
            raise AssertionError("log is not monotone here: bisection and enumeration disagree")
        p0, p1 = naive_preimage(value, scale, y)
        return Witness(
            value=value,
            neighbour=neighbour,
            scale=scale,
            k=k,
            u=k * _INV53,
            output=y,
            probability=Fraction(p1 - p0, K_MAX),
            k_above=start,
            below=numpy_laplace(neighbour, scale, start - 1),
            above=numpy_laplace(neighbour, scale, start),
            checked_window=window,
        )
    raise LookupError(f"no witness in {max_tries} draws")
