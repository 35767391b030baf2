"""``snapcore compare``: version, conformance and speed of every registered backend, and
the conformance of every installed statistic."""

from __future__ import annotations

import platform

import click

__all__ = ["compare"]


@click.command()
@click.option(
    "--size",
    type=click.IntRange(min=1),
    default=100_000,
    show_default=True,
    help="Elements of the array release.",
)
@click.option(
    "--seconds",
    type=click.FloatRange(min=0.01),
    default=1.0,
    show_default=True,
    help="Time spent looping scalar releases, per backend.",
)
@click.option(
    "--repeat",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="Array releases per backend; the fastest counts.",
)
@click.option("--no-conformance", is_flag=True, help="Skip the quick conformance run.")
@click.option("--markdown", is_flag=True, help="Print a Markdown table.")
@click.option("--backend", "names", multiple=True, help="Only these backends (repeatable).")
@click.option(
    "--statistic", "statistics", multiple=True, help="Only these statistics (repeatable)."
)
@click.option("--no-statistics", is_flag=True, help="Skip the statistics table.")
def compare(
    size: int,
    seconds: float,
    repeat: int,
    no_conformance: bool,
    markdown: bool,
    names: tuple[str, ...],
    statistics: tuple[str, ...],
    no_statistics: bool,
) -> None:
    """Compare the registered arithmetic backends; check the installed statistics.

    For each backend: the library version; a quick conformance run (every primitive
    at p = 53, 118 and 400 against the exact reference, the committed hard-to-round
    LN cases, and 2,000 pipeline draws on two parameter sets, bit for bit); scalar
    releases per second; and one release of a SIZE-element array, in values per
    second (the fastest of --repeat runs).  Scalar timing and array runs go round-robin
    over the backends, so that a change of machine load affects all alike.  Every
    backend releases with ε = 1, bounds [0, 100] (p = 118) from the
    same seeded draws, so the last column checks that their outputs are identical.
    Ratios are to the first backend (mpfr).

    Then, for every installed statistic (built-in or plugin): the plugin that
    registered it, its relations, and a quick run of the statistic conformance suite
    (exact sensitivity, ε split and value range on extremal datasets and their
    neighbours, and random neighbouring pairs released end to end from frozen draws).
    The exit status is 1 if any backend or statistic fails.
    """
    from snapcore.compare import compare_backends, format_table
    from snapcore.errors import SnapcoreError

    try:
        rows = compare_backends(
            names or None,
            size=size,
            scalar_seconds=seconds,
            conformance=not no_conformance,
            repeat=repeat,
        )
    except SnapcoreError as exc:
        raise click.UsageError(str(exc)) from None
    click.echo(
        f"# python {platform.python_version()} on {platform.machine()} "
        f"({platform.processor() or platform.system()})"
    )
    click.echo(format_table(rows, markdown=markdown))
    failed = any(r.available and not r.conformance.startswith(("pass", "not run")) for r in rows)
    if not no_statistics:
        from snapcore.compare import compare_statistics, format_statistics_table

        try:
            stats = compare_statistics(statistics or None, conformance=not no_conformance)
        except SnapcoreError as exc:
            raise click.UsageError(str(exc)) from None
        click.echo("")
        click.echo(format_statistics_table(stats, markdown=markdown))
        failed = failed or any(not s.conformance.startswith(("pass", "not run")) for s in stats)
    if failed:
        raise SystemExit(1)
