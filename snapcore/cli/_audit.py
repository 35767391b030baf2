"""``snapcore audit``: the exact worst-case privacy loss between two inputs."""

from __future__ import annotations

import sys
from typing import Any

import click

from snapcore.cli._output import (
    EXIT_REFUSED,
    SpelledCommand,
    emit_json,
    progress_option,
    shows_progress,
)
from snapcore.cli._plot import _plan_options, _planned
from snapcore.cli._release import _stat_options

__all__ = ["audit_command"]


@click.command("audit", cls=SpelledCommand)
@click.option("--epsilon", type=float, required=True, help="The privacy budget ε.")
@click.option("--clamp-bounds", nargs=2, type=float, default=None, help="Clamp interval LO HI.")
@click.option("--clamp-bound", type=float, default=None, help="Symmetric clamp bound B: [-B, B].")
@click.option("--sensitivity", type=float, default=1.0, show_default=True, help="Δ.")
@click.option("--value", type=float, required=True, help="The input f(D).")
@click.option(
    "--neighbour",
    type=float,
    default=None,
    help="The neighbouring input f(D'); default: value + sensitivity.",
)
@click.option("--backend", default="mpfr", show_default=True, help="Arithmetic backend.")
@click.option(
    "--sampler-precision",
    type=int,
    default=None,
    help=(
        "DEMONSTRATION ONLY: model U* on a q-bit grid (53 = a double-precision sampler, "
        "as in Mironov 2012)."
    ),
)
@click.option(
    "--max-outputs",
    type=int,
    default=None,
    help="Refuse parameters with more outputs than this (default 32768).",
)
@click.option("--show-distribution", is_flag=True, help="Print both exact distributions.")
@_plan_options(
    "Plan a release of this statistic: ε per value, Δ and the clamp interval come from "
    "--epsilon (the release's total), --n, --data-bounds (or --bins/--categories) and "
    "--gamma, as snapcore release would choose them."
)
@progress_option
@click.option("--json", "as_json", is_flag=True, help="Print the audit result as JSON.")
def audit_command(
    epsilon: float,
    clamp_bounds: tuple[float, float] | None,
    clamp_bound: float | None,
    sensitivity: float,
    value: float,
    neighbour: float | None,
    backend: str,
    sampler_precision: int | None,
    max_outputs: int | None,
    show_distribution: bool,
    statistic: str | None,
    n: int | None,
    data_bounds: tuple[float, float] | None,
    relation: str | None,
    bins: str | None,
    categories: str | None,
    gamma: float,
    progress: bool | None,
    as_json: bool,
) -> None:
    """Audit the mechanism exactly: the worst-case privacy loss between VALUE and
    NEIGHBOUR, the output where it is attained, and the verdict against ε.

    Exit status: 0 if the loss is <= ε, 4 (privacy refused) if it is not, 2 on bad
    parameters, 1 if the audit finds the mechanism inconsistent.

    \b
    Audit the mechanism a planned release would use:
      snapcore audit --statistic mean --n 442 --data-bounds 0 100 --epsilon 1 --value 48
    """
    from snapcore.analysis._audit import DEFAULT_MAX_OUTPUTS, audit
    from snapcore.mechanism._mechanism import SnappingMechanism

    planned = statistic is not None
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
    if planned and (clamp_bounds is not None or clamp_bound is not None):
        raise click.UsageError("--statistic plans the clamp interval: leave out --clamp-bounds")
    if neighbour is None:
        neighbour = value + sensitivity
    progress = shows_progress(progress, as_json)
    m = SnappingMechanism(
        epsilon=epsilon,
        sensitivity=sensitivity,
        backend=backend,
        **where,
    )
    r = audit(
        m,
        value,
        neighbour,
        sampler_precision=sampler_precision,
        max_outputs=DEFAULT_MAX_OUTPUTS if max_outputs is None else max_outputs,
        progress=progress,
    )
    lo, hi = m.clamp_bounds
    if as_json:
        out: dict[str, Any] = {
            "epsilon": epsilon,
            "clamp_bounds": [lo, hi],
            "sensitivity": sensitivity,
            "backend": r.backend,
            "precision": r.precision,
            "sampler_precision": r.sampler_precision,
            "value": r.value,
            "neighbour": r.neighbour,
            "outputs": [len(r.distribution), len(r.neighbour_distribution)],
            "privacy_loss": None if r.max_ratio is None else r.loss_decimal,
            "loss_minus_epsilon": None if r.max_ratio is None else float(r.excess),
            "attained_at": list(r.attained_at),
            "more_likely_under": r.more_likely_under,
            "private": r.private,
            "verdict": r.verdict,
        }
        if show_distribution:
            pv, pw = r.distribution.as_dict(), r.neighbour_distribution.as_dict()
            out["distribution"] = [
                [o, str(pv.get(o, 0)), str(pw.get(o, 0))] for o in sorted(set(pv) | set(pw))
            ]
        emit_json(out)
        if not r.private:
            sys.exit(EXIT_REFUSED)
        return
    click.echo(
        f"mechanism: epsilon={epsilon!r} clamp_bounds=[{lo!r}, {hi!r}] "
        f"sensitivity={sensitivity!r} "
        f"backend={r.backend} p={r.precision}"
    )
    if r.sampler_precision != r.precision:
        click.echo(
            f"sampler: U* on the {r.sampler_precision}-bit grid (DEMONSTRATION: not "
            "snapcore's sampler)"
        )
    click.echo(f"inputs: value={r.value!r} neighbour={r.neighbour!r}")
    click.echo(
        f"outputs: {len(r.distribution)} for value, {len(r.neighbour_distribution)} for "
        "neighbour (each distribution sums to exactly 1)"
    )
    if r.max_ratio is None:
        click.echo("privacy loss: inf")
    else:
        click.echo(f"privacy loss: {r.loss_decimal} (loss - epsilon = {r.excess:.6g})")
    shown = ", ".join(repr(o) for o in r.attained_at[:8])
    more = f" and {len(r.attained_at) - 8} more" if len(r.attained_at) > 8 else ""
    who = (
        "equally likely under both"
        if r.more_likely_under == "neither"
        else f"more likely under the {r.more_likely_under}"
    )
    click.echo(f"attained at output: {shown}{more} ({who})")
    if show_distribution:
        pv, pw = r.distribution.as_dict(), r.neighbour_distribution.as_dict()
        click.echo("output\tP(o|value)\tP(o|neighbour)")
        for o in sorted(set(pv) | set(pw)):
            click.echo(f"{o!r}\t{float(pv.get(o, 0))!r}\t{float(pw.get(o, 0))!r}")
    click.echo(f"verdict: {r.verdict}")
    if not r.private:
        sys.exit(EXIT_REFUSED)
