"""``snapcore plot``: the accuracy pictures as PNG or SVG files (needs matplotlib)."""

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


def _interval(
    clamp_bounds: tuple[float, float] | None, clamp_bound: float | None
) -> dict[str, Any]:
    if (clamp_bounds is None) == (clamp_bound is None):
        raise click.UsageError("give exactly one of --clamp-bounds LO HI and --clamp-bound B")
    if clamp_bounds is not None:
        return {"clamp_bounds": clamp_bounds}
    return {"clamp_bound": clamp_bound}


_bounds = click.option(
    "--clamp-bounds", nargs=2, type=float, default=None, help="Clamp interval LO HI."
)
_bound = click.option(
    "--clamp-bound", type=float, default=None, help="Symmetric clamp interval [-B, B]."
)
_sens = click.option("--sensitivity", type=float, default=1.0, show_default=True, help="Δ.")
_alpha = click.option("--alpha", type=float, default=0.05, show_default=True, help="α.")


@click.group()
def plot() -> None:
    """Draw the accuracy pictures (accuracy vs ε, one release's distribution, γ).

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
    clamp_bounds: tuple[float, float] | None,
    clamp_bound: float | None,
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
    where = _interval(clamp_bounds, clamp_bound)
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
    clamp_bounds: tuple[float, float] | None,
    clamp_bound: float | None,
    sensitivity: float,
    alpha: float,
    window: int,
    output: str,
) -> None:
    """The output distribution of one release for a guess of f(D)."""
    from snapcore import plots

    where = _interval(clamp_bounds, clamp_bound)
    _save(
        lambda: plots.output_distribution_figure(
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
