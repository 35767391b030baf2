"""Where calibrated quanta are kept: in the process (:class:`QuantaCache`, one per kind
of padded call) and across processes (:class:`QuantaStore`, an SQLite file).

A quantum is a function of public parameters and of the machine only (it is measured
on synthetic, public inputs), so keeping it discloses nothing about any data.
"""

from __future__ import annotations

import contextlib
import functools
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from snapcore._version import __version__
from snapcore.padding._pad import PaddingStats

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "ARRAY_QUANTA",
    "CACHE_SIZE",
    "RECALIBRATE_ARRAY",
    "RECALIBRATE_SCALAR",
    "SCALAR_QUANTA",
    "STATISTIC_QUANTA",
    "STORE_MAX_AGE_S",
    "InternedKey",
    "QuantaCache",
    "QuantaStore",
    "clear_caches",
    "default_store_path",
    "generation",
    "intern_key",
    "machine_fingerprint",
    "quanta_store",
    "statistic_stats",
]

#: A quantum is measured again after this many uses (0: never, the default; see
#: docs/timing.md: on a loaded machine it tracks the load, but its effect on the
#: leak measurement is not yet settled).
RECALIBRATE_SCALAR = 0
RECALIBRATE_ARRAY = 0
#: At most this many quanta are remembered per cache (least recently used dropped).
CACHE_SIZE = 256
#: A quantum kept in a :class:`QuantaStore` is used for this long after its measurement.
STORE_MAX_AGE_S = 3600.0


# -- across processes ------------------------------------------------------------------
class QuantaStore:
    """Calibrated quanta kept across processes, in an SQLite file.

    A one-shot process (the command line) would otherwise calibrate its quanta on
    every run, which costs more than the release itself.  An entry is used only on
    the machine and software that measured it (:func:`machine_fingerprint`) and for
    ``STORE_MAX_AGE_S`` seconds after it was measured, so the quanta follow the
    machine's load at that pace.  The store is a cache: when it cannot be opened,
    read or written (a read-only directory, a damaged file), quanta are measured in
    the process as without it.

    Parameters
    ----------
    path : str or os.PathLike
        The SQLite file (created with mode 0600 in a directory of mode 0700).
    max_age_s : float
        How long an entry is used after its measurement.
    """

    def __init__(self, path: str | os.PathLike[str], max_age_s: float | None = None) -> None:
        self.path = os.fspath(path)
        self.max_age_s = STORE_MAX_AGE_S if max_age_s is None else float(max_age_s)

    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # here: a process that keeps its quanta in memory never needs it

        folder = os.path.dirname(self.path)
        if folder:
            os.makedirs(folder, mode=0o700, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
        os.close(fd)
        con = sqlite3.connect(self.path, timeout=2.0)
        con.execute(
            "CREATE TABLE IF NOT EXISTS quanta (key TEXT PRIMARY KEY, fingerprint TEXT "
            "NOT NULL, quantum_ns INTEGER NOT NULL, measured_at REAL NOT NULL)"
        )
        return con

    @staticmethod
    def _text(key: Hashable) -> str | None:
        text = repr(key)
        # A key that prints an object's address is not stable across processes.
        return None if " at 0x" in text else text

    def load(self, key: Hashable) -> int | None:
        """The stored quantum for ``key``, or None (absent, stale, another machine)."""
        text = self._text(key)
        if text is None:
            return None
        try:
            con = self._connect()
            try:
                row = con.execute(
                    "SELECT quantum_ns, measured_at FROM quanta WHERE key = ? AND fingerprint = ?",
                    (text, machine_fingerprint()),
                ).fetchone()
            finally:
                con.close()
        except Exception:  # a cache: measure in the process instead
            return None
        if row is None:
            return None
        q, at = int(row[0]), float(row[1])
        if q < 1 or not 0.0 <= time.time() - at <= self.max_age_s:
            return None
        return q

    def save(self, key: Hashable, quantum_ns: int) -> None:
        """Record a quantum just measured (silently skipped when the store is unusable)."""
        text = self._text(key)
        if text is None:
            return
        try:
            con = self._connect()
            try:
                with con:
                    con.execute(
                        "INSERT OR REPLACE INTO quanta VALUES (?, ?, ?, ?)",
                        (text, machine_fingerprint(), int(quantum_ns), time.time()),
                    )
            finally:
                con.close()
        except Exception:
            return


@functools.cache
def machine_fingerprint() -> str:
    """What a stored quantum is tied to: host, processor, Python and library versions."""
    import platform

    cpu = None
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as fh:
            cpu = next((ln.split(":", 1)[1].strip() for ln in fh if "model name" in ln), None)
    except OSError:
        pass
    if cpu is None:  # platform.processor() may run a subprocess (uname -p): only if needed
        cpu = platform.processor()
    return "|".join(
        [
            platform.node(),
            platform.machine(),
            cpu,
            str(os.cpu_count()),
            platform.python_implementation(),
            platform.python_version(),
            __version__,
            np.__version__,
        ]
    )


def default_store_path() -> str:
    """``$XDG_CACHE_HOME/snapcore/quanta.sqlite3`` (``~/.cache`` when unset)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "snapcore", "quanta.sqlite3")


_STORE: list[QuantaStore | None] = [None]


@contextlib.contextmanager
def quanta_store(store: QuantaStore | str | os.PathLike[str] | None) -> Iterator[None]:
    """Within the block, look calibrated quanta up in ``store`` (and record new ones).

    ``None`` keeps quanta in the process only (the default outside any block).  The
    command line uses :func:`default_store_path`, or the path in the environment
    variable ``SNAPCORE_TIMING_STORE`` (``off`` for none).
    """
    if store is not None and not isinstance(store, QuantaStore):
        store = QuantaStore(store)
    previous = _STORE[0]
    _STORE[0] = store
    try:
        yield
    finally:
        _STORE[0] = previous


# -- in the process --------------------------------------------------------------------
class QuantaCache:
    """A small thread-safe least-recently-used map of calibrated quanta.

    With ``every > 0``, each quantum is measured again after every ``every`` uses (a
    count of calls, which is public), so that it follows the machine's load: a quantum
    measured in a quiet moment makes many calls overrun when the load rises.  Within
    :func:`quanta_store`, a quantum missing here is looked up in the store before it
    is measured, and a newly measured one is recorded there.

    Parameters
    ----------
    name : str
        The kind of padded call (part of every key in the store).
    every : int
        Measure a quantum again after this many uses (0: never).
    size : int
        At most this many quanta are kept.
    """

    def __init__(self, name: str, every: int, size: int = CACHE_SIZE) -> None:
        self._d: OrderedDict[Hashable, list[int]] = OrderedDict()
        self._lock = threading.Lock()
        self._size = size
        self._name = name
        self.every = every

    def get(self, key: Hashable, compute: Callable[[], int]) -> int:
        """The quantum for ``key``: kept, stored, or measured by ``compute()``."""
        with self._lock:
            entry = self._d.get(key)
            if entry is not None:
                self._d.move_to_end(key)
                entry[1] += 1
                if not self.every or entry[1] < self.every:
                    return entry[0]
                entry[1] = 0  # measured again: the stored quantum is as old as ours
            due = entry is not None
        store = _STORE[0]
        stored = None if store is None or due else store.load((self._name, key))
        if stored is not None:
            q = stored
        else:
            q = compute()  # outside the lock: calibration runs releases
            if store is not None:
                store.save((self._name, key), q)
        with self._lock:
            self._d[key] = [q, 0]
            self._d.move_to_end(key)
            while len(self._d) > self._size:
                self._d.popitem(last=False)
        return q

    def clear(self) -> None:
        """Forget every quantum."""
        with self._lock:
            self._d.clear()

    def reset_lock(self) -> None:
        """A new lock, in a forked child: one held by another thread at the fork would
        never be released there."""
        self._lock = threading.Lock()


#: The quanta of scalar releases, of array releases, and of whole statistic releases.
SCALAR_QUANTA = QuantaCache("scalar", RECALIBRATE_SCALAR)
ARRAY_QUANTA = QuantaCache("array", RECALIBRATE_ARRAY)
STATISTIC_QUANTA = QuantaCache("statistic", RECALIBRATE_ARRAY)
_STATISTIC_STATS = PaddingStats()

#: Bumped by clear_caches: quanta a padding remembers from an older generation are
#: looked up again.
_GENERATION = [0]


def clear_caches() -> None:
    """Forget every calibrated quantum (they are measured again when next needed)."""
    for c in (SCALAR_QUANTA, ARRAY_QUANTA, STATISTIC_QUANTA):
        c.clear()
    _GENERATION[0] += 1


def generation() -> int:
    """How many times :func:`clear_caches` has run: a quantum remembered outside the
    caches is valid while this is unchanged."""
    return _GENERATION[0]


def statistic_stats() -> PaddingStats:
    """The process-wide counters of padded statistic releases (:func:`snapcore.release`)."""
    return _STATISTIC_STATS


# -- keys ------------------------------------------------------------------------------
class InternedKey:
    """A cache key hashed once, shared by every equal key (see :func:`intern_key`).

    A mechanism's key holds its :class:`~snapcore.Calibration` (a
    dozen Fractions): hashing and comparing it on every release cost about as much as
    the release itself.  Interned keys are found by identity.
    """

    __slots__ = ("_hash", "key")

    def __init__(self, key: Hashable) -> None:
        self.key = key
        self._hash = hash(key)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, InternedKey) and self.key == other.key)

    def __repr__(self) -> str:
        return repr(self.key)


_INTERNED: dict[Hashable, InternedKey] = {}
_INTERN_LOCK = threading.Lock()


def intern_key(key: Hashable) -> InternedKey:
    """The one :class:`InternedKey` for ``key`` in this process (at most
    :data:`CACHE_SIZE` kept; a dropped one is only re-created, never wrong)."""
    with _INTERN_LOCK:
        k = _INTERNED.get(key)
        if k is None:
            if len(_INTERNED) >= CACHE_SIZE:
                _INTERNED.pop(next(iter(_INTERNED)))
            k = _INTERNED[key] = InternedKey(key)
        return k


def _after_fork_in_child() -> None:
    # A lock held by another thread at fork time would never be released in the child.
    global _INTERN_LOCK
    # The statistic counters, a PaddingStats, get a new lock from snapcore.padding._pad.
    for c in (SCALAR_QUANTA, ARRAY_QUANTA, STATISTIC_QUANTA):
        c.reset_lock()
    _INTERN_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)
