"""The ``snapcore`` command line.

Subcommands live in their own modules and are imported only when used, so
``snapcore --help`` stays fast and an optional dependency of one subcommand never
breaks another.  Add a subcommand by adding a loader to :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

from collections.abc import Callable

import click

__all__ = ["SUBCOMMANDS", "main"]


def _info() -> click.Command:
    from snapcore.cli.info import info

    return info


def _compare() -> click.Command:
    from snapcore.cli.compare import compare

    return compare


def _release() -> click.Command:
    from snapcore.cli.release import release

    return release


def _audit() -> click.Command:
    from snapcore.cli.audit import audit_command

    return audit_command


def _plot() -> click.Command:
    from snapcore.cli.plot import plot

    return plot


#: subcommand name -> a function importing and returning its click command.
SUBCOMMANDS: dict[str, Callable[[], click.Command]] = {
    "info": _info,
    "compare": _compare,
    "release": _release,
    "audit": _audit,
    "plot": _plot,
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        load = SUBCOMMANDS.get(cmd_name)
        return None if load is None else load()


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="snapcore")
def main() -> None:
    """Differentially private releases with the snapping mechanism, exact at every step."""
