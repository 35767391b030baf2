"""Layer 4, time quanta: the primitives that pad a call to a whole number of fixed time
quanta (the ``timing=`` switch, waiting, counting overruns, measuring a quantum on
public inputs) and where measured quanta are kept, in the process and across processes
(:class:`QuantaStore`), and the random delay that makes a padded release's running
time (ε_t, δ_t)-DP (:class:`RandomDelay`, :func:`random_delay`).

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
        PaddingStats as PaddingStats,
        RandomDelay as RandomDelay,
        TimingGuarantee as TimingGuarantee,
        TimingMode as TimingMode,
        calibrate_quantum as calibrate_quantum,
        fallbacks_covered as fallbacks_covered,
        next_dither as next_dither,
        pad as pad,
        random_delay as random_delay,
    )
    from snapcore.padding._quanta import (
        QuantaStore as QuantaStore,
        clear_caches as clear_caches,
        default_store_path as default_store_path,
        machine_fingerprint as machine_fingerprint,
        quanta_store as quanta_store,
        statistic_stats as statistic_stats,
    )

__getattr__, __dir__ = attach(__name__, __file__)
