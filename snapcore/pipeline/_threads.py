"""The ``threads=`` setting of array releases: checked, and resolved for one array.

The fast path's fused loop (:meth:`FastEngine.run_stream
<snapcore.pipeline._engine.FastEngine.run_stream>`) shares an array's chunks among
threads; its output is the same for every number of threads.  This module is light
(no numba), so the mechanism checks the setting when it is made.
"""

from __future__ import annotations

import os

import numpy as np

from snapcore.data._values import type_name
from snapcore.errors import ParameterError, parameter_name

__all__ = ["THREADS_MIN_SIZE", "check_threads", "resolve_threads", "usable_cpus"]

#: Arrays shorter than this are released by one thread when ``threads`` is None: below
#: it, handing chunks to other threads costs about what it saves.
THREADS_MIN_SIZE = 1 << 15


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - platforms without affinity
        return max(1, os.cpu_count() or 1)


def check_threads(threads: object) -> int | None:
    """``threads=`` checked: None (by the array's size and the usable CPUs) or an
    int >= 1.

    Raises
    ------
    ParameterError
        If ``threads`` is anything else (the message names its type, and the value
        of an int).
    """
    if threads is None:
        return None
    if isinstance(threads, int | np.integer) and not isinstance(threads, bool) and threads >= 1:
        return int(threads)
    shown = type_name(threads)
    if isinstance(threads, int | np.integer) and not isinstance(threads, bool):
        shown += f" {int(threads)}"
    raise ParameterError(
        f"{parameter_name('threads')} must be None or an int >= 1, got {shown}",
        parameter="threads",
    )


def resolve_threads(threads: int | None, size: int) -> int:
    """The threads an array of ``size`` elements is released with: ``threads``, or for
    None the usable CPUs (:func:`usable_cpus`), one below :data:`THREADS_MIN_SIZE`."""
    if threads is not None:
        return threads
    return 1 if size < THREADS_MIN_SIZE else usable_cpus()
