"""``snapcore plot``: the utility pictures as PNG or SVG files (needs matplotlib)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from snapcore.errors import SnapcoreError

__all__ = ["plot"]


def _save(make: Callable[[], Any], output: str) -> None:
    suffix = Path(output).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise click.UsageError(f"--output must end in .png or .svg, got {output!r}")
    try:
        fig = make()
        fig.savefig(output, dpi=130)
    except ImportError as exc:  # PlotDependencyError
        raise click.ClickException(str(exc)) from None
    except SnapcoreError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(f"wrote {output}")


def _interval(bounds: tuple[float, float] | None, bound: float | None) -> dict[str, Any]:
    if (bounds is None) == (bound is None):
        raise click.UsageError("give exactly one of --bounds LO HI and --bound B")
    return {"bounds": bounds} if bounds is not None else {"bound": bound}


_bounds = click.option("--bounds", nargs=2, type=float, default=None, help="Interval LO HI.")
_bound = click.option("--bound", type=float, default=None, help="Symmetric interval [-B, B].")
_sens = click.option("--sensitivity", type=float, default=1.0, show_default=True, help="Δ.")
_alpha = click.option("--alpha", type=float, default=0.05, show_default=True, help="α.")


@click.group()
def plot() -> None:
    """Draw the utility pictures (accuracy vs ε, one release's distribution, γ).

    Needs matplotlib: pip install "snapcore[plot]".
    """


@plot.command("accuracy")
@_bounds
@_bound
@_sens
@_alpha
@click.option("--eps-min", type=float, default=0.01, show_default=True)
@click.option("--eps-max", type=float, default=100.0, show_default=True)
@click.option("-o", "--output", default="accuracy-vs-epsilon.png", show_default=True)
def accuracy_cmd(
    bounds: tuple[float, float] | None,
    bound: float | None,
    sensitivity: float,
    alpha: float,
    eps_min: float,
    eps_max: float,
    output: str,
) -> None:
    """Accuracy against ε for snapping and for the Laplace mechanism."""
    from snapcore import plots

    if not 0 < eps_min < eps_max:
        raise click.UsageError(f"need 0 < --eps-min < --eps-max, got {eps_min}, {eps_max}")
    eps = plots._geomspace(eps_min, eps_max, 600)
    where = _interval(bounds, bound)
    _save(
        lambda: plots.accuracy_vs_epsilon(
            alpha=alpha, sensitivity=sensitivity, epsilons=eps, **where
        ),
        output,
    )


@plot.command("distribution")
@click.option("--epsilon", type=float, required=True, help="ε.")
@click.option("--guess", type=float, required=True, help="A guess of f(D) (never the data).")
@_bounds
@_bound
@_sens
@_alpha
@click.option("--window", type=int, default=12, show_default=True, help="Grid steps shown.")
@click.option("-o", "--output", default="output-distribution.png", show_default=True)
def distribution_cmd(
    epsilon: float,
    guess: float,
    bounds: tuple[float, float] | None,
    bound: float | None,
    sensitivity: float,
    alpha: float,
    window: int,
    output: str,
) -> None:
    """The output distribution of one release for a guess of f(D)."""
    from snapcore import plots

    where = _interval(bounds, bound)
    _save(
        lambda: plots.output_distribution(
            epsilon=epsilon,
            guess=guess,
            sensitivity=sensitivity,
            alpha=alpha,
            window=window,
            **where,
        ),
        output,
    )


@plot.command("gamma")
@click.option("--b-prime", type=float, required=True, help="B′: the largest |f(D)|.")
@click.option("--epsilon", type=float, required=True, help="ε.")
@_sens
@_alpha
@click.option("-o", "--output", default="accuracy-vs-gamma.png", show_default=True)
def gamma_cmd(
    b_prime: float, epsilon: float, sensitivity: float, alpha: float, output: str
) -> None:
    """Clamp bound, accuracy and worst-case bias against γ."""
    from snapcore import plots

    _save(
        lambda: plots.accuracy_vs_gamma(
            b_prime, epsilon=epsilon, alpha=alpha, sensitivity=sensitivity
        ),
        output,
    )
