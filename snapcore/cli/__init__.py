"""The ``snapcore`` command line.

Subcommands live in their own modules and are imported only when used, so
``snapcore --help`` stays fast and an optional dependency of one subcommand never
breaks another.  Add a subcommand by adding its module to :data:`SUBCOMMANDS`.
"""

from __future__ import annotations

import importlib
from typing import Any

import click

__all__ = ["SUBCOMMANDS", "main"]

#: subcommand name -> "module:attribute" of a click command.
SUBCOMMANDS: dict[str, str] = {
    "info": "snapcore.cli.info:info",
    "compare": "snapcore.cli.compare:compare",
    "release": "snapcore.cli.release:release",
    "audit": "snapcore.cli.audit:audit_command",
    "budget": "snapcore.cli.budget:budget",
    "plot": "snapcore.cli.plot:plot",
}


class _LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(cmd_name)
        if target is None:
            return None
        modname, attr = target.split(":")
        cmd: click.Command = getattr(importlib.import_module(modname), attr)
        return cmd


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="snapcore")
def main() -> None:
    """Differentially private releases with the snapping mechanism, exact at every step."""


def run(argv: Any = None) -> None:  # pragma: no cover - console script shim
    main(argv)
