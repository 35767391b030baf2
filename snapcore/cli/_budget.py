"""``snapcore budget``: a durable privacy-budget ledger for the command line.

::

    snapcore budget init budget.ledger --epsilon 1
    snapcore release mean --column age --bounds 0 100 --epsilon 0.25 --ledger budget.ledger
    snapcore budget show budget.ledger

See :mod:`snapcore.releases._ledger` for what the ledger guarantees.
"""

from __future__ import annotations

import click

from snapcore.cli._output import SpelledGroup, emit_json

__all__ = ["budget"]


@click.group(cls=SpelledGroup)
def budget() -> None:
    """Create and inspect a budget ledger (a total ε shared by every release)."""


@budget.command("init")
@click.argument("ledger", type=click.Path(dir_okay=False))
@click.option(
    "--epsilon",
    "-e",
    required=True,
    help="The total ε, read exactly (a decimal such as 1 or 0.5, or a fraction p/q).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the new ledger as JSON.")
def init(ledger: str, epsilon: str, as_json: bool) -> None:
    """Create the ledger LEDGER holding a total ε (never overwrites a file)."""
    from snapcore._display import short
    from snapcore.releases._ledger import Ledger, parse_epsilon

    # errors reach the command line's handler: exit status and --json (snapcore.cli)
    led = Ledger.init(ledger, parse_epsilon(epsilon))
    if as_json:
        emit_json(led.to_dict())
        return
    click.echo(f"created budget ledger {ledger} with total epsilon {short(led.total)}")


@budget.command("show")
@click.argument("ledger", type=click.Path(dir_okay=False))
@click.option("--json", "as_json", is_flag=True, help="Print the ledger as JSON (exact p/q too).")
def show(ledger: str, as_json: bool) -> None:
    """Show the totals and the history of LEDGER (after checking it whole)."""
    from snapcore._display import short
    from snapcore.releases._ledger import SCHEMA_VERSION, Ledger

    led = Ledger(ledger)
    st = led.state()
    if as_json:
        emit_json(led.to_dict())
        return
    click.echo(f"budget ledger {ledger} (schema {SCHEMA_VERSION}, created {st.created})")
    click.echo(f"  total      {short(st.total)}")
    click.echo(f"  spent      {short(st.spent)}")
    click.echo(f"  remaining  {short(st.remaining)}")
    if not st.entries:
        click.echo("  no spends yet")
        return
    rows = [("#", "time (UTC)", "epsilon", "cumulative", "status", "pid", "label")]
    for e in st.entries:
        rows.append(
            (
                str(e.index),
                e.time,
                short(e.epsilon),
                short(e.cumulative),
                e.status,
                str(e.pid),
                e.label,
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        click.echo("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())
    if any(e.status == "committed" for e in st.entries):
        click.echo(
            "  note: 'committed' entries were spent before noise was drawn and never "
            "finished (still running, or killed); they count as spent"
        )
