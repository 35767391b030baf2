"""``snapcore info``: the registered plugins and the parameters a mechanism would use."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from snapcore.cli._output import SpelledCommand, emit_json
from snapcore.plugins._manager import get_registries

if TYPE_CHECKING:
    from snapcore.mechanism._mechanism import SnappingMechanism

__all__ = ["info"]


@click.command(cls=SpelledCommand)
@click.option("--epsilon", type=float, default=None, help="Show the calibration for this ε.")
@click.option("--clamp-bounds", nargs=2, type=float, default=None, help="Clamp interval LO HI.")
@click.option("--sensitivity", type=float, default=1.0, show_default=True)
@click.option("--json", "as_json", is_flag=True, help="Print the listing as JSON.")
def info(
    epsilon: float | None,
    clamp_bounds: tuple[float, float] | None,
    sensitivity: float,
    as_json: bool,
) -> None:
    """List backends, sources and statistics; with --epsilon and --clamp-bounds, show the
    exact calibration (precision, ε′, λ, Λ)."""
    reg = get_registries()
    # a bad calibration request fails before anything is printed
    m = (
        None
        if epsilon is None and clamp_bounds is None
        else _mechanism(epsilon, clamp_bounds, sensitivity)
    )
    if as_json:
        out: dict[str, Any] = {
            "backends": [
                {
                    "name": name,
                    "library": reg.backends.get(name).library,
                    "available": reg.backends.get(name).is_available(),
                    "install_hint": reg.backends.get(name).install_hint,
                    "origin": reg.backends.origin(name),
                }
                for name in reg.backends
            ],
            "sources": [{"name": n, "origin": reg.sources.origin(n)} for n in reg.sources],
            "statistics": [
                {"name": n, "origin": reg.statistics.origin(n)} for n in reg.statistics
            ],
        }
        if m is not None:
            out["calibration"] = {
                "precision": m.precision,
                "epsilon_prime": float(m.epsilon_prime),
                "scale": float(m.scale),
                "granularity": float(m.granularity),
                "grid_step": float(m.grid_step),
                "grid_step_exact": str(m.grid_step),
                "privacy_bound": float(m.privacy.bound),
                "privacy_bound_exact": str(m.privacy.bound),
                "epsilon": epsilon,
            }
        emit_json(out)
        return
    click.echo("backends:")
    for name in reg.backends:
        cls = reg.backends.get(name)
        state = "available" if cls.is_available() else f"unavailable ({cls.install_hint})"
        click.echo(f"  {name:10s} {cls.library:14s} {state}  [{reg.backends.origin(name)}]")
    click.echo("sources:")
    for name in reg.sources:
        click.echo(f"  {name:10s} [{reg.sources.origin(name)}]")
    click.echo("statistics:")
    for name in reg.statistics:
        click.echo(f"  {name:10s} [{reg.statistics.origin(name)}]")
    if m is not None:
        click.echo(f"precision p      = {m.precision}")
        click.echo(f"epsilon'         = {float(m.epsilon_prime)!r}")
        click.echo(f"scale lambda     = {float(m.scale)!r}")
        click.echo(f"granularity      = {float(m.granularity)!r} (Lambda, sensitivity units)")
        click.echo(f"grid step        = {float(m.grid_step)!r} (Delta * Lambda, data units)")
        click.echo(f"privacy bound    = {float(m.privacy.bound)!r} <= epsilon = {epsilon!r}")


def _mechanism(
    epsilon: float | None, clamp_bounds: tuple[float, float] | None, sensitivity: float
) -> SnappingMechanism:
    from snapcore.mechanism._mechanism import SnappingMechanism

    if epsilon is None or clamp_bounds is None:
        raise click.UsageError("the calibration needs both --epsilon and --clamp-bounds LO HI")
    return SnappingMechanism(
        epsilon=epsilon, clamp_bounds=clamp_bounds, sensitivity=sensitivity, source="system"
    )
