"""``snapcore release``: release a statistic of a CSV column, ε-differentially private.

Without a CSV file it uses the bundled synthetic example table
(:mod:`snapcore.data`), so it works on a fresh install::

    snapcore release mean --column age --data-bounds 0 100 --epsilon 1
"""

from __future__ import annotations

import contextlib
import sys
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from snapcore._display import short
from snapcore.calibration._params import parse_epsilon
from snapcore.cli._output import SpelledCommand, UsageError, emit_json
from snapcore.data._files import cell
from snapcore.errors import DataError

if TYPE_CHECKING:
    from snapcore.plugins._statistic import Statistic

__all__ = ["release"]


class _OneLineErrors(SpelledCommand):
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
            raise UsageError(f"{exc.format_message()} (see 'snapcore release --help')") from None


def _read_input(
    stat: Statistic,
    csv_file: str | None,
    file_format: str,
    block_size: int | None,
    column: Any,
    data_bounds: Any,
    options: dict[str, Any],
    policy: Any = None,
    grouping: dict[str, Any] | None = None,
    need_records: bool = False,
) -> tuple[Any, str, bool]:
    """The data to release, how to name it, and whether it is a merged partial state.

    Every source is read by one reader, in blocks (:mod:`snapcore.cli._chunks`), whatever
    its size: a mergeable statistic gets its merged partial state (a missing-value
    ``policy`` applied to each block; with ``grouping``, one state per key), any other
    its columns joined from the blocks.  ``--format auto`` reads Parquet when the
    source starts with Parquet's magic bytes (``PAR1``; also on standard input) or the
    file is named ``.parquet``/``.pq``, CSV otherwise.  With ``need_records`` (n taken
    from the data, no grouping), a source without records is refused as such."""
    from snapcore.cli._chunks import read_columns, stream_group_partials, stream_partial
    from snapcore.data._files import BLOCK_BYTES, pyarrow_available, sniff_parquet, spool

    if csv_file is None:
        from snapcore.data import example_path

        path: Path | None = example_path()
        label = "bundled synthetic example data (snapcore/data/example.csv)"
    elif csv_file == "-":
        path, label = None, "standard input"
    else:
        path, label = Path(csv_file), f"file {csv_file}"
    with contextlib.ExitStack() as stack:
        try:
            raw: Any = sys.stdin.buffer if path is None else stack.enter_context(path.open("rb"))
            magic, stream = sniff_parquet(raw)
        except OSError as exc:
            raise DataError(f"cannot read {label}: {exc.strerror or exc}") from None
        fmt = file_format
        if fmt == "auto":
            named = path is not None and path.suffix in (".parquet", ".pq")
            fmt = "parquet" if magic or named else "csv"
        source: Any = stream
        if fmt == "parquet":
            if not pyarrow_available():
                raise UsageError('reading Parquet needs pyarrow: pip install "snapcore[arrow]"')
            source = str(path) if path is not None else stack.enter_context(spool(stream))
        common: dict[str, Any] = {
            "label": label,
            "file_format": fmt,
            "column": column,
            "block_bytes": block_size or BLOCK_BYTES,
        }
        need = need_records and not grouping
        by = grouping["by"] if grouping else None
        try:
            if not stat.mergeable:
                return read_columns(stat, source, by=by, need_records=need, **common), label, False
            common.update(data_bounds=data_bounds, options=options, policy=policy)
            part: Any = (
                stream_group_partials(
                    stat, source, by=grouping["by"], keys=grouping["keys"], **common
                )
                if grouping
                else stream_partial(stat, source, need_records=need, **common)
            )
        except OSError as exc:
            raise DataError(f"cannot read {label}: {exc.strerror or exc}") from None
        except DataError as exc:
            if magic and fmt == "csv" and "UTF-8" in str(exc):
                raise DataError(
                    f"cannot read {label} as CSV: it starts like a Parquet file (PAR1); "
                    "read it with --format parquet (or auto)"
                ) from None
            raise
    return part, label, True


def _numbers(text: str, what: str) -> list[float]:
    out = []
    for part in text.split(","):
        try:
            out.append(float(part))
        except ValueError:
            raise UsageError(
                f"{what} must be comma-separated numbers, got {text!r}", what
            ) from None
    return out


def _item(text: str, what: str) -> Any:
    """One item of an option, read by the CSV cell grammar (:func:`cell`); a number
    beyond the double range is a usage error naming the option."""
    try:
        return cell(text, where=what)
    except DataError as exc:
        raise UsageError(str(exc), what) from None


def _values(text: str, what: str) -> list[Any]:
    return [_item(c, what) for c in text.split(",")]


def _stat_options(bins: str | None, categories: str | None) -> dict[str, Any]:
    """The histogram options --bins and --categories, read as a release reads them."""
    out: dict[str, Any] = {}
    if bins is not None:
        out["bins"] = _numbers(bins, "--bins")
    if categories is not None:
        out["categories"] = _values(categories, "--categories")
    return out


def _fmt(x: Any) -> str:
    if x is None:
        return "-"
    f = float(x)
    return repr(int(f)) if f.is_integer() and abs(f) < 2**53 else repr(f)


@click.command(cls=_OneLineErrors)
@click.argument("statistic")
@click.argument("csv_file", metavar="[FILE]", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--format",
    "file_format",
    type=click.Choice(["auto", "csv", "parquet"]),
    default="auto",
    show_default=True,
    help="Input format; auto: Parquet for a source that starts with PAR1 (also on "
    "standard input) or a .parquet/.pq file, CSV otherwise.",
)
@click.option(
    "--block-size",
    type=click.IntRange(min=1 << 10),
    default=None,
    help="Bytes of CSV read per chunk (default 1 MiB); memory stays a few chunks.",
)
@click.option(
    "--column",
    "-c",
    "column",
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
@click.option(
    "--epsilon",
    "-e",
    required=True,
    help="ε > 0 this release spends, read exactly (0.2 is 1/5; a fraction p/q also works).",
)
@click.option(
    "--gamma",
    "-g",
    type=float,
    default=None,
    help="Choose the clamp interval so it binds with probability <= γ (default 0.05).",
)
@click.option(
    "--clamp",
    "clamp_bounds",
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
    "public upper bound on it (required; count's default relation is add-remove, so "
    "count needs --n, e.g. the population size). With --by: per group.",
)
@click.option(
    "--relation",
    type=click.Choice(["replace", "add-remove"]),
    default=None,
    help="Neighbouring relation (default: the statistic's first; with --by and no "
    "--group-sizes: add-remove).",
)
@click.option("--bins", default=None, help="Histogram bin edges, comma-separated.")
@click.option(
    "--categories",
    default=None,
    help="Histogram categories, comma-separated, read as values (1 and 1.0 match; "
    "other text stays text). Unlisted values are not counted unless --other.",
)
@click.option("--other", is_flag=True, help="Histogram categories: add a bin for unlisted values.")
@click.option(
    "--out-of-range",
    type=click.Choice(["clamp", "drop"]),
    default=None,
    help="Histogram bins: values outside the edges go into the edge bins (clamp, the "
    "default; labels '< e1' and '>= e(k-1)') or are not counted (drop).",
)
@click.option("--by", default=None, help="Group by this column: one release per key of --keys.")
@click.option(
    "--keys",
    default=None,
    help="The public key set for --by, comma-separated values; every key is released, "
    "others never are.",
)
@click.option(
    "--group-sizes",
    default=None,
    metavar="KEY=N,...",
    help="Public group sizes for --by under the replace relation.",
)
@click.option(
    "--missing",
    type=click.Choice(["error", "drop", "impute"]),
    default="error",
    show_default=True,
    help="Missing values (empty CSV cells, Parquet nulls): refuse, drop their records "
    "(add-remove only), or replace them by --impute.",
)
@click.option("--impute", default=None, help="The public constant for --missing impute.")
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
    "--threads",
    type=int,
    default=None,
    help="Threads a release of many values (a histogram's bins, the groups of --by) "
    "may use; the output is the same for any number.  Default: the CPUs this process "
    "may use, for 2**15 values or more.",
)
@click.option(
    "--seed",
    default=None,
    help="Use a seeded source (reproducible; NOT for production releases).",
)
@click.option(
    "--ledger",
    default=None,
    type=click.Path(dir_okay=False),
    help="Charge ε to this budget ledger (see 'snapcore budget'): committed to disk "
    "before noise is drawn; refused if the ledger cannot cover it.",
)
@click.option(
    "--label",
    default=None,
    help="What the ledger entry calls this release (default: the statistic, its "
    "column(s) and the input, e.g. \"mean of 'age' from people.csv\").",
)
@click.option("--json", "as_json", is_flag=True, help="Print the release record as JSON.")
def release(
    statistic: str,
    csv_file: str | None,
    file_format: str,
    block_size: int | None,
    column: tuple[str, ...],
    data_bounds: tuple[tuple[float, float], ...],
    epsilon: str,
    gamma: float | None,
    clamp_bounds: tuple[float, float] | None,
    n: int | None,
    relation: str | None,
    bins: str | None,
    categories: str | None,
    other: bool,
    out_of_range: str | None,
    by: str | None,
    keys: str | None,
    group_sizes: str | None,
    missing: str,
    impute: str | None,
    extra: tuple[str, ...],
    backend: str,
    threads: int | None,
    seed: str | None,
    ledger: str | None,
    label: str | None,
    as_json: bool,
) -> None:
    """Release STATISTIC of a column of FILE (default: the bundled example data).

    FILE is a CSV file with a header line, a Parquet file, or - for either on
    standard input.  It is read in chunks, whatever its size, each folded into the
    statistic's exact partial state, so memory stays bounded; every CSV cell is read
    by one grammar (docs/semantics.md, "CSV files": an empty cell is missing, NA and
    nan are text).

    STATISTIC is count, sum, mean, variance, covariance, histogram, or a plugin's.

    \b
    Examples:
      snapcore release mean --column age --data-bounds 0 100 --epsilon 1
      snapcore release histogram -c region --categories north,south,east,west -e 1
      snapcore release covariance -c age -c income -b 18 90 -b 0 400000 -e 1
      snapcore release count --n 100000 --epsilon 1
      snapcore release count --by region --keys north,south --n 10000 -e 1
    """
    from snapcore.data._missing import check_missing_policy
    from snapcore.plugins._manager import resolve_statistic
    from snapcore.randomness._sources import SeededSource
    from snapcore.releases._api import release as do_release, release_relation

    options = _stat_options(bins, categories)
    if other:
        options["other"] = True
    if out_of_range is not None:
        options["out_of_range"] = out_of_range
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise UsageError(f"--option must look like KEY=VALUE, got {item!r}", "--option")
        options[key] = _item(value, "--option")
    grouping: dict[str, Any] = {}
    if by is not None or keys is not None or group_sizes is not None:
        if by is None or keys is None:
            raise UsageError(
                "--by and --keys go together: --by COLUMN --keys a,b,...",
                "--keys" if by is not None else "--by",
            )
        grouping = {"by": by, "keys": _values(keys, "--keys")}
        if group_sizes is not None:
            grouping["group_sizes"] = _sizes(group_sizes)

    source = None if seed is None else SeededSource(seed)
    if data_bounds:
        bounds_arg: Any = data_bounds[0] if len(data_bounds) == 1 else data_bounds
    else:
        bounds_arg = None
    columns = column
    column_arg: Any = None
    if columns:
        column_arg = columns[0] if len(columns) == 1 else columns
    # errors reach the command line's handler (exit status, --json, the option named)
    eps = parse_epsilon(epsilon)  # before a long read
    budget = None
    if ledger is not None:
        from snapcore.releases._budget import Budget

        budget = Budget.from_ledger(ledger)
    impute_value = None if impute is None else _item(impute, "--impute")
    # the policy is checked against the relation before reading (the release checks
    # it again); a chunked read applies it to each chunk
    stat = resolve_statistic(statistic)
    rel, _ = release_relation(stat, relation, by=by, group_sizes=group_sizes)
    policy = check_missing_policy(missing, impute_value, rel)
    data, data_label, chunked = _read_input(
        stat,
        csv_file,
        file_format,
        block_size,
        column_arg,
        bounds_arg,
        options,
        policy=policy,
        grouping=grouping,
        need_records=n is None,
    )
    if chunked:  # the policy is applied already, chunk by chunk
        missing, impute_value = "error", None
    if label is None:
        label = stat.name
        if columns:
            label += " of " + ", ".join(repr(c) for c in columns)
        if grouping:
            label += f" by {by!r}"
        label += f" from {data_label}"
    r: Any = do_release(
        statistic,
        data,
        epsilon=eps,
        data_bounds=bounds_arg,
        gamma=gamma,
        clamp_bounds=clamp_bounds,
        n=n,
        relation=relation,
        column=column_arg,
        missing=missing,
        impute=impute_value,
        backend=backend,
        source=source,
        budget=budget,
        label=label,
        threads=threads,
        **grouping,
        **options,
    )
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
        out["label"] = label
        if budget is not None:  # read from the ledger after the release's spend
            left = budget.remaining
            out["ledger"] = ledger
            out["epsilon_remaining"] = float(left)
            out["epsilon_remaining_exact"] = str(Fraction(left))
        emit_json(out)
        return

    what = f"{r.statistic}"
    if columns:
        what += " of " + ", ".join(repr(c) for c in columns)
    if grouping:
        click.echo(f"{what} by {by!r} -- {data_label}")
        click.echo(f"  epsilon spent    {short(r.epsilon_spent)} in all ({r.composition})")
    else:
        click.echo(f"{what} -- {data_label}")
    if budget is not None:
        left = budget.remaining  # read from the ledger after the release's spend
        click.echo(
            f"  ledger           {ledger} (remaining epsilon {short(left)}; entry {label!r})"
        )
    if grouping:
        _show_grouped(r)
    else:
        _show(r, "  ", seed)
    sys.stdout.flush()


def _show_grouped(r: Any) -> None:
    """A grouped release as a table: one row per key (printed bare, as a histogram's
    bins are), its released value(s) and 95% accuracy; what every group shares once;
    --json for each group's full record."""
    click.echo(f"  group sizes      {r.group_sizes}")
    first = r.releases[0]
    click.echo(f"  relation         {first.relation.value} ({first.relation.description})")
    ratio = hasattr(first, "numerator") or hasattr(first, "noisy_count")  # derived values
    if not ratio and first.clamp_bounds is not None:
        click.echo(f"  sensitivity      {_fmt(first.sensitivity)}")
        click.echo(f"  grid step        {short(first.grid_step)}")
    rows = [("key", "value", "±95% accuracy")]
    for key, rel in r.items():
        vals = rel.values
        shown = _fmt(vals[0]) if len(vals) == 1 else ", ".join(_fmt(v) for v in vals)
        noised = ratio or rel.clamp_bounds is not None
        acc = f"{rel.accuracy(0.05):.4g}" if noised else "exact"
        rows.append((str(key), shown, acc))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    for row in rows:
        click.echo("  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
    click.echo("  (--json prints every group's full record)")


def _sizes(text: str) -> dict[Any, int]:
    out: dict[Any, int] = {}
    for item in text.split(","):
        key, _, value = item.partition("=")
        try:  # without "=", value is "": int refuses it
            out[_item(key, "--group-sizes")] = int(value)
        except ValueError:
            raise UsageError(
                f"--group-sizes must look like KEY=N,KEY=N, got {text!r}", "--group-sizes"
            ) from None
    return out


def _show(r: Any, pad: str, seed: str | None) -> None:
    if isinstance(r.value, tuple):
        width = max(len(lb) for lb in r.labels)
        click.echo(f"{pad}released values (one per bin):")
        for lb, v in zip(r.labels, r.value, strict=True):
            click.echo(f"{pad}  {lb:<{width}}  {_fmt(v)}")
    else:
        click.echo(f"{pad}released value   {_fmt(r.value)}")
    click.echo(f"{pad}epsilon spent    {short(r.epsilon_spent)}")
    if isinstance(r.value, tuple):
        click.echo(f"{pad}budget split     {r.composition}")
    click.echo(f"{pad}relation         {r.relation.value} ({r.relation.description})")
    if r.n is not None:
        click.echo(f"{pad}n                {r.n}")
    click.echo(f"{pad}sensitivity      {_fmt(r.sensitivity)}")
    if r.data_bounds is not None:
        shown = ", ".join(f"[{_fmt(lo)}, {_fmt(hi)}]" for lo, hi in r.data_bounds)
        click.echo(f"{pad}data bounds      {shown}")
    if r.clamp_bounds is not None:
        lo, hi = r.clamp_bounds
        how = f"from gamma = {_fmt(r.gamma)}" if r.gamma is not None else "given"
        click.echo(
            f"{pad}clamp interval   [{_fmt(lo)}, {_fmt(hi)}] ({how}; B' = {_fmt(r.b_prime)})"
        )
        click.echo(
            f"{pad}grid step        {short(r.grid_step)}: outputs are the centre of the clamp "
            "interval plus a multiple of this step, so repeats take few distinct values"
        )
        click.echo(f"{pad}finer grid       {r.finer_grid}")
        click.echo(
            f"{pad}accuracy         {r.accuracy(0.05):.6g} (|released − exact| <= this with "
            "probability >= 95%, per value; data-independent)"
        )
        click.echo(f"{pad}precision        {r.precision} bits, backend {r.backend}")
        src = r.source if seed is None else f"seeded (seed {seed!r}; NOT for production)"
        click.echo(f"{pad}source           {src}")
    for note in r.notes:
        if note.startswith("seeded source"):
            continue
        click.echo(f"{pad}note: {note}")
