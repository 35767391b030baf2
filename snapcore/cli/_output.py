"""Output and exit codes shared by the subcommands (documented in :mod:`snapcore.cli`)."""

from __future__ import annotations

import sys
from typing import Any

import click

from snapcore.errors import (
    AuditError,
    BudgetExceededError,
    DataError,
    LedgerError,
    ParameterError,
    SnapcoreError,
    Speller,
    spelling,
)

__all__ = [
    "EXIT_DATA",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "SpelledCommand",
    "SpelledGroup",
    "UsageError",
    "classify",
    "emit_json",
    "flag_of",
    "message_of",
    "progress_option",
    "shows_progress",
    "speller_for",
]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_DATA = 3
EXIT_REFUSED = 4


class UsageError(click.ClickException):
    """A command-line argument a subcommand refuses itself: exit status 2, reported as
    one line (the command line's one exception type; every other error snapcore raises
    is in :mod:`snapcore.errors`).

    Parameters
    ----------
    message : str
        What is wrong (white space runs become one space).
    option : str, optional
        The flag at fault, as the command line spells it (the JSON error's
        ``"parameter"``).
    """

    exit_code = EXIT_USAGE

    def __init__(self, message: str, option: str | None = None) -> None:
        super().__init__(" ".join(str(message).split()))
        self.option = option


#: ``--progress/--no-progress``: a tqdm bar on stderr; unset (``None``) means
#: :func:`shows_progress` decides.
progress_option = click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (needs tqdm); default: on when stderr is a terminal "
    "and --json is not given.",
)


def shows_progress(progress: bool | None, as_json: bool) -> bool:
    """Whether to draw the progress bar: ``--progress``/``--no-progress`` if given, else
    when stderr is a terminal and the output is not JSON."""
    if progress is None:
        return sys.stderr.isatty() and not as_json
    return progress


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    import json

    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def classify(exc: BaseException) -> tuple[str, int]:
    """The kind of an error and its exit status."""
    if isinstance(exc, BudgetExceededError):
        return "privacy refused", EXIT_REFUSED
    if isinstance(exc, DataError | LedgerError | OSError):  # MissingValueError too
        return "data", EXIT_DATA
    if isinstance(exc, click.UsageError | click.BadParameter):
        return "usage", EXIT_USAGE
    if isinstance(exc, click.ClickException):
        code = exc.exit_code
        kind = {EXIT_DATA: "data", EXIT_REFUSED: "privacy refused"}.get(code, "usage")
        return kind, code if code in (EXIT_DATA, EXIT_REFUSED) else EXIT_USAGE
    if isinstance(exc, AuditError | ImportError):
        return "internal", EXIT_INTERNAL
    if isinstance(exc, SnapcoreError | ValueError):
        return "usage", EXIT_USAGE
    return "internal", EXIT_INTERNAL


def speller_for(command: click.Command) -> Speller:
    """How ``command`` spells the Python keyword of each of its options: the option
    whose destination is that keyword (``--n`` for ``n``, ``--clamp`` for
    ``clamp_bounds``), from the command's own definitions; None for the others."""
    flags: dict[str, tuple[str, bool]] = {}
    for p in command.params:
        if isinstance(p, click.Option) and p.name:
            longs = [o for o in p.opts if o.startswith("--")] or p.opts
            flags[p.name] = (longs[0], bool(p.is_flag))
    return flags.get


class SpelledCommand(click.Command):
    """A subcommand whose errors name its own options: while it runs, snapcore's
    messages spell parameters as this command's flags (:func:`snapcore.errors.spelling`)."""

    def invoke(self, ctx: click.Context) -> Any:
        with spelling(speller_for(self)):
            return super().invoke(ctx)


class SpelledGroup(click.Group):
    """A group of :class:`SpelledCommand` subcommands."""

    command_class = SpelledCommand


def flag_of(exc: BaseException) -> str | None:
    """The option an error is about, as the command line spells it, when it names one."""
    if isinstance(exc, ParameterError):
        return exc.shown_as
    if isinstance(exc, UsageError) and exc.option is not None:
        return exc.option
    if isinstance(exc, click.BadParameter) and exc.param is not None:
        opts = [o for o in exc.param.opts if o.startswith("--")] or exc.param.opts
        return opts[0] if isinstance(exc.param, click.Option) else exc.param.human_readable_name
    return None


def message_of(exc: BaseException) -> str:
    if isinstance(exc, click.ClickException):
        return " ".join(exc.format_message().split())
    return " ".join(str(exc).split()) or type(exc).__name__
