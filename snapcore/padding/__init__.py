"""Layer 4, time quanta: the primitives that pad a call to a whole number of fixed time
quanta (the ``timing=`` switch, waiting, counting overruns, measuring a quantum on
public inputs) and where measured quanta are kept, in the process and across processes
(:class:`QuantaStore`).

What is padded and on which inputs its quantum is measured belongs to the layers that
pad: the mechanism's releases (:class:`snapcore.mechanism.Padding`) and a statistic's
whole release (:func:`snapcore.release`).  See ``docs/timing.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.padding._pad import (
        MODES as MODES,
    )
    from snapcore.padding._pad import (
        PaddingStats as PaddingStats,
    )
    from snapcore.padding._pad import (
        TimingMode as TimingMode,
    )
    from snapcore.padding._pad import (
        calibrate_quantum as calibrate_quantum,
    )
    from snapcore.padding._pad import (
        fallbacks_covered as fallbacks_covered,
    )
    from snapcore.padding._pad import (
        pad as pad,
    )
    from snapcore.padding._pad import (
        resolve_mode as resolve_mode,
    )
    from snapcore.padding._pad import (
        wait_until as wait_until,
    )
    from snapcore.padding._quanta import (
        QuantaStore as QuantaStore,
    )
    from snapcore.padding._quanta import (
        clear_caches as clear_caches,
    )
    from snapcore.padding._quanta import (
        default_store_path as default_store_path,
    )
    from snapcore.padding._quanta import (
        machine_fingerprint as machine_fingerprint,
    )
    from snapcore.padding._quanta import (
        quanta_store as quanta_store,
    )
    from snapcore.padding._quanta import (
        statistic_stats as statistic_stats,
    )

__getattr__, __dir__ = attach(__name__, __file__)
