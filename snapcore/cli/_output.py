"""Output and exit codes shared by the subcommands (documented in :mod:`snapcore.cli`)."""

from __future__ import annotations

import json
from typing import Any

import click

from snapcore.errors import (
    AuditError,
    BudgetExceededError,
    DataError,
    LedgerError,
    SnapcoreError,
)

__all__ = [
    "EXIT_DATA",
    "EXIT_INTERNAL",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "PrivacyRefused",
    "classify",
    "emit_json",
    "message_of",
]

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_USAGE = 2
EXIT_DATA = 3
EXIT_REFUSED = 4


class PrivacyRefused(SnapcoreError):
    """A subcommand refuses on privacy grounds (exit status 4)."""


def emit_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON on stdout."""
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def classify(exc: BaseException) -> tuple[str, int]:
    """The kind of an error and its exit status."""
    if isinstance(exc, BudgetExceededError | PrivacyRefused):
        return "privacy refused", EXIT_REFUSED
    if isinstance(exc, DataError | LedgerError | OSError) or type(exc).__name__ in (
        "MissingValueError",
    ):
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


def message_of(exc: BaseException) -> str:
    if isinstance(exc, click.ClickException):
        return " ".join(exc.format_message().split())
    return " ".join(str(exc).split()) or type(exc).__name__
