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
        MODES,
        PaddingStats,
        TimingMode,
        calibrate_quantum,
        fallbacks_covered,
        pad,
        resolve_mode,
        wait_until,
    )
    from snapcore.padding._quanta import (
        QuantaStore,
        clear_caches,
        default_store_path,
        machine_fingerprint,
        quanta_store,
        statistic_stats,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_pad": [
            "MODES",
            "PaddingStats",
            "TimingMode",
            "calibrate_quantum",
            "fallbacks_covered",
            "pad",
            "resolve_mode",
            "wait_until",
        ],
        "_quanta": [
            "QuantaStore",
            "clear_caches",
            "default_store_path",
            "machine_fingerprint",
            "quanta_store",
            "statistic_stats",
        ],
    },
)

__all__ = [
    "MODES",
    "PaddingStats",
    "QuantaStore",
    "TimingMode",
    "calibrate_quantum",
    "clear_caches",
    "default_store_path",
    "fallbacks_covered",
    "machine_fingerprint",
    "pad",
    "quanta_store",
    "resolve_mode",
    "statistic_stats",
    "wait_until",
]
