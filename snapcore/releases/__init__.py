"""Layer 9, releases: :func:`release` and its :class:`Release` record, group-by
releases (:class:`GroupedRelease`), exact partial states over chunks and partitions
(:func:`partial`, :func:`merge`), and budgets, in memory (:class:`Budget`, and
:class:`ApproxBudget` for (ε, δ)) and in a durable ledger (:class:`Ledger`,
:class:`LedgerBudget`, :class:`LedgerApproxBudget`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.releases._api import (
        release as release,
    )
    from snapcore.releases._budget import (
        ApproxBudget as ApproxBudget,
        Budget as Budget,
        LedgerApproxBudget as LedgerApproxBudget,
        LedgerBudget as LedgerBudget,
    )
    from snapcore.releases._grouped import (
        GroupedRelease as GroupedRelease,
    )
    from snapcore.releases._ledger import (
        Ledger as Ledger,
        LedgerEntry as LedgerEntry,
        LedgerState as LedgerState,
    )
    from snapcore.releases._partials import (
        Partial as Partial,
        merge as merge,
        partial as partial,
    )
    from snapcore.releases._record import (
        Release as Release,
    )

__getattr__, __dir__ = attach(__name__, __file__)
