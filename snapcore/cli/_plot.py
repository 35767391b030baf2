"""``snapcore plot``: the accuracy pictures as PNG or SVG files (needs matplotlib)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from snapcore.cli._output import SpelledGroup, emit_json
from snapcore.cli._release import _stat_options

__all__ = ["plot"]


def _save(
    make: Callable[[], Any], output: str, as_json: bool = False, dpi: int = 100, **about: Any
) -> None:
    suffix = Path(output).suffix.lower()
    if suffix not in (".png", ".svg"):
        raise click.UsageError(f"--output must end in .png or .svg, got {output!r}")
    fig = make()  # errors reach the command line's handler (exit status, --json)
    fig.savefig(output, dpi=dpi)
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
    options: dict[str, Any] | None = None,
) -> tuple[float, float, dict[str, Any]]:
    """(ε per value, Δ, clamp keyword) a release of ``statistic`` would use; without
    ``statistic``, ``epsilon``, ``sensitivity`` and the clamp interval given."""
    if not _plans(statistic, n, data_bounds, options):
        return epsilon, sensitivity, _interval(clamp_bounds, clamp_bound)
    from snapcore.analysis._guarantees import plan_calibration

    cal = plan_calibration(
        epsilon=epsilon,
        statistic=statistic,
        n=n,
        data_bounds=data_bounds,
        relation=relation,
        gamma=gamma,
        options=options,
    )
    interval = (float(cal.lower), float(cal.upper))
    return float(cal.epsilon), float(cal.sensitivity), {"clamp_bounds": interval}


def _plans(
    statistic: str | None,
    n: int | None,
    data_bounds: tuple[float, float] | None,
    options: dict[str, Any] | None = None,
) -> bool:
    """Whether the options plan a release of ``statistic``: refuses --n, --data-bounds,
    --bins or --categories without --statistic, and --statistic without --n."""
    if statistic is None:
        if n is not None or data_bounds is not None or options:
            raise click.UsageError(
                "--n, --data-bounds, --bins and --categories plan a release: give --statistic too"
            )
        return False
    if n is None:
        raise click.UsageError("--statistic needs --n, the public number of records")
    return True


def _subject(
    statistic: str | None, n: int | None, data_bounds: tuple[float, float] | None
) -> str | None:
    """What a planned release releases, for a plot's title."""
    if statistic is None:
        return None
    text = f"{statistic} of n = {n}"
    if data_bounds is not None:
        text += f" on [{data_bounds[0]:g}, {data_bounds[1]:g}]"
    return text


def _plan_options(
    statistic_help: str, *, gamma: bool = True
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """--statistic (help: ``statistic_help``), --n, --data-bounds, --relation and, with
    ``gamma``, --gamma."""
    options = [
        click.option("--statistic", default=None, help=statistic_help),
        click.option("--n", "n", type=int, default=None, help="Public number of records."),
        click.option(
            "--data-bounds", nargs=2, type=float, default=None, help="Data bounds LO HI."
        ),
        click.option("--relation", type=click.Choice(["replace", "add-remove"]), default=None),
        click.option("--bins", default=None, help="Histogram bin edges, comma-separated."),
        click.option("--categories", default=None, help="Histogram categories, comma-separated."),
    ]
    if gamma:
        options.append(
            click.option(
                "--gamma", type=float, default=0.05, show_default=True, help="γ of the plan."
            )
        )

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        for opt in reversed(options):
            f = opt(f)
        return f

    return decorate


#: The plan options of the commands that draw one release's clamp interval.
_plan_release = _plan_options(
    "Plan a release of this statistic: Δ and the clamp interval come from --n and "
    "--data-bounds (as snapcore release would choose them)."
)


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
_dpi = click.option(
    "--dpi",
    type=click.IntRange(min=20, max=600),
    default=100,
    show_default=True,
    help="Resolution of a PNG (dots per inch).",
)


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
@_plan_release
@_dpi
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
    bins: str | None,
    categories: str | None,
    gamma: float,
    dpi: int,
    as_json: bool,
) -> None:
    """Accuracy against ε for snapping and for the Laplace mechanism.

    With --statistic, --n and --data-bounds (--bins or --categories for a histogram),
    Δ, ε per value and the clamp interval are those a release would use at each ε
    shown (the interval chosen from --gamma at that ε).
    """
    from snapcore import plots

    if not 0 < eps_min < eps_max:
        raise click.UsageError(f"need 0 < --eps-min < --eps-max, got {eps_min}, {eps_max}")
    eps = plots.log_spaced(eps_min, eps_max, 600)
    options = _stat_options(bins, categories)
    plan = None
    where: dict[str, Any] = {}
    if _plans(statistic, n, data_bounds, options):
        from snapcore.analysis._guarantees import plan_statistic

        plan = plan_statistic(
            statistic,
            epsilon=1,
            n=n,
            data_bounds=data_bounds,
            relation=relation,
            options=options,
        )
    else:
        where = _interval(clamp_bounds, clamp_bound)
    _save(
        lambda: plots.accuracy_vs_epsilon(
            alpha=alpha,
            sensitivity=sensitivity,
            epsilons=eps,
            subject=_subject(statistic, n, data_bounds),
            plan=plan,
            gamma=gamma,
            **where,
        ),
        output,
        as_json,
        dpi,
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
@_plan_release
@_dpi
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
    bins: str | None,
    categories: str | None,
    gamma: float,
    dpi: int,
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
        statistic,
        n,
        data_bounds,
        relation,
        epsilon,
        gamma,
        sensitivity,
        clamp_bounds,
        clamp_bound,
        _stat_options(bins, categories),
    )
    _save(
        lambda: plots.output_distribution_figure(
            epsilon=epsilon,
            guess=guess,
            sensitivity=sensitivity,
            alpha=alpha,
            window=window,
            subject=_subject(statistic, n, data_bounds),
            **where,
        ),
        output,
        as_json,
        dpi,
    )


@plot.command("gamma")
@click.option("--b-prime", type=float, default=None, help="B′: the largest |f(D) − centre|.")
@click.option(
    "--epsilon", type=float, required=True, help="ε (with --statistic: the release's total ε)."
)
@_sens
@_alpha
@click.option("-o", "--output", default="accuracy-vs-gamma.png", show_default=True)
@_plan_options(
    "Plan a release of this statistic: Δ, ε per value and B′ (half the width of its "
    "range) come from --n and --data-bounds.",
    gamma=False,
)
@_dpi
@_json
def gamma_cmd(
    b_prime: float | None,
    epsilon: float,
    sensitivity: float,
    alpha: float,
    output: str,
    statistic: str | None,
    n: int | None,
    data_bounds: tuple[float, float] | None,
    relation: str | None,
    bins: str | None,
    categories: str | None,
    dpi: int,
    as_json: bool,
) -> None:
    """Clamp bound, accuracy and worst-case bias against γ.

    \b
    Plan it from the release instead of typing B′ and Δ:
      snapcore plot gamma --statistic mean --n 442 --data-bounds 0 100 --epsilon 1
    """
    from snapcore import plots

    if statistic is not None and b_prime is not None:
        raise click.UsageError("--statistic plans B′ itself: leave out --b-prime")
    options = _stat_options(bins, categories)
    if not _plans(statistic, n, data_bounds, options):
        if b_prime is None:
            raise click.UsageError(
                "give --b-prime (or plan a release with --statistic, --n and --data-bounds)"
            )
        eps_each, bp = epsilon, b_prime
    else:
        from snapcore.analysis._guarantees import plan_statistic

        assert n is not None  # _plans refuses --statistic without --n
        plan = plan_statistic(
            statistic,
            epsilon=epsilon,
            n=n,
            data_bounds=data_bounds,
            relation=relation,
            options=options,
        )
        lo, hi = plan.value_range
        eps_each, sensitivity, bp = (
            float(plan.epsilon),
            float(plan.sensitivity),
            float((hi - lo) / 2),
        )
    _save(
        lambda: plots.accuracy_vs_gamma(
            bp,
            epsilon=eps_each,
            alpha=alpha,
            sensitivity=sensitivity,
            subject=_subject(statistic, n, data_bounds),
        ),
        output,
        as_json,
        dpi,
        b_prime=bp,
        epsilon_per_value=eps_each,
        sensitivity=sensitivity,
    )
