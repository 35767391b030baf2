"""``snapcore compare``: version, conformance and speed of every registered backend, and
the conformance of every installed statistic."""

from __future__ import annotations

import platform
import sys
from typing import Any

import attrs
import click

from snapcore.cli._output import (
    EXIT_INTERNAL,
    SpelledCommand,
    emit_json,
    progress_option,
    shows_progress,
)

__all__ = ["compare"]


@click.command(cls=SpelledCommand)
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
@click.option("--backend", "backend", multiple=True, help="Only these backends (repeatable).")
@progress_option
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
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
    backend: tuple[str, ...],
    statistics: tuple[str, ...],
    no_statistics: bool,
    progress: bool | None,
    as_json: bool,
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
    The exit status is 1 (internal error) if any backend or statistic fails.
    """
    from snapcore.testing._comparison import compare_backends, format_table

    progress = shows_progress(progress, as_json)
    bar: Any = None
    if progress:
        from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

        bar = tqdm(total=1, desc="compare", unit="step", leave=False, file=sys.stderr)

    def advance(what: str, total: int) -> None:
        if bar.total != total:
            bar.total = total
        if bar.n or bar.postfix:
            bar.update(1)
        bar.set_postfix_str(what)

    try:
        rows = compare_backends(
            backend or None,
            size=size,
            scalar_seconds=seconds,
            conformance=not no_conformance,
            repeat=repeat,
            progress=advance if bar is not None else None,
        )
        stats: list[Any] = []
        if not no_statistics:
            from snapcore.testing._comparison import compare_statistics

            if bar is not None:
                bar.set_postfix_str("statistics")
            stats = compare_statistics(statistics or None, conformance=not no_conformance)
    finally:
        if bar is not None:
            bar.update(bar.total - bar.n)
            bar.close()
    failed = any(r.available and not r.conformance.startswith(("pass", "not run")) for r in rows)
    failed = failed or any(not s.conformance.startswith(("pass", "not run")) for s in stats)
    if as_json:
        emit_json(
            {
                "python": platform.python_version(),
                "machine": platform.machine(),
                "backends": [attrs.asdict(r) for r in rows],
                "statistics": [attrs.asdict(s) for s in stats],
                "conformance_failed": failed,
            }
        )
        if failed:
            raise SystemExit(EXIT_INTERNAL)
        return
    click.echo(
        f"# python {platform.python_version()} on {platform.machine()} "
        f"({platform.processor() or platform.system()})"
    )
    click.echo(format_table(rows, markdown=markdown))
    if stats:
        from snapcore.testing._comparison import format_statistics_table

        click.echo("")
        click.echo(format_statistics_table(stats, markdown=markdown))
    if failed:
        raise SystemExit(EXIT_INTERNAL)
