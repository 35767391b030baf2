"""``snapcore plot``: the accuracy pictures as PNG or SVG files (needs matplotlib)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from snapcore.cli._output import SpelledGroup, emit_json

__all__ = ["plot"]


def _save(make: Callable[[], Any], output: str, as_json: bool = False, **about: Any) -> None:
    suffix = Path(output).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise click.UsageError(f"--output must end in .png or .svg, got {output!r}")
    fig = make()  # errors reach the command line's handler (exit status, --json)
    fig.savefig(output, dpi=130)
    if as_json:
        emit_json({"written": output, **about})
    else:
        click.echo(f"wrote {output}")


def _planned(
    statistic: str | None,
    n: int | None,
    data_bounds: tuple[float, float] | None,
    relation: str | None,
    epsilon: float,
    gamma: float,
    sensitivity: float,
    clamp_bounds: tuple[float, float] | None,
    clamp_bound: float | None,
) -> tuple[float, float, dict[str, Any]]:
    """(ε per value, Δ, clamp keyword) a release of ``statistic`` would use; without
    ``statistic``, ``epsilon``, ``sensitivity`` and the clamp interval given."""
    if statistic is None:
        if n is not None or data_bounds is not None:
            raise click.UsageError("--n and --data-bounds plan a release: give --statistic too")
        return epsilon, sensitivity, _interval(clamp_bounds, clamp_bound)
    from snapcore.accuracy import plan_calibration

    if n is None:
        raise click.UsageError("--statistic needs --n, the public number of records")
    cal = plan_calibration(
        epsilon=epsilon,
        statistic=statistic,
        n=n,
        data_bounds=data_bounds,
        relation=relation,
        gamma=gamma,
    )
    interval = (float(cal.lower), float(cal.upper))
    return float(cal.epsilon), float(cal.sensitivity), {"clamp_bounds": interval}


def _plan_options(f: Callable[..., Any]) -> Callable[..., Any]:
    for opt in reversed(
        [
            click.option(
                "--statistic",
                default=None,
                help="Plan a release of this statistic: Δ and the clamp interval come from "
                "--n and --data-bounds (as snapcore release would choose them).",
            ),
            click.option("--n", "n", type=int, default=None, help="Public number of records."),
            click.option(
                "--data-bounds", nargs=2, type=float, default=None, help="Data bounds LO HI."
            ),
            click.option("--relation", type=click.Choice(["replace", "add-remove"]), default=None),
            click.option(
                "--gamma", type=float, default=0.05, show_default=True, help="γ of the plan."
            ),
        ]
    ):
        f = opt(f)
    return f


def _interval(
    clamp_bounds: tuple[float, float] | None, clamp_bound: float | None
) -> dict[str, Any]:
    if (clamp_bounds is None) == (clamp_bound is None):
        raise click.UsageError(
            "give exactly one of --clamp-bounds LO HI and --clamp-bound B (or plan a release "
            "with --statistic, --n and --data-bounds)"
        )
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
_json = click.option("--json", "as_json", is_flag=True, help="Print what was written as JSON.")


@click.group(cls=SpelledGroup, context_settings={"ignore_unknown_options": False})
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
@_plan_options
@_json
def accuracy_cmd(
    clamp_bounds: tuple[float, float] | None,
    clamp_bound: float | None,
    sensitivity: float,
    alpha: float,
    eps_min: float,
    eps_max: float,
    output: str,
    statistic: str | None,
    n: int | None,
    data_bounds: tuple[float, float] | None,
    relation: str | None,
    gamma: float,
    as_json: bool,
) -> None:
    """Accuracy against ε for snapping and for the Laplace mechanism.

    With --statistic, --n and --data-bounds, Δ and the clamp interval are those a
    release at ε = 1 would use (the interval depends on ε only through its margin).
    """
    from snapcore import plots

    if not 0 < eps_min < eps_max:
        raise click.UsageError(f"need 0 < --eps-min < --eps-max, got {eps_min}, {eps_max}")
    eps = plots._geomspace(eps_min, eps_max, 600)
    _, sensitivity, where = _planned(
        statistic, n, data_bounds, relation, 1.0, gamma, sensitivity, clamp_bounds, clamp_bound
    )
    _save(
        lambda: plots.accuracy_vs_epsilon(
            alpha=alpha, sensitivity=sensitivity, epsilons=eps, **where
        ),
        output,
        as_json,
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
@_plan_options
@_json
def distribution_cmd(
    epsilon: float,
    guess: float,
    clamp_bounds: tuple[float, float] | None,
    clamp_bound: float | None,
    sensitivity: float,
    alpha: float,
    window: int,
    output: str,
    statistic: str | None,
    n: int | None,
    data_bounds: tuple[float, float] | None,
    relation: str | None,
    gamma: float,
    as_json: bool,
) -> None:
    """The output distribution of one release for a guess of f(D).

    \b
    Plan it from the release instead of typing Δ:
      snapcore plot distribution --statistic mean --n 442 --data-bounds 0 100 \
          --epsilon 1 --guess 48.5
    """
    from snapcore import plots

    epsilon, sensitivity, where = _planned(
        statistic, n, data_bounds, relation, epsilon, gamma, sensitivity, clamp_bounds, clamp_bound
    )
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
        as_json,
    )


@plot.command("gamma")
@click.option("--b-prime", type=float, required=True, help="B′: the largest |f(D)|.")
@click.option("--epsilon", type=float, required=True, help="ε.")
@_sens
@_alpha
@click.option("-o", "--output", default="accuracy-vs-gamma.png", show_default=True)
@_json
def gamma_cmd(
    b_prime: float, epsilon: float, sensitivity: float, alpha: float, output: str, as_json: bool
) -> None:
    """Clamp bound, accuracy and worst-case bias against γ."""
    from snapcore import plots

    _save(
        lambda: plots.accuracy_vs_gamma(
            b_prime, epsilon=epsilon, alpha=alpha, sensitivity=sensitivity
        ),
        output,
        as_json,
    )
