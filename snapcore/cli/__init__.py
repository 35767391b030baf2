"""The ``snapcore`` command line.

Subcommands live in their own modules and are imported only when used, so
``snapcore --help`` stays fast and an optional dependency of one subcommand never
breaks another.  Add a subcommand by adding a loader to :data:`SUBCOMMANDS`.

Every subcommand takes ``--json``: its result is then one JSON object on stdout, and
so is an error (``{"error": {"kind", "type", "message", "exit_code"}}``, on stdout,
nothing on stderr but warnings; with ``"parameter"``, the option at fault as this
command line spells it, when the error is about one).  Messages name options as the
command line spells them (``--n``), from each subcommand's own option definitions.

Exit status (the same with and without ``--json``):

- 0: done;
- 1: internal error (a bug, a missing optional dependency, or a backend failing its
  conformance run);
- 2: usage error (an unknown option, a parameter out of range);
- 3: data error (the data cannot be used as given: a missing column, missing or
  non-numeric values, an unreadable file);
- 4: privacy refused (a budget cannot cover the release, or an audit finds the loss
  above ε).

Calibrated timing quanta are kept across runs in a small SQLite file (see
``snapcore.padding.QuantaStore``; ``SNAPCORE_TIMING_STORE`` names another file, or ``off``).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import click

from snapcore.cli._output import (
    EXIT_DATA,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_REFUSED,
    EXIT_USAGE,
    classify,
    emit_json,
    flag_of,
    message_of,
)
from snapcore.errors import AuditError

__all__ = [
    "EXIT_DATA",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "SUBCOMMANDS",
    "emit_json",
    "main",
]


def _info() -> click.Command:
    from snapcore.cli._info import info

    return info


def _compare() -> click.Command:
    from snapcore.cli._compare import compare

    return compare


def _release() -> click.Command:
    from snapcore.cli._release import release

    return release


def _audit() -> click.Command:
    from snapcore.cli._audit import audit_command

    return audit_command


def _budget() -> click.Command:
    from snapcore.cli._budget import budget

    return budget


def _plot() -> click.Command:
    from snapcore.cli._plot import plot

    return plot


#: subcommand name -> a function importing and returning its click command.
SUBCOMMANDS: dict[str, Callable[[], click.Command]] = {
    "info": _info,
    "compare": _compare,
    "release": _release,
    "audit": _audit,
    "budget": _budget,
    "plot": _plot,
}


class _LazyGroup(click.Group):
    """Lazy subcommands; errors become the documented exit codes (JSON with --json)."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        argv = list(sys.argv[1:] if args is None else args)
        as_json = "--json" in argv
        try:
            rv = super().main(argv, prog_name, complete_var, standalone_mode=False, **extra)
        except click.exceptions.NoArgsIsHelpError as exc:
            click.echo(exc.ctx.get_help())
            rv = EXIT_OK
        except click.Abort:
            click.echo("Aborted.", err=True)
            rv = EXIT_INTERNAL
        except Exception as exc:
            kind, code = classify(exc)
            message = message_of(exc)
            if kind == "internal" and not isinstance(exc, AuditError | ImportError):
                message = f"internal error ({type(exc).__name__}): {message}"
                if not as_json:
                    import traceback

                    traceback.print_exc()
            if as_json:
                error: dict[str, Any] = {
                    "kind": kind,
                    "type": type(exc).__name__,
                    "message": message,
                    "exit_code": code,
                }
                flag = flag_of(exc)
                if flag is not None:
                    error["parameter"] = flag
                emit_json({"error": error})
            else:
                click.echo(f"Error: {message}", err=True)
            rv = code
        if not standalone_mode:
            return rv
        sys.exit(rv if isinstance(rv, int) else 0)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        load = SUBCOMMANDS.get(cmd_name)
        return None if load is None else load()


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="snapcore")
@click.pass_context
def main(ctx: click.Context) -> None:
    """Differentially private releases with the snapping mechanism, exact at every step."""
    ctx.with_resource(_quanta_store())


def _quanta_store() -> Any:
    """Keep calibrated timing quanta across runs (docs/timing.md): each run of a one-shot
    command would otherwise measure them again.  ``SNAPCORE_TIMING_STORE`` names the
    file, or ``off``; the default is ``snapcore.padding.default_store_path()``."""
    import os

    from snapcore.padding._quanta import default_store_path, quanta_store

    where = os.environ.get("SNAPCORE_TIMING_STORE", "")
    if where.lower() == "off":
        return quanta_store(None)
    return quanta_store(where or default_store_path())
