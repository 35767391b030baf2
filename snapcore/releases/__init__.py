"""Layer 10, releases: :func:`release` and its :class:`Release` record, group-by
releases (:class:`GroupedRelease`), exact partial states over chunks and partitions
(:func:`partial`, :func:`merge`), and budgets, in memory (:class:`Budget`) and in a
durable ledger (:class:`Ledger`, :class:`LedgerBudget`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.releases._api import (
        release,
    )
    from snapcore.releases._budget import (
        Budget,
        LedgerBudget,
    )
    from snapcore.releases._grouped import (
        GroupedRelease,
    )
    from snapcore.releases._ledger import (
        Ledger,
        LedgerEntry,
        LedgerState,
    )
    from snapcore.releases._partials import (
        Partial,
        merge,
        partial,
    )
    from snapcore.releases._record import (
        Release,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_api": ["release"],
        "_record": ["Release"],
        "_grouped": ["GroupedRelease"],
        "_partials": ["Partial", "merge", "partial"],
        "_budget": ["Budget", "LedgerBudget"],
        "_ledger": ["Ledger", "LedgerEntry", "LedgerState"],
    },
)

__all__ = [
    "Budget",
    "GroupedRelease",
    "Ledger",
    "LedgerBudget",
    "LedgerEntry",
    "LedgerState",
    "Partial",
    "Release",
    "merge",
    "partial",
    "release",
]
