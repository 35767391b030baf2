"""Where calibrated quanta are kept: in the process (:class:`QuantaCache`, one per kind
of padded call) and across processes (:class:`QuantaStore`, an SQLite file).

A quantum is a function of public parameters and of the machine only (it is measured
on synthetic, public inputs), so keeping it discloses nothing about any data.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import stat
import threading
import time
import warnings
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import TYPE_CHECKING

import numpy as np

from snapcore._version import __version__
from snapcore.padding._pad import PaddingStats, measuring_floor, measuring_quantum

if TYPE_CHECKING:
    import sqlite3

__all__ = [
    "ARRAY_QUANTA",
    "CACHE_SIZE",
    "RECALIBRATE_ARRAY",
    "RECALIBRATE_SCALAR",
    "SCALAR_QUANTA",
    "STATISTIC_QUANTA",
    "STORE_CEILING",
    "STORE_MAX_AGE_S",
    "InternedKey",
    "QuantaCache",
    "QuantaStore",
    "StoreProblem",
    "clear_caches",
    "default_store_path",
    "generation",
    "in_range",
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
#: A stored quantum is used only within ``[floor, STORE_CEILING·floor]``, where the floor
#: is the least time of the slowest calibration class, measured in the process
#: (``measuring_floor()``): a store's writer can neither switch
#: the padding off nor make a padded call wait more than this many times its floor.
STORE_CEILING = 8

_COLUMNS = (
    ("key", "TEXT"),
    ("fingerprint", "TEXT"),
    ("quantum_ns", "INTEGER"),
    ("measured_at", "REAL"),
)
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS quanta (key TEXT PRIMARY KEY, fingerprint TEXT "
    "NOT NULL, quantum_ns INTEGER NOT NULL, measured_at REAL NOT NULL)"
)


class StoreProblem(Exception):
    """Why a :class:`QuantaStore` or one of its entries is not used (a cache miss)."""


class QuantaStore:
    """Calibrated quanta kept across processes, in an SQLite file.

    A one-shot process (the command line) would otherwise calibrate its quanta on
    every run, which costs more than the release itself.  An entry is used only on
    the machine and software that measured it (:func:`machine_fingerprint`), for
    ``STORE_MAX_AGE_S`` seconds after it was measured, and only when its quantum lies
    within ``[floor, STORE_CEILING·floor]`` of a floor measured in the process, so a
    writer of the file can only slow padded calls down, within that bound.

    The file is untrusted: it is used only when it and its directory are owned by
    this user, are not writable by group or others and are not symbolic links (the
    file is opened with ``O_NOFOLLOW``), and when its table has the expected schema.
    Any problem (those, a damaged or unreadable file, a damaged or out-of-range entry)
    is a cache miss: a :class:`RuntimeWarning` names the problem (never a stored
    value) and the quantum is measured in the process.  :func:`quanta_store` checks
    the file when its block is entered, before any release.

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
        #: The problem that makes the whole file unusable, once found (then never opened).
        self.problem: str | None = None
        self._checked = False

    def warn(self, problem: str) -> None:
        """Warn that ``problem`` (a description, never a stored value) makes a miss."""
        warnings.warn(
            f"timing quanta store {self.path}: {problem}; quanta are measured in the process",
            RuntimeWarning,
            stacklevel=2,
        )

    def check(self) -> bool:
        """Whether the file is usable (created when absent); warns once when it is not."""
        if self.problem is not None:
            return False
        if self._checked:
            return True
        try:
            self._connect().close()
        except StoreProblem as exc:
            self.problem = str(exc)
        except Exception as exc:  # a cache: measure in the process instead
            self.problem = f"it cannot be opened ({type(exc).__name__})"
        if self.problem is None:
            self._checked = True
            return True
        self.warn(self.problem)
        return False

    def _connect(self) -> sqlite3.Connection:
        import sqlite3  # here: a process that keeps its quanta in memory never needs it

        folder = os.path.dirname(os.path.abspath(self.path))
        if not os.path.lexists(folder):
            os.makedirs(folder, mode=0o700, exist_ok=True)
        _check_owned(os.lstat(folder), "its directory", stat.S_ISDIR)
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW, 0o600)
        except OSError as exc:
            if os.path.islink(self.path):
                raise StoreProblem("it is a symbolic link") from exc
            raise
        try:
            _check_owned(os.fstat(fd), "the file", stat.S_ISREG)
        finally:
            os.close(fd)
        # The directory is this user's and nobody else may write it, so the file
        # checked above is the one SQLite opens.
        con = sqlite3.connect(self.path, timeout=2.0)
        try:
            con.execute(_SCHEMA)
            columns = tuple(
                (str(r[1]), str(r[2]).upper())
                for r in con.execute("PRAGMA table_info(quanta)").fetchall()
            )
            if columns != _COLUMNS:
                raise StoreProblem("its table has another schema")
        except BaseException:
            con.close()
            raise
        return con

    @staticmethod
    def _text(key: Hashable) -> str | None:
        text = repr(key)
        # A key that prints an object's address is not stable across processes.
        return None if " at 0x" in text else text

    def load(self, key: Hashable) -> int | None:
        """The stored quantum for ``key``, or None (absent, stale, another machine, or a
        problem: then with a warning).  Its range is checked by the caller."""
        text = self._text(key)
        if text is None or not self.check():
            return None
        try:
            con = self._connect()
            try:
                rows = con.execute(
                    "SELECT quantum_ns, measured_at FROM quanta WHERE key = ? AND fingerprint = ?",
                    (text, machine_fingerprint()),
                ).fetchall()
            finally:
                con.close()
        except StoreProblem as exc:
            self.warn(str(exc))
            return None
        except Exception as exc:
            self.warn(f"it cannot be read ({type(exc).__name__})")
            return None
        if not rows:
            return None
        (q, at), *more = rows
        if more or type(q) is not int or type(at) not in (int, float) or not math.isfinite(at):
            self.warn("an entry is damaged (a value of the wrong type or a duplicate key)")
            return None
        if q < 1:
            self.warn("an entry holds a quantum below one nanosecond")
            return None
        age = time.time() - at
        if age < 0.0:
            self.warn("an entry was measured in the future")
            return None
        if age > self.max_age_s:
            return None
        return q

    def save(self, key: Hashable, quantum_ns: int) -> None:
        """Record a quantum just measured (skipped when the store is unusable)."""
        text = self._text(key)
        if text is None or not self.check():
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
        except Exception:  # a cache: the quantum is kept in the process
            return


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def _check_owned(st: os.stat_result, what: str, kind: Callable[[int], bool]) -> None:
    """Refuse (:class:`StoreProblem`) a file or directory that is a symbolic link, of
    another kind, owned by another user, or writable by group or others."""
    if stat.S_ISLNK(st.st_mode):
        raise StoreProblem(f"{what} is a symbolic link")
    if not kind(st.st_mode):
        raise StoreProblem(f"{what} is not a {'directory' if kind is stat.S_ISDIR else 'file'}")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise StoreProblem(f"{what} belongs to another user")
    if st.st_mode & 0o022:
        raise StoreProblem(f"{what} is writable by group or others")


def in_range(quantum_ns: int, floor_ns: int) -> bool:
    """Whether a stored quantum may be used: ``floor <= q <= STORE_CEILING·floor``."""
    return floor_ns <= quantum_ns <= STORE_CEILING * floor_ns


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
    variable ``SNAPCORE_TIMING_STORE`` (``off`` for none).  The file is checked on
    entry (a problem warns, and the block measures its quanta in the process).
    """
    if store is not None and not isinstance(store, QuantaStore):
        store = QuantaStore(store)
    if store is not None:
        store.check()  # a problem with the file is found here, before any release
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
    is measured, and a newly measured one is recorded there; a stored one is used
    only within ``[floor, STORE_CEILING·floor]`` of its floor (``compute()`` run
    within ``measuring_floor()``).

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
        if stored is not None and store is not None:
            with measuring_floor():
                floor = compute()
            if not in_range(stored, floor):
                store.warn(
                    "a stored quantum is out of range (below the least time of the work "
                    f"it covers, measured now, or above {STORE_CEILING} times it: the "
                    "machine's speed changed since, or the entry was altered)"
                )
                stored = None
        if stored is not None:
            q = stored
        else:
            with measuring_quantum():  # a quantum, even within another's floor
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
