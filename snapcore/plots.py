"""Pictures of the accuracy math (:mod:`snapcore.analysis`: the guarantees and
the estimates from a guess), as matplotlib figures.

Each function returns a :class:`matplotlib.figure.Figure` built without pyplot (no
global state, no display needed); save it with ``fig.savefig("out.png")`` or ``.svg``.
matplotlib is an optional dependency: ``pip install "snapcore[plot]"``.  The command
line has the same pictures: ``snapcore plot --help``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from snapcore.analysis import _estimates, _guarantees
from snapcore.errors import ParameterError, PlotDependencyError

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "accuracy_vs_epsilon",
    "accuracy_vs_gamma",
    "log_spaced",
    "output_distribution_figure",
]

_SNAP = "#1f5fa8"
_LAPLACE = "#c0392b"
_CLAMP = "#e67e22"


def _figure(**kwargs: Any) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlotDependencyError(
            "plots need matplotlib, which is not installed; install it with: "
            'pip install "snapcore[plot]"'
        ) from None
    return Figure(**kwargs)


def _plain_log_ticks(ax: Any) -> None:
    """Label a log axis at 1, 2 and 5 times powers of ten, in plain numbers."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    ax.yaxis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(NullFormatter())


def _of(subject: str | None) -> str:
    return "" if not subject else f": {subject}"


def log_spaced(lo: float, hi: float, n: int) -> list[float]:
    """``n`` points from ``lo`` to ``hi`` (both ``> 0``), evenly spaced on a log scale;
    the ends are exactly ``lo`` and ``hi``."""
    a, b = math.log(lo), math.log(hi)
    pts = [math.exp(a + (b - a) * i / (n - 1)) for i in range(n)]
    return [min(max(p, lo), hi) for p in pts]  # ends exactly lo and hi


def accuracy_vs_epsilon(
    *,
    alpha: float = 0.05,
    sensitivity: float = 1.0,
    clamp_bounds: Sequence[float] | None = None,
    clamp_bound: float | None = None,
    epsilons: Sequence[float] | None = None,
    subject: str | None = None,
    plan: _guarantees.StatisticPlan | None = None,
    gamma: float = 0.05,
) -> Figure:
    """Accuracy at confidence ``alpha`` against ε, for snapping and for Laplace.

    Snapping's curve is a staircase: Λ, the smallest power of two ``>= λ``, halves
    each time ε passes a power of two (slightly above it, because ε′ < ε).  The Laplace
    mechanism's accuracy ``Δ·ln(1/α)/ε`` is the smooth curve below it; snapping's is also
    capped at the interval's width ``2B``.

    Parameters
    ----------
    alpha : float
        α in (0, 1).
    sensitivity : float
        Δ.
    clamp_bounds, clamp_bound
        The clamp interval, as for :class:`~snapcore.SnappingMechanism`.
    epsilons : sequence of float, optional
        The ε values (default: 600 points from 0.01 to 100, log-spaced).
    subject : str, optional
        What is released (``"mean, n = 442, data bounds [0, 100]"``), for the title.
    plan : StatisticPlan, optional
        A planned release of a statistic (:func:`snapcore.analysis.plan_statistic`
        made at ε = 1, so that ``plan.epsilon`` is its share of ε per value): at each ε
        shown the clamp interval is chosen from ``gamma`` at that ε, as the release
        would; ``sensitivity`` and the clamp interval are then not used.
    gamma : float
        γ of the planned release.

    Returns
    -------
    matplotlib.figure.Figure
    """
    eps_list = list(epsilons) if epsilons is not None else log_spaced(0.01, 100.0, 600)
    share = 1.0
    if plan is not None:
        share, sensitivity = float(plan.epsilon), float(plan.sensitivity)
    if not eps_list:
        raise ParameterError("epsilons must not be empty")
    snap_e: list[float] = []
    snap_a: list[float] = []
    width = None
    for e in eps_list:
        try:
            cal = (
                _guarantees.calibration_of_plan(plan, e * share, gamma)
                if plan is not None
                else _guarantees.plan_calibration(
                    epsilon=e,
                    sensitivity=sensitivity,
                    clamp_bounds=clamp_bounds,
                    clamp_bound=clamp_bound,
                )
            )
            d = _guarantees.accuracy_details(cal, alpha)
        except ParameterError as exc:
            if "too wide" in str(exc):
                continue
            raise
        snap_e.append(e)
        snap_a.append(d.bound)
        if plan is None:  # planned, the interval, hence the cap 2B, changes with ε: no line
            width = float(d.width)
    lap = [sensitivity * math.log(1 / alpha) / (e * share) for e in eps_list]
    fig = _figure(figsize=(7.0, 4.4), layout="constrained")
    ax = fig.subplots()
    ax.plot(
        eps_list, lap, color=_LAPLACE, lw=1.6, label=r"Laplace: $\Delta\ln(1/\alpha)/\varepsilon$"
    )
    ax.step(snap_e, snap_a, where="post", color=_SNAP, lw=1.8, label="snapping (guarantee)")
    cap_note = ""
    if width is not None and snap_a and width <= 10 * max(snap_a):
        ax.axhline(width, color="0.5", ls=":", lw=1, label=f"cap 2B = {width:g}")
    elif width is not None:  # far above the curves: named, not drawn (the axis stays zoomed)
        cap_note = f"; accuracy capped at 2B = {width:.6g}"
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(r"privacy budget $\varepsilon$")
    ax.set_ylabel(f"accuracy at α = {alpha:g} (user units)")
    fig.suptitle(f"Accuracy vs ε{_of(subject)}", fontsize="large")
    if plan is not None:
        where = f"clamp interval chosen from γ = {gamma:g} at each ε, ε per value = {share:g}·ε"
    else:
        lo, hi = clamp_bounds if clamp_bounds is not None else (-(clamp_bound or 0), clamp_bound)
        where = f"clamp interval [{lo:.6g}, {hi:.6g}]"
    ax.set_title(f"{where}, Δ = {sensitivity:.6g}{cap_note}", fontsize="small")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(loc="lower left")  # the curves fall from upper left to lower right
    return fig


def output_distribution_figure(
    *,
    epsilon: float,
    guess: float,
    sensitivity: float = 1.0,
    clamp_bounds: Sequence[float] | None = None,
    clamp_bound: float | None = None,
    alpha: float | None = 0.05,
    window: int = 12,
    subject: str | None = None,
) -> Figure:
    """The ideal output distribution of one release, for a *guess* of f(D).

    Stems at the grid points ``c + Δ·kΛ`` with their probabilities, the clamp masses at
    the interval's ends in a separate colour, the guess, and (with ``alpha``) the
    accuracy band ``guess ± a``.  Takes a guess, never data.  ``subject`` (what is
    released) goes into the title.  The x-axis zooms to where the mass is.

    Returns
    -------
    matplotlib.figure.Figure
    """
    cal = _guarantees.plan_calibration(
        epsilon=epsilon,
        sensitivity=sensitivity,
        clamp_bounds=clamp_bounds,
        clamp_bound=clamp_bound,
    )
    dist = _estimates.ideal_output_distribution(cal, guess, window=window)
    a = _guarantees.accuracy(cal, alpha) if alpha is not None else 0.0
    fig = _figure(figsize=(7.0, 4.4), layout="constrained")
    ax = fig.subplots()
    lo, hi = float(cal.lower), float(cal.upper)
    step = float(cal.granularity * cal.sensitivity)
    # Zoom to where the mass is: the grid points carrying probability, the accuracy band
    # and the guess; an interval end only if the clamp mass there is visible.
    shown = [v for v, p in zip(dist.values, dist.probabilities, strict=True) if p > 1e-4]
    shown.append(guess)
    if alpha is not None:
        shown += [guess - a, guess + a]
    x0, x1 = max(min(shown), lo), min(max(shown), hi)
    pad = max(0.06 * (x1 - x0), step)
    x0, x1 = x0 - pad, x1 + pad
    pts = list(zip(dist.values, dist.probabilities, dist.clamped, strict=True))
    grid_v = [v for v, _, c in pts if not c]
    grid_p = [p for _, p, c in pts if not c]
    end_v = [v for v, _, c in pts if c and x0 <= v <= x1]  # only an end in view
    end_p = [p for v, p, c in pts if c and x0 <= v <= x1]
    if grid_v:
        ax.stem(grid_v, grid_p, linefmt=_SNAP, markerfmt="o", basefmt=" ", label="grid point")
    if end_v:
        mk = ax.stem(
            end_v,
            end_p,
            linefmt=_CLAMP,
            markerfmt="s",
            basefmt=" ",
            label="interval end (clamp mass)",
        )
        mk.markerline.set_color(_CLAMP)
    ax.axvline(guess, color="k", ls="--", lw=1, label=f"guess f(D) = {guess:g}")
    if alpha is not None:
        ax.axvspan(
            guess - a, guess + a, color=_SNAP, alpha=0.08, label=f"guess ± a (α = {alpha:g})"
        )
    ax.set_xlim(x0, x1)
    ax.set_xlabel("output")
    ax.set_ylabel("probability")
    note = (
        f"\n{dist.omitted:.2g} of the mass lies outside the window" if dist.omitted > 1e-12 else ""
    )
    fig.suptitle(f"One release{_of(subject)}, ε = {epsilon:g}", fontsize="large")
    ax.set_title(
        f"clamp interval [{lo:.6g}, {hi:.6g}], Δ = {sensitivity:.6g}, grid step ΔΛ = "
        f"{step:.6g}{note}",
        fontsize="small",
    )
    ax.grid(True, axis="y", alpha=0.25)
    ax.legend(loc="upper left", fontsize="small")
    return fig


def accuracy_vs_gamma(
    b_prime: float,
    *,
    epsilon: float,
    alpha: float = 0.05,
    sensitivity: float = 1.0,
    gammas: Sequence[float] | None = None,
    subject: str | None = None,
) -> Figure:
    """What γ buys: the clamp bound B, the accuracy, and the worst-case bias, against γ.

    B = B′ + Δ(k/2)(1 + 2 ln(1/γ)) grows as γ shrinks (docs/bounds-and-gamma.md); the
    top panel shows the margin B − B′ next to the accuracy, both in user units.  The
    data-independent accuracy hardly moves (it depends on B only through 12Bη and the 2B
    cap); what γ trades is the bias at the worst case f(D) = B′
    (:func:`~snapcore.analysis.bias` for that guess) and the probability that
    the clamp binds there (:func:`~snapcore.analysis.clamp_probability`, at most
    γ) against a wider interval.
    ``subject`` (what is released) goes into the title.

    Returns
    -------
    matplotlib.figure.Figure
    """
    g_list = list(gammas) if gammas is not None else log_spaced(1e-6, 1.0, 60)
    if not g_list:
        raise ParameterError("gammas must not be empty")
    acc, big_b, b_plus, b_ideal, p_clamp = [], [], [], [], []
    for g in g_list:
        cal = _guarantees.plan_calibration(
            epsilon=epsilon, sensitivity=sensitivity, b_prime=b_prime, gamma=g
        )
        acc.append(_guarantees.accuracy(cal, alpha))
        big_b.append(float(cal.half_width))
        r = _estimates.bias(cal, b_prime)
        b_plus.append(abs(r.bias_plus))
        b_ideal.append(abs(r.ideal))
        p_clamp.append(_estimates.clamp_probability(cal, b_prime))
    fig = _figure(figsize=(7.0, 8.0), layout="constrained")
    ax1, ax2, ax3 = fig.subplots(3, 1, sharex=True)
    # The margin B − B′ is what γ changes (B′ may be decades larger: a count's n).
    ax1.plot(g_list, [b - b_prime for b in big_b], color="0.35", lw=1.6, label="margin B − B′")
    ax1.plot(g_list, acc, color=_SNAP, lw=1.8, label=f"accuracy a (α = {alpha:g})")
    ax1.set_ylabel("user units")
    ax1.set_yscale("log")
    _plain_log_ticks(ax1)  # often less than two decades: ticks at 1, 2, 5 × 10^k
    fig.suptitle(f"Choosing γ{_of(subject)}", fontsize="large")
    ax1.set_title(
        f"B′ = {b_prime:.6g}, ε = {epsilon:.6g}, Δ = {sensitivity:.6g}", fontsize="small"
    )
    ax1.legend(fontsize="small")
    ax1.grid(True, which="both", alpha=0.25)
    floor = 1e-18
    ax2.plot(
        g_list,
        [max(v, floor) for v in b_plus],
        color=_CLAMP,
        ls="--",
        lw=1.4,
        label="|Bias⁺| (bound)",
    )
    ax2.plot(
        g_list,
        [max(v, floor) for v in b_ideal],
        color=_CLAMP,
        lw=1.8,
        label="|bias|, ideal mechanism",
    )
    ax2.set_yscale("log")
    ax2.set_ylabel("|bias| at f(D) = B′")
    ax2.legend(fontsize="small")
    ax2.grid(True, which="both", alpha=0.25)
    ax3.plot(g_list, g_list, color="0.5", ls=":", lw=1, label="γ")
    ax3.plot(
        g_list,
        [max(v, floor) for v in p_clamp],
        color=_SNAP,
        lw=1.8,
        label="P(clamp binds) at f(D) = B′, ideal",
    )
    ax3.set_xscale("log")
    ax3.set_yscale("log")
    ax3.set_xlabel("γ")
    ax3.set_ylabel("probability")
    ax3.legend(fontsize="small")
    ax3.grid(True, which="both", alpha=0.25)
    return fig
