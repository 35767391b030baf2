"""A durable privacy-budget ledger shared by processes: it loses nothing.

A :class:`Ledger` is one SQLite file (the standard library's :mod:`sqlite3`; no
server, no lock files of its own) holding a total ε and the history of every spend.
It gives the guarantees an in-memory :class:`~snapcore.Budget` cannot:

**Write-ahead.**  A spend is committed to disk *before* any noise is drawn.  The
record is written and ``COMMIT`` returns (with ``synchronous=FULL``, after SQLite's
fsyncs) before the ``with`` block of :meth:`Ledger.reserve` runs, so a release killed
at any point after that, even by ``SIGKILL`` or a power cut, is counted as spent.

**No refunds.**  Once committed, ε stays spent whether the release completes, raises
or is killed: the ledger cannot know whether noise was drawn, and a draw that was
never published may still have left the process (a log line, a core dump, a timing).
Every check snapcore makes on a release's arguments and data runs before the ledger
is touched, so a release refused for bad input costs nothing.  The entry's status
(``committed``, then ``completed`` or ``failed``) is informational only; a release
that was killed stays ``committed``.  (The in-memory :class:`~snapcore.Budget` does
return a failed block's reservation; this is the one deliberate difference.)

**No overspending across processes.**  A spend is one ``BEGIN IMMEDIATE``
transaction: it takes SQLite's write lock, re-checks the whole ledger, compares ε
with what remains, appends the entry and commits.  Concurrent processes queue on
the lock (up to a timeout), so they cannot both see the same remaining budget.

**Refuse, never reset.**  Every open and every spend checks the file: the SQLite
header's application id and schema version, its journal mode, ``PRAGMA
integrity_check``, the whole schema (every table, index, trigger and view of
``sqlite_master``, with its SQL, must be exactly what :meth:`Ledger.init` created for
the ledger's mode, pure-ε or ``(ε, δ)`` with its ``curves`` table: a trigger or a
view could otherwise turn spends into no-ops), the ``meta`` table, the
file's size against its page count, canonical ``p/q`` fractions, contiguous entry
numbers, the totals re-derived from the history (each entry's running total and the
stored total must equal the exact sums), and a SHA-256 chain over the total and every
entry, recorded by snapcore with each spend, so that an edit made with another tool
(raising the total, rewriting an entry consistently) is refused too; in an ``(ε, δ)``
ledger the chain covers δ, the accountant and each entry's curve.  A spend (and its
curve) is read back and re-verified before its ``COMMIT``.  A :class:`Ledger` also
refuses a file whose history does not extend the longest one it has read (an older
copy put back).
The chain has no key: it catches damage and edits made outside snapcore, not someone
who can write the file and recompute it (docs/embedding.md lists what is and is not
caught).  A file failing any check raises :class:`~snapcore.errors.LedgerError` and
is left byte-for-byte untouched.

**Durability settings.**  ``journal_mode=DELETE`` with ``synchronous=FULL`` (and
``fullfsync`` on macOS): a commit fsyncs the rollback journal, then the database,
then deletes the journal, so a committed spend survives a crash or power loss and
an interrupted one rolls back cleanly on the next open.  DELETE rather than WAL:
writes are rare (one per release), the ledger stays a single file that is safe to
copy, and it works on network file systems, where WAL's shared memory does not.

ε is stored exactly, as the text ``"p/q"``; it is shown as a short decimal.

>>> import tempfile, os
>>> from fractions import Fraction
>>> from snapcore.releases._ledger import Ledger
>>> path = os.path.join(tempfile.mkdtemp(), "budget.ledger")
>>> led = Ledger.init(path, Fraction(1))
>>> led.spend(Fraction(1, 3), label="mean age")
>>> led.spent, led.remaining
(Fraction(1, 3), Fraction(2, 3))
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import os
import re
import sqlite3
import threading
import warnings
from collections.abc import Iterator, Sequence
from contextlib import closing, contextmanager
from fractions import Fraction
from pathlib import Path
from typing import Any

import attrs

from snapcore._display import short
from snapcore.analysis._accounting import (
    ACCOUNTANTS,
    ComposedGuarantee,
    ReleaseCurve,
    check_accountant,
    check_curve_kind,
    compose,
)
from snapcore.calibration._params import check_real, parse_epsilon
from snapcore.errors import BudgetExceededError, LedgerError, ParameterError

__all__ = [
    "SCHEMA_VERSION",
    "Ledger",
    "LedgerEntry",
    "LedgerState",
    "parse_epsilon",
]

#: Version of the ledger's tables; a file of another version is refused.
SCHEMA_VERSION = 1
#: ``PRAGMA application_id`` of a snapcore ledger (the bytes "Snap").
APPLICATION_ID = 0x536E6170
#: Seconds a spend waits for another process's transaction before giving up.
LOCK_TIMEOUT = 60.0

_STATUSES = ("committed", "completed", "failed")
_FRACTION = re.compile(r"(0|[1-9][0-9]*)/([1-9][0-9]*)")
_SCHEMA = (
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
    "CREATE TABLE entries ("
    " id INTEGER PRIMARY KEY,"
    " time TEXT NOT NULL,"
    " label TEXT NOT NULL,"
    " epsilon TEXT NOT NULL,"
    " cumulative TEXT NOT NULL,"
    " status TEXT NOT NULL CHECK (status IN ('committed', 'completed', 'failed')),"
    " pid INTEGER NOT NULL)",
)
#: The extra table of an approximate-DP ledger: the certified curve of each entry.
_SCHEMA_CURVES = "CREATE TABLE curves (id INTEGER PRIMARY KEY, curve TEXT NOT NULL)"


def _to_text(q: Fraction) -> str:
    return f"{q.numerator}/{q.denominator}"


def _from_text(what: str, text: object) -> Fraction:
    if not isinstance(text, str) or _FRACTION.fullmatch(text) is None:
        raise LedgerError(f"{what} is not an exact fraction 'p/q' ({text!r})")
    num, den = (int(t) for t in text.split("/"))
    q = Fraction(num, den)
    if q.numerator != num or q.denominator != den:
        raise LedgerError(f"{what} is not in lowest terms ({text!r})")
    return q


def _digest_start(total_text: str, created: str) -> str:
    data = "\0".join(("snapcore-ledger", str(SCHEMA_VERSION), total_text, created))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@functools.cache
def _expected_schema(approx: bool = False) -> frozenset[tuple[str, str, str, str | None]]:
    """``(type, name, table, sql)`` of every object :meth:`Ledger.init` creates, as
    SQLite itself records them (built once per mode in a private in-memory database):
    :data:`_SCHEMA`, and for an approximate-DP ledger :data:`_SCHEMA_CURVES` too."""
    with closing(sqlite3.connect(":memory:")) as conn:
        for statement in (*_SCHEMA, _SCHEMA_CURVES) if approx else _SCHEMA:
            conn.execute(statement)
        rows = conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master").fetchall()
    return frozenset(
        (str(t), str(n), str(tb), None if q is None else str(q)) for t, n, tb, q in rows
    )


def _schema_difference(
    found: set[tuple[str, str, str, str | None]],
    expected: frozenset[tuple[str, str, str, str | None]],
    mode: str,
) -> str | None:
    """What in ``found`` differs from ``expected`` (kinds and names only), or None."""
    extra = sorted(found - expected, key=lambda r: (r[0], r[1]))
    if extra:
        names = {(t, n) for t, n, _, _ in expected}
        kind, name, table, _ = extra[0]
        if (kind, name) in names:
            what = f"its {kind} {name!r} is not defined as {mode} defines it (changed)"
        else:
            on = f" on {table!r}" if kind in ("index", "trigger") else ""
            what = f"it holds a {kind} {name!r}{on} that {mode} does not create"
        more = f" (and {len(extra) - 1} other unexpected objects)" if len(extra) > 1 else ""
        return what + more + "; its spends could be silently altered"
    missing = sorted(expected - found, key=lambda r: (r[0], r[1]))
    if missing:
        kind, name, _, _ = missing[0]
        return f"its {kind} {name!r} is missing ({mode} has one)"
    return None


def _check_schema(conn: sqlite3.Connection, path: str) -> None:
    """Refuse a file whose schema is not exactly the one :meth:`Ledger.init` creates.

    The rows and the digest chain say nothing about what SQLite runs when a row is
    written: a trigger (``BEFORE INSERT ON entries ... RAISE(IGNORE)``), a view with an
    ``INSTEAD OF`` trigger, a changed column or constraint would turn a spend into a
    no-op or rewrite it, and the file would still verify.  So every object of
    ``sqlite_master`` (tables, indexes, triggers, views) and its SQL text must be one
    the ledger created, and this connection must see no other database (``temp`` or
    attached) in which such objects could live.

    The expected schema depends on the ledger's mode, which ``meta`` records: an
    approximate-DP ledger (``delta`` and ``accountant`` keys) has a ``curves`` table,
    a pure-ε one has none.  ``meta`` is read only once the schema is exactly one of
    the two, so that the mode comes from the ledger's own table; then the schema must
    be the one of that mode (a pure ledger with a ``curves`` table, or an approximate
    one without it, is refused).  A refusal names the object's kind and name, never a
    row's value.
    """
    found = {
        (str(t), str(n), str(tb), None if q is None else str(q))
        for t, n, tb, q in conn.execute("SELECT type, name, tbl_name, sql FROM main.sqlite_master")
    }
    pure, approx = _expected_schema(False), _expected_schema(True)
    if found not in (pure, approx):
        # Named against the mode the file looks like (a curves table or not): the
        # refusal is the same either way, only its wording picks the closer schema.
        like_approx = any(t == "table" and n == "curves" for t, n, _, _ in found)
        problem = _schema_difference(found, approx if like_approx else pure, "a ledger")
        assert problem is not None
        raise _fail(path, problem)
    declared = conn.execute(
        "SELECT count(*) FROM meta WHERE key IN ('delta', 'accountant')"
    ).fetchone()[0]
    if declared:
        problem = _schema_difference(found, approx, "an (epsilon, delta) ledger")
    else:
        problem = _schema_difference(found, pure, "a pure-epsilon ledger")
    if problem is not None:
        raise _fail(path, problem)
    databases = [str(row[1]) for row in conn.execute("PRAGMA database_list")]
    others = [d for d in databases if d != "main"]
    if (
        "temp" in others
        and not conn.execute("SELECT count(*) FROM temp.sqlite_master").fetchone()[0]
    ):
        others.remove("temp")
    if others:
        raise _fail(path, f"its connection sees other databases {others} (temp or attached)")


def _digest_next(
    previous: str, idx: int, time: str, label: str, eps: str, pid: int, curve: str | None
) -> str:
    """The chain after one entry; ``curve``, its curve's text, is chained in an
    ``(ε, δ)`` ledger (None in a pure-ε one)."""
    fields = (previous, str(idx), time, label, eps, str(pid))
    data = "\0".join(fields if curve is None else (*fields, curve))
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


def _digest_start_approx(total_text: str, created: str, delta_text: str, accountant: str) -> str:
    data = "\0".join(
        (
            "snapcore-ledger-approx",
            str(SCHEMA_VERSION),
            total_text,
            created,
            delta_text,
            accountant,
        )
    )
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


@attrs.frozen(kw_only=True)
class LedgerEntry:
    """One spend recorded in a ledger.

    Attributes
    ----------
    index : int
        1, 2, ... in the order the spends were committed.
    time : str
        When it was committed (UTC, ISO 8601).
    label : str
        What was released.
    epsilon : Fraction
        The ε spent (exact).
    cumulative : Fraction
        ε spent by this entry and all before it.
    status : str
        ``committed`` (spent; the release had not finished, or was killed),
        ``completed`` or ``failed``.  Every status counts as spent.
    pid : int
        The process that committed it.
    """

    index: int
    time: str
    label: str
    epsilon: Fraction
    cumulative: Fraction
    status: str
    pid: int

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (ε exact as ``"p/q"`` and as a float)."""
        return {
            "index": self.index,
            "time": self.time,
            "label": self.label,
            "epsilon": float(self.epsilon),
            "epsilon_exact": str(self.epsilon),
            "cumulative": float(self.cumulative),
            "cumulative_exact": str(self.cumulative),
            "status": self.status,
            "pid": self.pid,
        }


@attrs.frozen(kw_only=True)
class LedgerState:
    """A consistent snapshot of a ledger: its total, what is spent, and the history.

    ``digest`` is the SHA-256 chain after the last entry; ``(len(entries), digest)``,
    kept where the ledger's writers cannot rewrite it, lets a later
    ``Ledger(path, seen=...)`` refuse a file rolled back behind it.

    In an approximate-DP ledger (``delta`` not None), ``spent`` is still the sum of the
    entries' ε; the budget is the composition :attr:`guarantee` of their ``curves``
    under ``accountant``, which must stay at most ``total`` at ``delta``.
    """

    total: Fraction
    spent: Fraction
    entries: tuple[LedgerEntry, ...]
    created: str
    digest: str
    delta: Fraction | None = None
    accountant: str | None = None
    curves: tuple[ReleaseCurve, ...] = ()
    guarantee: ComposedGuarantee | None = None

    @property
    def remaining(self) -> Fraction:
        """ε not yet spent (approximate mode: total minus the composed ε)."""
        if self.guarantee is not None:
            return self.total - Fraction(self.guarantee.epsilon)
        return self.total - self.spent


def _fail(path: str, problem: str) -> LedgerError:
    return LedgerError(
        f"budget ledger {path!r} refused: {problem}. The file was not modified and is "
        "never reset automatically; restore it from a backup, or investigate it with "
        "the sqlite3 tool"
    )


def _connect(path: str) -> sqlite3.Connection:
    if not os.path.exists(path):
        raise LedgerError(
            f"budget ledger {path!r} does not exist; create it with "
            f"'snapcore budget init {path} --epsilon TOTAL'"
        )
    if not os.path.isfile(path):
        raise LedgerError(f"budget ledger {path!r} is not a regular file")
    if os.path.getsize(path) == 0:
        raise _fail(path, "it is empty (0 bytes): truncated, or never initialised")
    # mode=rw: never create a file (an empty new database would look like a ledger
    # that lost its history).  isolation_level=None: transactions are explicit.
    uri = "file:" + Path(path).resolve().as_posix().replace("?", "%3f").replace("#", "%23")
    conn = sqlite3.connect(uri + "?mode=rw", uri=True, timeout=LOCK_TIMEOUT, isolation_level=None)
    try:
        # Per-connection settings; none of them writes to the file.
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA fullfsync=ON")
        conn.execute("PRAGMA trusted_schema=OFF")
        conn.execute("PRAGMA cell_size_check=ON")
        conn.execute("PRAGMA recursive_triggers=OFF")
        conn.execute("PRAGMA foreign_keys=OFF")
        conn.execute("PRAGMA query_only=OFF")
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise _fail(path, f"it is not a readable SQLite database ({exc})") from None
    except BaseException:
        conn.close()
        raise
    return conn


def _verify(
    conn: sqlite3.Connection, path: str, seen: tuple[int, str] | None = None
) -> LedgerState:
    """Check the whole ledger inside the caller's transaction; raise LedgerError.

    ``seen``, ``(entries, digest)`` of a history verified earlier from this file,
    must be a prefix of the history found (see :meth:`Ledger.state`).
    """
    try:
        app = conn.execute("PRAGMA application_id").fetchone()[0]
        if app != APPLICATION_ID:
            raise _fail(path, "it is not a snapcore budget ledger (wrong application id)")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version != SCHEMA_VERSION:
            raise _fail(
                path,
                f"its schema version is {version}, this snapcore reads version {SCHEMA_VERSION}",
            )
        # Under the read lock now held, the file must be exactly the pages its header
        # declares: a truncated tail (even of bytes SQLite would not miss) is refused.
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        page_count = conn.execute("PRAGMA page_count").fetchone()[0]
        size = os.path.getsize(path)
        if size != page_size * page_count:
            raise _fail(
                path,
                f"its size is {size} bytes, its header declares {page_count} pages of "
                f"{page_size} bytes (truncated or extended)",
            )
        mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
        if str(mode).lower() != "delete":
            raise _fail(path, f"its journal mode is {mode!r}, a ledger uses 'delete'")
        check = [row[0] for row in conn.execute("PRAGMA integrity_check")]
        if check != ["ok"]:
            raise _fail(path, "SQLite's integrity check failed: " + "; ".join(check[:3]))
        _check_schema(conn, path)
        meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
        rows = conn.execute(
            "SELECT id, time, label, epsilon, cumulative, status, pid FROM entries ORDER BY id"
        ).fetchall()
    except sqlite3.DatabaseError as exc:
        raise _fail(path, f"it is not a readable SQLite database ({exc})") from None
    expected = {"schema_version", "total", "spent", "entries", "created", "digest"}
    approx = "delta" in meta or "accountant" in meta
    if approx:
        expected |= {"delta", "accountant"}
    if set(meta) != expected:
        raise _fail(path, f"its meta table has keys {sorted(meta)}, expected {sorted(expected)}")
    if meta["schema_version"] != str(SCHEMA_VERSION):
        raise _fail(path, f"its meta schema version is {meta['schema_version']!r}")
    try:
        total = _from_text("the total", meta["total"])
        stored_spent = _from_text("the stored spent total", meta["spent"])
        entries: list[LedgerEntry] = []
        running = Fraction(0)
        for k, (idx, time, label, eps_text, cum_text, status, pid) in enumerate(rows, 1):
            if not isinstance(idx, int) or idx != k:
                raise LedgerError(f"entry numbers are not 1, 2, ...: entry {k} is {idx}")
            eps = _from_text(f"entry {k}'s epsilon", eps_text)
            running += eps
            cumulative = _from_text(f"entry {k}'s running total", cum_text)
            if cumulative != running:
                raise LedgerError(
                    f"entry {k}'s running total {cum_text} differs from the sum of the "
                    f"history, {_to_text(running)}"
                )
            if (
                status not in _STATUSES
                or not isinstance(label, str)
                or not isinstance(pid, int)
                or not isinstance(time, str)
            ):
                raise LedgerError(f"entry {k} has an invalid status, label, time or pid")
            entries.append(
                LedgerEntry(
                    index=idx,
                    time=str(time),
                    label=label,
                    epsilon=eps,
                    cumulative=cumulative,
                    status=status,
                    pid=int(pid),
                )
            )
    except LedgerError as exc:
        raise _fail(path, str(exc)) from None
    if total <= 0:
        raise _fail(path, f"its total epsilon is {meta['total']}, not > 0")
    if meta["entries"] != str(len(entries)):
        raise _fail(
            path,
            f"it records {meta['entries']!r} entries but its history has {len(entries)} "
            "(truncated or tampered with)",
        )
    if stored_spent != running:
        raise _fail(
            path,
            f"its stored spent total {meta['spent']} differs from the sum of its history, "
            f"{_to_text(running)} (tampered with)",
        )
    if approx:
        return _verify_approx(conn, path, meta, total, running, tuple(entries), seen)
    if running > total:
        raise _fail(path, f"its history spends {_to_text(running)}, more than its total")
    start = _digest_start(meta["total"], meta["created"])
    digest = _check_chain(path, meta["digest"], start, entries, [None] * len(entries), seen)
    return LedgerState(
        total=total,
        spent=running,
        entries=tuple(entries),
        created=meta["created"],
        digest=digest,
    )


def _check_chain(
    path: str,
    recorded: str,
    start: str,
    entries: Sequence[LedgerEntry],
    curves: Sequence[str | None],
    seen: tuple[int, str] | None,
) -> str:
    """The digest chained from ``start`` over ``entries`` (and, in an ``(ε, δ)``
    ledger, their ``curves``' text); refuse a ledger whose digest is not the one
    snapcore ``recorded`` with it, or whose history does not extend ``seen``."""
    digest, prefix = start, {0: start}
    for e, c in zip(entries, curves, strict=True):
        digest = _digest_next(digest, e.index, e.time, e.label, _to_text(e.epsilon), e.pid, c)
        prefix[e.index] = digest
    if recorded != digest:
        raise _fail(
            path,
            "its total or history does not match the digest snapcore recorded with it "
            "(edited outside snapcore)",
        )
    _check_seen(path, prefix, seen)
    return digest


def _check_seen(path: str, prefix: dict[int, str], seen: tuple[int, str] | None) -> None:
    """Refuse a history that does not extend ``seen``: ``prefix`` maps each length
    0, 1, ... of the history found to its digest."""
    if seen is not None and prefix.get(seen[0]) != seen[1]:
        raise _fail(
            path,
            f"its history is not a continuation of the {seen[0]} entries this process "
            f"already read from it: it has {len(prefix) - 1}, or they differ (replaced by "
            "an older copy, or its last entries removed and its digest recomputed)",
        )


def _check_spend(epsilon: Any, label: Any, curve: Any) -> tuple[Fraction, str]:
    # A spend is a release's positive epsilon: zero would write an entry that spends
    # nothing, and a negative one would be a refund.  Checked in both modes, before
    # the ledger is opened.
    eps = check_real("epsilon", epsilon, positive=True)
    if not isinstance(label, str):
        raise ParameterError(f"label must be a str, got {type(label).__name__}")
    check_curve_kind(curve)
    return eps, label


def check_delta(delta: Any) -> Fraction:
    """The δ of an ``(ε, δ)`` budget, exact, if it is a finite number in (0, 1);
    ParameterError otherwise."""
    d = check_real("delta", delta, positive=True)
    if not d < 1:
        raise ParameterError(f"delta must be in (0, 1), got {delta!r}", parameter="delta")
    return d


def _verify_approx(
    conn: sqlite3.Connection,
    path: str,
    meta: dict[str, str],
    total: Fraction,
    running: Fraction,
    entries: tuple[LedgerEntry, ...],
    seen: tuple[int, str] | None,
) -> LedgerState:
    """The checks of an approximate-DP ledger: its curves, the digest (over the curves
    too), that the history extends ``seen``, and the composition within the total."""
    try:
        rows = conn.execute("SELECT id, curve FROM curves ORDER BY id").fetchall()
    except sqlite3.DatabaseError as exc:
        raise _fail(path, f"its curves table cannot be read ({exc})") from None
    try:
        delta = _from_text("the delta", meta["delta"])
        if not 0 < delta < 1:
            raise LedgerError(f"its delta is {meta['delta']}, not in (0, 1)")
        accountant = meta["accountant"]
        if accountant not in ACCOUNTANTS:
            raise LedgerError(f"its accountant is {accountant!r}, not one of {ACCOUNTANTS}")
        if [r[0] for r in rows] != [e.index for e in entries]:
            raise LedgerError("its curves do not match its entries one for one")
        curves = []
        for (idx, text), e in zip(rows, entries, strict=True):
            try:
                curve = ReleaseCurve.from_text(text) if isinstance(text, str) else None
            except ParameterError:
                curve = None
            if curve is None or curve.epsilon != e.epsilon:
                raise LedgerError(f"entry {idx}'s curve {text!r} is not a curve of its epsilon")
            curves.append(curve)
    except LedgerError as exc:
        raise _fail(path, str(exc)) from None
    start = _digest_start_approx(meta["total"], meta["created"], meta["delta"], accountant)
    texts = [c.to_text() for c in curves]
    digest = _check_chain(path, meta["digest"], start, entries, texts, seen)
    guarantee = compose(curves, delta, accountant=accountant)
    if guarantee.epsilon > total:
        raise _fail(
            path,
            f"its history composes to epsilon {guarantee.epsilon!r} at delta "
            f"{float(delta)!r}, more than its total",
        )
    return LedgerState(
        total=total,
        spent=running,
        entries=entries,
        created=meta["created"],
        digest=digest,
        delta=delta,
        accountant=accountant,
        curves=tuple(curves),
        guarantee=guarantee,
    )


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


class Ledger:
    """A privacy budget on disk, shared by processes (see the module docstring).

    Parameters
    ----------
    path : str or path-like
        An existing ledger (create one with :meth:`init`).  It is checked at once.
    seen : (int, str), optional
        ``(len(state.entries), state.digest)`` of an earlier :meth:`state` of this
        ledger, kept elsewhere: the file's history must extend that one (it is not
        an older copy, nor cut short and re-digested).

    Raises
    ------
    LedgerError
        If the file is missing or fails any check, or does not extend ``seen``; the
        file is not modified.
    ParameterError
        If ``seen`` is not a pair of an int >= 0 and a SHA-256 hex digest.
    """

    def __init__(
        self, path: str | os.PathLike[str], *, seen: tuple[int, str] | None = None
    ) -> None:
        self.path = os.fspath(path)
        if seen is not None:
            ok = isinstance(seen, tuple) and len(seen) == 2
            n, digest = seen if ok else (None, None)
            if not (
                isinstance(n, int)
                and not isinstance(n, bool)
                and n >= 0
                and isinstance(digest, str)
                and re.fullmatch(r"[0-9a-f]{64}", digest)
            ):
                raise ParameterError(
                    "seen must be a pair (entries: int >= 0, digest: 64 lowercase hex "
                    f"digits), got a {type(seen).__name__}"
                )
        self._seen: tuple[int, str] | None = seen
        self._seen_lock = threading.Lock()
        self.state()

    def _remember(self, st: LedgerState) -> LedgerState:
        """Keep the longest history verified so far (histories only grow)."""
        with self._seen_lock:
            if self._seen is None or len(st.entries) >= self._seen[0]:
                self._seen = (len(st.entries), st.digest)
        return st

    def _anchor(self) -> tuple[int, str] | None:
        with self._seen_lock:
            return self._seen

    @classmethod
    def init(
        cls,
        path: str | os.PathLike[str],
        total_epsilon: Any,
        *,
        delta: Any = None,
        accountant: str | None = None,
    ) -> Ledger:
        """Create a new ledger holding ``total_epsilon``; never overwrites a file.

        With ``delta``, the ledger is an approximate-DP one: it holds an
        ``(ε, δ)`` budget, records the certified curve of each spend
        (:class:`~snapcore.analysis.ReleaseCurve`) and refuses a spend
        when the composition under ``accountant`` (``"pld"``, the default, or ``"rdp"``) would
        exceed ``total_epsilon`` at ``delta`` (docs/budgets.md).

        The ledger is built under a temporary name in the same directory and linked
        into place atomically, so no process ever sees a half-made ledger.

        Raises
        ------
        LedgerError
            If ``path`` already exists (whatever it holds).
        ParameterError
            If ``total_epsilon`` is not a finite number > 0.
        """
        total = check_real("total_epsilon", total_epsilon, positive=True)
        approx: tuple[str, str] | None = None
        if delta is None and accountant is not None:
            raise ParameterError(
                "accountant applies to an (epsilon, delta) ledger: give delta= too",
                parameter="accountant",
            )
        if delta is not None:
            d = check_delta(delta)
            accountant = check_accountant("pld" if accountant is None else accountant)
            approx = (_to_text(d), accountant)
        target = os.fspath(path)
        if os.path.lexists(target):
            raise LedgerError(f"budget ledger {target!r} already exists; refusing to overwrite")
        folder = os.path.dirname(os.path.abspath(target))
        tmp = os.path.join(folder, f".{os.path.basename(target)}.{os.getpid()}.init")
        try:
            with closing(sqlite3.connect(tmp, isolation_level=None)) as conn:
                conn.execute("PRAGMA journal_mode=DELETE")
                conn.execute("PRAGMA synchronous=FULL")
                conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                created = _now()
                conn.execute("BEGIN IMMEDIATE")
                for statement in _SCHEMA:
                    conn.execute(statement)
                if approx is None:
                    start = _digest_start(_to_text(total), created)
                    extra: list[tuple[str, str]] = []
                else:
                    conn.execute(_SCHEMA_CURVES)
                    start = _digest_start_approx(_to_text(total), created, *approx)
                    extra = [("delta", approx[0]), ("accountant", approx[1])]
                conn.executemany(
                    "INSERT INTO meta (key, value) VALUES (?, ?)",
                    [
                        ("schema_version", str(SCHEMA_VERSION)),
                        ("total", _to_text(total)),
                        ("spent", "0/1"),
                        ("entries", "0"),
                        ("created", created),
                        ("digest", start),
                        *extra,
                    ],
                )
                conn.execute("COMMIT")
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            try:
                os.link(tmp, target)
            except FileExistsError:
                raise LedgerError(
                    f"budget ledger {target!r} already exists; refusing to overwrite"
                ) from None
            if hasattr(os, "O_DIRECTORY"):
                dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
                try:
                    os.fsync(dfd)
                finally:
                    os.close(dfd)
        except (sqlite3.Error, OSError) as exc:
            raise LedgerError(f"budget ledger {target!r} cannot be created: {exc}") from None
        finally:
            for leftover in (tmp, tmp + "-journal"):
                if os.path.exists(leftover):
                    os.unlink(leftover)
        return cls(target)

    def state(self) -> LedgerState:
        """Read and check the whole ledger in one read transaction.

        Besides the file's own checks, the history must extend the longest one this
        object has read before: a file rolled back (an older copy put in its place,
        or its last entries deleted and its digest recomputed) is refused.
        """
        with closing(_connect(self.path)) as conn:
            try:
                conn.execute("BEGIN")
            except sqlite3.DatabaseError as exc:
                raise _fail(self.path, f"it cannot be read ({exc})") from None
            try:
                return self._remember(_verify(conn, self.path, self._anchor()))
            finally:
                conn.execute("ROLLBACK")

    @property
    def total(self) -> Fraction:
        """The total ε."""
        return self.state().total

    @property
    def spent(self) -> Fraction:
        """ε committed so far (every entry, whatever its status)."""
        return self.state().spent

    @property
    def remaining(self) -> Fraction:
        """ε not yet spent."""
        return self.state().remaining

    @property
    def entries(self) -> tuple[LedgerEntry, ...]:
        """The history, oldest first."""
        return self.state().entries

    @property
    def delta(self) -> Fraction | None:
        """The δ of an approximate-DP ledger (None for a pure-ε one)."""
        return self.state().delta

    def _commit_spend(self, eps: Fraction, label: str, what: str, outcome: str, curve: str) -> int:
        """Append one spend and commit it; return its entry number.

        Under the write lock: verify the file (extending the longest history seen),
        check the spend against the budget (the sum of ε, or in an approximate-DP
        ledger the composition of the curves with ``curve``), write it, read the
        whole ledger back and only then ``COMMIT``.  ``what`` and ``outcome`` word a
        refusal.
        """
        with closing(_connect(self.path)) as conn:
            try:
                conn.execute("BEGIN IMMEDIATE")
            except sqlite3.DatabaseError as exc:
                raise _fail(self.path, f"it cannot be locked for writing ({exc})") from None
            try:
                st = self._remember(_verify(conn, self.path, self._anchor()))
                if st.delta is None:
                    new_curve = None
                    left = st.remaining
                    if eps > left:
                        raise BudgetExceededError(
                            f"{what} refused by ledger {self.path!r}: it needs epsilon = "
                            f"{short(eps)} but the ledger has {short(left)} "
                            f"left (total {short(st.total)}, spent "
                            f"{short(st.spent)}); {outcome}"
                        )
                else:
                    new_curve = self._check_approx(st, eps, curve, what, outcome)
                index = len(st.entries) + 1
                spent = st.spent + eps
                time, pid = _now(), os.getpid()
                conn.execute(
                    "INSERT INTO entries (id, time, label, epsilon, cumulative, status, pid) "
                    "VALUES (?, ?, ?, ?, ?, 'committed', ?)",
                    (index, time, label, _to_text(eps), _to_text(spent), pid),
                )
                text = None if new_curve is None else new_curve.to_text()
                if text is not None:
                    conn.execute("INSERT INTO curves (id, curve) VALUES (?, ?)", (index, text))
                digest = _digest_next(st.digest, index, time, label, _to_text(eps), pid, text)
                conn.execute("UPDATE meta SET value = ? WHERE key = 'digest'", (digest,))
                conn.execute("UPDATE meta SET value = ? WHERE key = 'spent'", (_to_text(spent),))
                conn.execute("UPDATE meta SET value = ? WHERE key = 'entries'", (str(index),))
                # Read the write back before committing: the ledger must now hold
                # exactly this entry (and its curve) on top of the history it had.
                after = _verify(conn, self.path, (len(st.entries), st.digest))
                curves = st.curves if new_curve is None else (*st.curves, new_curve)
                if (
                    len(after.entries) != index
                    or after.spent != spent
                    or after.digest != digest
                    or after.delta != st.delta
                    or after.accountant != st.accountant
                    or after.curves != curves
                ):
                    raise _fail(self.path, "a spend written to it did not read back as written")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            # The write-ahead point: once COMMIT returns, the spend is on disk.
            conn.execute("COMMIT")
            self._remember(after)
            return index

    def _check_approx(
        self, st: LedgerState, eps: Fraction, kind: str, what: str, outcome: str
    ) -> ReleaseCurve:
        """The curve an approximate-DP ledger records for a spend, if the composition
        of its history with it stays within the total at δ."""
        assert st.delta is not None and st.accountant is not None
        curve = ReleaseCurve(kind, eps)
        g = compose((*st.curves, curve), st.delta, accountant=st.accountant)
        if g.epsilon > st.total:
            raise BudgetExceededError(
                f"{what} refused by ledger {self.path!r}: with it, the {g.releases} "
                f"releases compose to epsilon {g.epsilon:.6g} at delta "
                f"{float(st.delta):.3g} ({st.accountant}), more than the total "
                f"{short(st.total)}; {outcome}"
            )
        return curve

    def _mark(self, index: int, status: str) -> None:
        try:
            with closing(_connect(self.path)) as conn:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    _check_schema(conn, self.path)
                except LedgerError:
                    conn.execute("ROLLBACK")
                    raise
                conn.execute(
                    "UPDATE entries SET status = ? WHERE id = ? AND status = 'committed'",
                    (status, index),
                )
                conn.execute("COMMIT")
        except (sqlite3.Error, LedgerError) as exc:
            warnings.warn(
                f"budget ledger {self.path!r}: entry {index} is spent but could not be "
                f"marked {status!r} ({exc})",
                RuntimeWarning,
                stacklevel=3,
            )

    @contextmanager
    def reserve(self, epsilon: Any, *, label: str = "", curve: str = "pure") -> Iterator[Fraction]:
        """Commit ``epsilon`` as spent, durably, then run the ``with`` block.

        The ε stays spent whatever the block does (see "No refunds" above).
        ``curve`` (``"pure"`` or ``"snapping"``, see
        :class:`~snapcore.analysis.ReleaseCurve`) is what an
        approximate-DP ledger charges; a pure-ε ledger charges ε alone.

        Raises
        ------
        BudgetExceededError
            If ``epsilon`` exceeds what remains (in an approximate-DP ledger: if the
            composition with it would exceed the total at δ); nothing is recorded, the
            block does not run.
        LedgerError
            If the ledger fails its checks; nothing is recorded.
        ParameterError
            If ``epsilon`` is not a finite number > 0, ``label`` not a str or
            ``curve`` unknown.
        """
        eps, label = _check_spend(epsilon, label, curve)
        index = self._commit_spend(eps, label, "release", "nothing was drawn or spent", curve)
        try:
            yield eps
        except BaseException:
            self._mark(index, "failed")
            raise
        self._mark(index, "completed")

    def spend(self, epsilon: Any, *, label: str = "", curve: str = "pure") -> None:
        """Record ``epsilon`` as spent (for releases made outside snapcore).

        Prefer :meth:`reserve` around the release: a spend recorded after the noise
        was drawn can be refused when it is too late to undo the draw.  ``curve`` is
        as in :meth:`reserve`.

        Raises
        ------
        BudgetExceededError
            If ``epsilon`` exceeds what remains (in an approximate-DP ledger: if the
            composition with it would exceed the total at δ); nothing is recorded.
        LedgerError
            If the ledger fails its checks; nothing is recorded.
        ParameterError
            If ``epsilon`` is not a finite number > 0, ``label`` not a str or
            ``curve`` unknown.
        """
        eps, label = _check_spend(epsilon, label, curve)
        index = self._commit_spend(
            eps,
            label,
            "spend",
            "nothing was recorded; if noise was already drawn for it, that release is "
            "not covered by this ledger",
            curve,
        )
        self._mark(index, "completed")

    def to_dict(self) -> dict[str, Any]:
        """The ledger as a JSON-ready dict (exact values as ``"p/q"`` too)."""
        st = self.state()
        return {
            "path": self.path,
            "schema_version": SCHEMA_VERSION,
            "created": st.created,
            "total": float(st.total),
            "total_exact": str(st.total),
            "spent": float(st.spent),
            "spent_exact": str(st.spent),
            "remaining": float(st.remaining),
            "remaining_exact": str(st.remaining),
            "entries": [e.to_dict() for e in st.entries],
            **self._approx_dict(st),
        }

    @staticmethod
    def _approx_dict(st: LedgerState) -> dict[str, Any]:
        """The approximate-DP fields of :meth:`to_dict` (none for a pure-ε ledger)."""
        if st.delta is None or st.guarantee is None:
            return {}
        return {
            "delta": float(st.delta),
            "delta_exact": str(st.delta),
            "accountant": st.accountant,
            "curves": [c.to_text() for c in st.curves],
            "composed_epsilon": st.guarantee.epsilon,
        }

    def __repr__(self) -> str:
        return f"Ledger({self.path!r})"
