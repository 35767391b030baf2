"""``snapcore info``: the registered plugins and the parameters a mechanism would use."""

from __future__ import annotations

import click

from snapcore.errors import SnapcoreError
from snapcore.plugins import get_registries

__all__ = ["info"]


@click.command()
@click.option("--epsilon", type=float, default=None, help="Show the calibration for this ε.")
@click.option("--clamp-bounds", nargs=2, type=float, default=None, help="Clamp interval LO HI.")
@click.option("--sensitivity", type=float, default=1.0, show_default=True)
def info(
    epsilon: float | None, clamp_bounds: tuple[float, float] | None, sensitivity: float
) -> None:
    """List backends, sources and statistics; with --epsilon and --clamp-bounds, show the
    exact calibration (precision, ε′, λ, Λ)."""
    reg = get_registries()
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
    if epsilon is not None or clamp_bounds is not None:
        from snapcore.mechanism import SnappingMechanism

        try:
            m = SnappingMechanism(
                epsilon=epsilon,
                clamp_bounds=clamp_bounds,
                sensitivity=sensitivity,
                source="system",
            )
        except SnapcoreError as exc:
            raise click.UsageError(str(exc)) from None
        click.echo(f"precision p      = {m.precision}")
        click.echo(f"epsilon'         = {float(m.epsilon_prime)!r}")
        click.echo(f"scale lambda     = {float(m.scale)!r}")
        click.echo(f"granularity      = {float(m.granularity)!r} (Lambda, sensitivity units)")
        click.echo(f"grid step        = {float(m.grid_step)!r} (Delta * Lambda, data units)")
        click.echo(f"privacy bound    = {float(m.privacy.bound)!r} <= epsilon = {epsilon!r}")
