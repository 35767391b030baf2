"""``snapcore release``: release a statistic of a CSV column, ε-differentially private.

Without a CSV file it uses the bundled synthetic example table
(:mod:`snapcore.data`), so it works on a fresh install::

    snapcore release mean --column age --data-bounds 0 100 --epsilon 1
"""

from __future__ import annotations

import csv
import json
import re
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import click

from snapcore.errors import SnapcoreError

__all__ = ["release"]


class _OneLineErrors(click.Command):
    """Report bad arguments as one line (``Error: ...``), exit status 2, no usage dump."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent=parent, **extra)
        except click.UsageError as exc:
            raise _Fail(f"{exc.format_message()} (see 'snapcore release --help')") from None


class _Fail(click.ClickException):
    exit_code = 2

    def __init__(self, message: str) -> None:
        super().__init__(" ".join(str(message).split()))


_INT = re.compile(r"[+-]?[0-9]+")


def cell(text: str) -> Any:
    """One CSV field (or ``--categories`` item), read on its own and exactly.

    Integer text is an ``int``, other decimal number text a ``decimal.Decimal`` (the
    exact value written, never the nearest double), an empty field or ``nan`` a missing
    value (``None``, refused by the release), anything else stays text.  The same
    rule for every field: no field changes how another is read.
    """
    t = text.strip()
    if not t:
        return None
    if _INT.fullmatch(t):
        return int(t)
    try:
        d = Decimal(t)
    except ArithmeticError:
        return t
    if d.is_nan():
        return None
    return d if d.is_finite() else t


def _read_csv(path: Path) -> dict[str, list[Any]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.reader(fh)
        try:
            header = next(reader)
        except StopIteration:
            raise _Fail(f"CSV file {str(path)!r} is empty") from None
        if len(set(header)) != len(header):
            raise _Fail(f"CSV file {str(path)!r} has duplicate column names")
        cols: dict[str, list[Any]] = {h: [] for h in header}
        for row in reader:
            if not row:
                continue
            if len(row) != len(header):
                raise _Fail(
                    f"CSV file {str(path)!r}: a row has {len(row)} fields, the header has "
                    f"{len(header)}"
                )
            for h, v in zip(header, row, strict=True):
                cols[h].append(cell(v))
    return cols


def _numbers(text: str, what: str) -> list[float]:
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise _Fail(f"{what} must be comma-separated numbers, got {text!r}") from None
    return out


def _option_value(text: str) -> Any:
    for conv in (int, float):
        try:
            return conv(text)
        except ValueError:
            pass
    return text


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    f = float(x)
    return repr(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


@click.command(cls=_OneLineErrors)
@click.argument("statistic")
@click.argument("csv_file", metavar="[CSV]", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--column",
    "-c",
    "columns",
    multiple=True,
    help="Column to read (give it twice for covariance); count needs none.",
)
@click.option(
    "--data-bounds",
    "-b",
    "data_bounds",
    nargs=2,
    type=float,
    multiple=True,
    metavar="LO HI",
    help="Data bounds: values are clamped to [LO, HI] (once per column).",
)
@click.option("--epsilon", "-e", type=float, required=True, help="ε > 0 this release spends.")
@click.option(
    "--gamma",
    "-g",
    type=float,
    default=None,
    help="Choose the clamp interval so it binds with probability <= γ (default 0.05).",
)
@click.option(
    "--clamp",
    nargs=2,
    type=float,
    default=None,
    metavar="LO HI",
    help="Give the clamp interval for the statistic directly instead of --gamma.",
)
@click.option(
    "--n",
    "n",
    type=int,
    default=None,
    help="replace: the number of records (default: from the data); add-remove: a "
    "public upper bound on it (required).",
)
@click.option(
    "--relation",
    type=click.Choice(["replace", "add-remove"]),
    default=None,
    help="Neighbouring relation (default: the statistic's first).",
)
@click.option("--bins", default=None, help="Histogram bin edges, comma-separated.")
@click.option("--categories", default=None, help="Histogram categories, comma-separated.")
@click.option(
    "--option",
    "-o",
    "extra",
    multiple=True,
    metavar="KEY=VALUE",
    help="An option of a plugin statistic (repeatable).",
)
@click.option("--backend", default="mpfr", show_default=True, help="Arithmetic backend.")
@click.option(
    "--seed",
    default=None,
    help="Use a seeded source (reproducible; NOT for production releases).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the release record as JSON.")
def release(
    statistic: str,
    csv_file: str | None,
    columns: tuple[str, ...],
    data_bounds: tuple[tuple[float, float], ...],
    epsilon: float,
    gamma: float | None,
    clamp: tuple[float, float] | None,
    n: int | None,
    relation: str | None,
    bins: str | None,
    categories: str | None,
    extra: tuple[str, ...],
    backend: str,
    seed: str | None,
    as_json: bool,
) -> None:
    """Release STATISTIC of a column of CSV (default: the bundled example data).

    STATISTIC is count, sum, mean, variance, covariance, histogram, or a plugin's.

    \b
    Examples:
      snapcore release mean --column age --data-bounds 0 100 --epsilon 1
      snapcore release histogram -c region --categories north,south,east,west -e 1
      snapcore release covariance -c age -c income -b 18 90 -b 0 400000 -e 1
    """
    from snapcore.api import release as do_release
    from snapcore.sources import SeededSource

    if csv_file is None:
        from snapcore.data import example_path

        path = example_path()
        data_label = "bundled synthetic example data (snapcore/data/example.csv)"
    else:
        path = Path(csv_file)
        data_label = f"CSV file {csv_file}"
    try:
        table = _read_csv(path)
    except OSError as exc:
        raise _Fail(f"cannot read CSV file {str(path)!r}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, csv.Error):
        raise _Fail(f"cannot read CSV file {str(path)!r}: not a UTF-8 CSV file") from None

    options: dict[str, Any] = {}
    if bins is not None:
        options["bins"] = _numbers(bins, "--bins")
    if categories is not None:
        options["categories"] = [cell(c) for c in categories.split(",")]
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise _Fail(f"--option must look like KEY=VALUE, got {item!r}")
        options[key] = _option_value(value)

    source = None if seed is None else SeededSource(seed)
    if data_bounds:
        bounds_arg: Any = data_bounds[0] if len(data_bounds) == 1 else data_bounds
    else:
        bounds_arg = None
    column: Any = None
    if columns:
        column = columns[0] if len(columns) == 1 else columns
    try:
        r = do_release(
            statistic,
            table,
            epsilon=epsilon,
            data_bounds=bounds_arg,
            gamma=gamma,
            clamp_bounds=clamp,
            n=n,
            relation=relation,
            column=column,
            backend=backend,
            source=source,
            **options,
        )
    except (SnapcoreError, ValueError) as exc:
        raise _Fail(str(exc)) from None
    if seed is not None:
        click.echo(
            "WARNING: --seed uses a seeded, deterministic source: anyone who knows the "
            "seed can remove the noise. NOT for production releases.",
            err=True,
        )

    if as_json:
        out = r.to_dict()
        out["data"] = data_label
        out["columns"] = list(columns)
        out["seed"] = seed
        click.echo(json.dumps(out, indent=2, ensure_ascii=False))
        return

    what = f"{r.statistic}"
    if columns:
        what += " of " + ", ".join(repr(c) for c in columns)
    click.echo(f"{what} -- {data_label}")
    if isinstance(r.value, tuple):
        width = max(len(lb) for lb in r.labels)
        click.echo("  released values (one per bin):")
        for lb, v in zip(r.labels, r.value, strict=True):
            click.echo(f"    {lb:<{width}}  {_fmt(v)}")
    else:
        click.echo(f"  released value   {_fmt(r.value)}")
    click.echo(f"  epsilon spent    {_fmt(r.epsilon_spent)}")
    if isinstance(r.value, tuple):
        click.echo(f"  budget split     {r.composition}")
    click.echo(f"  relation         {r.relation.value} ({r.relation.description})")
    if r.n is not None:
        click.echo(f"  n                {r.n}")
    click.echo(f"  sensitivity      {_fmt(r.sensitivity)}")
    if r.data_bounds is not None:
        shown = ", ".join(f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in r.data_bounds)
        click.echo(f"  data bounds      {shown}")
    if r.clamp_bounds is not None:
        lo, hi = r.clamp_bounds
        how = f"from gamma = {_fmt(r.gamma)}" if r.gamma is not None else "given"
        click.echo(f"  clamp interval   [{lo!r}, {hi!r}] ({how}; B' = {_fmt(r.b_prime)})")
        click.echo(f"  grid step        {_fmt(r.grid_step)} (outputs are on a grid of this step)")
        click.echo(
            f"  accuracy         {r.accuracy(0.05):.6g} (|released − exact| <= this with "
            "probability >= 95%, per value; data-independent)"
        )
        click.echo(f"  precision        {r.precision} bits, backend {r.backend}")
        src = r.source if seed is None else f"seeded (seed {seed!r}; NOT for production)"
        click.echo(f"  source           {src}")
    for note in r.notes:
        if note.startswith("seeded source"):
            continue
        click.echo(f"  note: {note}")
    sys.stdout.flush()
