"""The ledger's integrity beyond its rows: its schema, its connection settings, zero
spends and rollback to an older copy.

Each attack is made with the standard sqlite3 module, as anyone with write access to
the file could, without recomputing snapcore's digest.
"""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path

import pytest

import snapcore
from snapcore import Budget, ReplaySource
from snapcore.errors import BudgetExceededError, LedgerError, ParameterError
from snapcore.releases import _ledger
from snapcore.releases._budget import LedgerApproxBudget, LedgerBudget
from snapcore.releases._ledger import Ledger

DATA = [float(v) for v in range(20)]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def _sql(path: str, *statements: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        for s in statements:
            conn.execute(s)
    finally:
        conn.close()


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    led = Ledger.init(tmp_path / "b.ledger", 1)
    led.spend(Fraction(1, 4), label="first")
    return led


_ENTRIES_SQL = (
    "CREATE TABLE entries ( id INTEGER PRIMARY KEY, time TEXT NOT NULL, label TEXT NOT NULL,"
    " epsilon TEXT NOT NULL, cumulative TEXT NOT NULL, status TEXT NOT NULL CHECK (status IN"
    " ('committed', 'completed', 'failed')), pid INTEGER NOT NULL)"
)

# name -> (statements planted, what the refusal must name)
PLANTS = {
    "trigger swallowing inserts": (
        ("CREATE TRIGGER swallow BEFORE INSERT ON entries BEGIN SELECT RAISE(IGNORE); END",),
        "trigger 'swallow' on 'entries'",
    ),
    "trigger freezing meta": (
        ("CREATE TRIGGER freeze BEFORE UPDATE ON meta BEGIN SELECT RAISE(IGNORE); END",),
        "trigger 'freeze' on 'meta'",
    ),
    "trigger after insert": (
        ("CREATE TRIGGER undo AFTER INSERT ON entries BEGIN DELETE FROM entries; END",),
        "trigger 'undo' on 'entries'",
    ),
    "view with an INSTEAD OF trigger": (
        (
            "CREATE VIEW spends AS SELECT * FROM entries",
            "CREATE TRIGGER spends_insert INSTEAD OF INSERT ON spends BEGIN SELECT 1; END",
        ),
        "trigger 'spends_insert' on 'spends'.*1 other",
    ),
    "view": (("CREATE VIEW spends AS SELECT * FROM entries",), "view 'spends'"),
    "index": (("CREATE INDEX by_label ON entries (label)",), "index 'by_label' on 'entries'"),
    "extra table": (("CREATE TABLE notes (x)",), "table 'notes'"),
    "statistics table (ANALYZE)": (("ANALYZE",), "table 'sqlite_stat1'"),
    "added column": (
        ("ALTER TABLE entries ADD COLUMN extra TEXT",),
        "table 'entries' is not defined as a ledger defines it",
    ),
    "dropped constraint (writable_schema)": (
        (
            "PRAGMA writable_schema=ON",
            "UPDATE sqlite_master SET sql = replace(sql, ' CHECK (status IN ("
            "''committed'', ''completed'', ''failed''))', '') WHERE name = 'entries'",
            "PRAGMA writable_schema=OFF",
        ),
        "table 'entries' is not defined as a ledger defines it",
    ),
}


@pytest.mark.parametrize("plant", list(PLANTS))
def test_planted_schema_object_refused_and_untouched(ledger: Ledger, plant: str) -> None:
    statements, named = PLANTS[plant]
    budget = LedgerBudget(ledger)  # opened before the plant, as a running service would
    _sql(ledger.path, *statements)
    src = ReplaySource([(1, 0.5)])
    _assert_refused_untouched(
        ledger,
        named,
        src,
        lambda: Ledger(ledger.path),
        lambda: ledger.state(),
        lambda: ledger.spend(Fraction(1, 100)),
        lambda: budget.remaining,
        lambda: snapcore.release(
            "mean", DATA, epsilon=0.5, data_bounds=(0, 20), budget=budget, source=src
        ),
    )


def _assert_refused_untouched(
    led: Ledger, named: str, src: ReplaySource, *attempts: Callable[[], object]
) -> None:
    """Each of ``attempts`` is refused naming ``named`` and saying the ledger was not
    modified, draws nothing from ``src``, and leaves ``led``'s folder byte for byte as
    it was (no journal left behind)."""
    folder = Path(led.path).parent
    before = _files(folder)
    for attempt in attempts:
        with pytest.raises(LedgerError, match=named) as info:
            attempt()
        assert "not modified" in str(info.value)
    assert src.remaining == 1  # refused before any noise was drawn
    assert _files(folder) == before


def test_the_reviewed_bypass_is_refused(tmp_path: Path) -> None:
    """Ten releases at ε = 1/2 against a total of 1, with the two triggers of the
    review planted after the ledger was made: not one goes through."""
    path = str(tmp_path / "b.ledger")
    Ledger.init(path, 1)
    budget = Budget.from_ledger(path)
    _sql(
        path,
        "CREATE TRIGGER a BEFORE INSERT ON entries BEGIN SELECT RAISE(IGNORE); END",
        "CREATE TRIGGER b BEFORE UPDATE ON meta BEGIN SELECT RAISE(IGNORE); END",
    )
    src = ReplaySource([(1, 0.5)] * 10)
    for _ in range(10):
        with pytest.raises(LedgerError, match="trigger"):
            snapcore.release(
                "mean", DATA, epsilon=0.5, data_bounds=(0, 20), budget=budget, source=src
            )
    assert src.remaining == 10
    _sql(path, "DROP TRIGGER a", "DROP TRIGGER b")  # the owner removes them
    assert Ledger(path).spent == 0
    snapcore.release("mean", DATA, epsilon=0.5, data_bounds=(0, 20), budget=budget, source=src)
    assert Ledger(path).spent == Fraction(1, 2)


def test_expected_schema_is_what_sqlite_records(tmp_path: Path) -> None:
    """The schema a new ledger is compared with, read by an independent route: a
    fresh ledger's own sqlite_master (no other object, the SQL as written)."""
    path = str(tmp_path / "b.ledger")
    Ledger.init(path, 1)
    with sqlite3.connect(path) as conn:
        rows = set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    conn.close()
    assert rows == {
        ("table", "meta", "meta", "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"),
        ("index", "sqlite_autoindex_meta_1", "meta", None),
        ("table", "entries", "entries", _ENTRIES_SQL),
    }
    assert _ledger._expected_schema() == rows


def test_write_is_read_back_before_commit(ledger: Ledger, monkeypatch) -> None:
    """Should an object slip past the schema check, a spend that did not land as
    written is still rolled back and refused, never reported as recorded."""
    monkeypatch.setattr(_ledger, "_check_schema", lambda conn, path: None)
    _sql(
        ledger.path,
        "CREATE TRIGGER swallow BEFORE INSERT ON entries BEGIN SELECT RAISE(IGNORE); END",
    )
    before = Path(ledger.path).read_bytes()
    ran = []
    with (
        pytest.raises(LedgerError, match=r"records '2' entries but its history has 1"),
        ledger.reserve(Fraction(1, 8)),
    ):
        ran.append(True)
    assert ran == [] and Path(ledger.path).read_bytes() == before


def test_connection_settings_are_snapcore_s(ledger: Ledger) -> None:
    """Settings kept per connection cannot be planted in the file: each connection
    sets them.  Settings kept in the file are checked (journal mode, ids)."""
    conn = _ledger._connect(ledger.path)
    try:
        got = {
            p: conn.execute(f"PRAGMA {p}").fetchone()[0]
            for p in ("synchronous", "trusted_schema", "recursive_triggers", "foreign_keys")
        }
        assert got == {
            "synchronous": 2,  # FULL
            "trusted_schema": 0,
            "recursive_triggers": 0,
            "foreign_keys": 0,
        }
        assert [row[1] for row in conn.execute("PRAGMA database_list")] == ["main"]
    finally:
        conn.close()
    _sql(ledger.path, "PRAGMA journal_mode=WAL")
    with pytest.raises(LedgerError, match="journal mode is 'wal'"):
        ledger.spend(Fraction(1, 100))


def test_rollback_to_an_older_copy_refused_by_a_ledger_that_saw_more(
    tmp_path: Path,
) -> None:
    path = tmp_path / "b.ledger"
    led = Ledger.init(path, 1)
    led.spend(Fraction(1, 4), label="first")
    old = tmp_path / "old.copy"
    shutil.copyfile(path, old)
    led.spend(Fraction(1, 2), label="second")
    shutil.copyfile(old, path)  # a consistent file, digest and all, one entry shorter
    with pytest.raises(LedgerError, match="not a continuation of the 2 entries"):
        led.spend(Fraction(1, 2))
    with pytest.raises(LedgerError, match="not a continuation"):
        led.state()
    assert Path(path).read_bytes() == old.read_bytes()
    # The limit, as docs/embedding.md states it: the file alone cannot show that it
    # is an older copy, so a ledger opened afresh (another process) accepts it.
    assert Ledger(path).spent == Fraction(1, 4)


def test_rewritten_history_of_the_same_length_refused(tmp_path: Path) -> None:
    """Another file of the same length in place of the one read (the last entry
    replaced by a smaller one, consistently) is not a continuation either."""
    path, other = tmp_path / "b.ledger", tmp_path / "o.ledger"
    led = Ledger.init(path, 1)
    shutil.copyfile(path, other)
    led.spend(Fraction(1, 2), label="big")
    Ledger(other).spend(Fraction(1, 100), label="small")
    shutil.copyfile(other, path)
    with pytest.raises(LedgerError, match="not a continuation of the 1 entries"):
        led.spend(Fraction(1, 2))


def test_history_growing_elsewhere_is_accepted(ledger: Ledger) -> None:
    """Another process's spends extend the history; they are not a rollback."""
    Ledger(ledger.path).spend(Fraction(1, 4), label="elsewhere")
    ledger.spend(Fraction(1, 4), label="here")
    assert [e.label for e in ledger.entries] == ["first", "elsewhere", "here"]


@pytest.mark.parametrize("bad", [0, 0.0, Fraction(0), -1, Fraction(-1, 3)])
def test_zero_and_negative_spends_refused(ledger: Ledger, bad: object) -> None:
    before = Path(ledger.path).read_bytes()
    attempts = [
        lambda: ledger.spend(bad),
        lambda: ledger.reserve(bad).__enter__(),
        lambda: Budget.from_ledger(ledger.path).spend(bad),
        lambda: Budget(1).spend(bad),
    ]
    for attempt in attempts:
        with pytest.raises(ParameterError, match=r"epsilon must be a finite number > 0"):
            attempt()
    assert Path(ledger.path).read_bytes() == before
    assert len(ledger.entries) == 1


def test_spend_refusal_says_nothing_was_recorded(ledger: Ledger) -> None:
    """A spend records a release made elsewhere: when it is refused, the message does
    not claim that nothing was drawn; a reserve refused before its block does."""
    with pytest.raises(BudgetExceededError, match="nothing was recorded") as info:
        ledger.spend(1)
    assert "nothing was drawn" not in str(info.value)
    with pytest.raises(BudgetExceededError, match="nothing was drawn or spent"):
        ledger.reserve(1).__enter__()
    assert ledger.spent == Fraction(1, 4)


def test_anchor_kept_elsewhere_refuses_rollback_in_a_new_process(tmp_path: Path) -> None:
    """``(entries, digest)`` noted from an earlier state lets a fresh Ledger refuse an
    older copy, and accept the genuine, longer history."""
    path = tmp_path / "b.ledger"
    led = Ledger.init(path, 1)
    led.spend(Fraction(1, 4), label="first")
    old = tmp_path / "old.copy"
    shutil.copyfile(path, old)
    led.spend(Fraction(1, 2), label="second")
    st = led.state()
    anchor = (len(st.entries), st.digest)
    led.spend(Fraction(1, 8), label="third")
    assert Ledger(path, seen=anchor).spent == Fraction(7, 8)  # extends the anchor
    shutil.copyfile(old, path)
    with pytest.raises(LedgerError, match="not a continuation of the 2 entries"):
        Ledger(path, seen=anchor)
    with pytest.raises(LedgerError, match="not a continuation of the 1 entries"):
        Ledger(path, seen=(1, anchor[1]))  # the digest after 2 entries is not the one after 1
    for bad in ((2,), (2, "x"), (-1, st.digest), (True, st.digest), [2, st.digest], "ab"):
        with pytest.raises(ParameterError, match="seen must be a pair"):
            Ledger(path, seen=bad)


def test_object_planted_during_a_release_is_not_run_by_the_status_update(
    ledger: Ledger,
) -> None:
    """A trigger planted while a release runs (after its spend was committed) would
    run on the status update: the update is not made, the spend stays, and the next
    open refuses the file."""
    with (
        pytest.warns(RuntimeWarning, match="could not be marked 'completed'"),
        ledger.reserve(Fraction(1, 4), label="running"),
    ):
        _sql(
            ledger.path,
            "CREATE TRIGGER wipe AFTER UPDATE ON entries BEGIN DELETE FROM entries; END",
        )
    with sqlite3.connect(ledger.path) as conn:
        rows = conn.execute("SELECT label, status FROM entries ORDER BY id").fetchall()
    conn.close()
    assert rows == [("first", "completed"), ("running", "committed")]
    with pytest.raises(LedgerError, match="trigger 'wipe' on 'entries'"):
        Ledger(ledger.path)


# ----------------------------------------------------------------------------------
# Approximate-DP ledgers: the same checks, over the schema with its curves table
# ----------------------------------------------------------------------------------

_CURVES_SQL = "CREATE TABLE curves (id INTEGER PRIMARY KEY, curve TEXT NOT NULL)"


@pytest.fixture
def approx(tmp_path: Path) -> Ledger:
    led = Ledger.init(tmp_path / "a.ledger", 2, delta=Fraction(1, 10**6))
    led.spend(Fraction(1, 4), label="first", curve="snapping")
    return led


def _master(path: str) -> set[tuple[str, str, str, str | None]]:
    conn = sqlite3.connect(path)
    try:
        return set(conn.execute("SELECT type, name, tbl_name, sql FROM sqlite_master"))
    finally:
        conn.close()


def test_expected_approx_schema_is_what_sqlite_records(tmp_path: Path) -> None:
    """An approximate ledger's schema, read from a fresh file: the pure ledger's
    objects and the curves table, nothing else; and the one each mode expects."""
    pure, approx = str(tmp_path / "p.ledger"), str(tmp_path / "a.ledger")
    Ledger.init(pure, 1)
    Ledger.init(approx, 1, delta=1e-6)
    assert _master(approx) == _master(pure) | {("table", "curves", "curves", _CURVES_SQL)}
    assert _ledger._expected_schema(True) == _master(approx)
    assert _ledger._expected_schema(False) == _master(pure)


# Objects planted on the curves table, on top of every plant of PLANTS.
APPROX_PLANTS = {
    **PLANTS,
    "trigger swallowing curves": (
        ("CREATE TRIGGER nocurve BEFORE INSERT ON curves BEGIN SELECT RAISE(IGNORE); END",),
        "trigger 'nocurve' on 'curves'",
    ),
    "trigger rewriting curves": (
        (
            "CREATE TRIGGER pure AFTER INSERT ON curves BEGIN "
            "UPDATE curves SET curve = 'pure:0/1' WHERE id = new.id; END",
        ),
        "trigger 'pure' on 'curves'",
    ),
    "index on curves": (("CREATE INDEX by_curve ON curves (curve)",), "index 'by_curve'"),
    "column added to curves": (
        ("ALTER TABLE curves ADD COLUMN extra TEXT",),
        "table 'curves' is not defined as a ledger defines it",
    ),
}


@pytest.mark.parametrize("plant", list(APPROX_PLANTS))
def test_planted_object_refused_on_an_approx_ledger(approx: Ledger, plant: str) -> None:
    statements, named = APPROX_PLANTS[plant]
    budget = Budget.from_ledger(approx.path)  # opened before the plant
    assert isinstance(budget, LedgerApproxBudget)
    _sql(approx.path, *statements)
    src = ReplaySource([(1, 0.5)])
    _assert_refused_untouched(
        approx,
        named,
        src,
        lambda: Ledger(approx.path),
        lambda: Budget.from_ledger(approx.path),
        lambda: approx.state(),
        lambda: approx.spend(Fraction(1, 100), curve="snapping"),
        lambda: approx.reserve(Fraction(1, 100)).__enter__(),
        lambda: budget.remaining,
        lambda: snapcore.release(
            "mean", DATA, epsilon=0.5, data_bounds=(0, 20), budget=budget, source=src
        ),
    )


def _assert_open_and_spend_refused(led: Ledger, named: str) -> None:
    """Opening, spending from and budgeting on ``led`` are each refused naming ``named``,
    and leave its folder byte for byte as it was."""
    before = _files(Path(led.path).parent)
    for attempt in (
        lambda: Ledger(led.path),
        lambda: led.spend(Fraction(1, 100)),
        lambda: Budget.from_ledger(led.path),
    ):
        with pytest.raises(LedgerError, match=named):
            attempt()
    assert _files(Path(led.path).parent) == before


@pytest.mark.parametrize("with_mode", [False, True])
def test_pure_ledger_with_a_curves_table_refused(ledger: Ledger, with_mode: bool) -> None:
    """A curves table planted in a pure ledger (exactly as an approximate ledger
    defines it) is refused; declaring the mode in meta as well, to turn the file into
    an approximate ledger charged by a looser curve, fails its digest."""
    statements = [_CURVES_SQL, "INSERT INTO curves VALUES (1, 'pure:1/4')"]
    if with_mode:
        statements += [
            "INSERT INTO meta VALUES ('delta', '1/2')",
            "INSERT INTO meta VALUES ('accountant', 'pld')",
        ]
    named = "digest" if with_mode else "table 'curves' that a pure-epsilon ledger does not"
    _sql(ledger.path, *statements)
    _assert_open_and_spend_refused(ledger, named)


@pytest.mark.parametrize("keep_mode", [True, False])
def test_approx_ledger_without_its_curves_table_refused(approx: Ledger, keep_mode: bool) -> None:
    """Dropping the curves table is refused; dropping the mode from meta too (to pass
    as a pure ledger charged by the sum) fails the digest, which records the mode."""
    statements = ["DROP TABLE curves"]
    if not keep_mode:
        statements.append("DELETE FROM meta WHERE key IN ('delta', 'accountant')")
    named = "table 'curves' is missing" if keep_mode else "digest"
    _sql(approx.path, *statements)
    _assert_open_and_spend_refused(approx, named)


def test_approx_ledger_rolled_back_to_an_older_copy_refused(tmp_path: Path) -> None:
    path = tmp_path / "a.ledger"
    led = Ledger.init(path, 2, delta=Fraction(1, 10**6))
    led.spend(Fraction(1, 4), label="first", curve="snapping")
    old = tmp_path / "old.copy"
    shutil.copyfile(path, old)
    led.spend(Fraction(1, 2), label="second", curve="snapping")
    st = led.state()
    anchor = (len(st.entries), st.digest)
    shutil.copyfile(old, path)  # consistent, digest and curves, one entry shorter
    for attempt in (
        lambda: led.spend(Fraction(1, 2), curve="snapping"),
        lambda: led.state(),
        lambda: Ledger(path, seen=anchor),
    ):
        with pytest.raises(LedgerError, match="not a continuation of the 2 entries"):
            attempt()
    assert Path(path).read_bytes() == old.read_bytes()
    assert Ledger(path).spent == Fraction(1, 4)  # a fresh reader cannot tell (documented)


def test_approx_history_with_another_curve_is_not_a_continuation(tmp_path: Path) -> None:
    """The anchor covers each entry's curve: the same ε recorded under a different
    curve, consistently, is another history."""
    path, other = tmp_path / "a.ledger", tmp_path / "o.ledger"
    led = Ledger.init(path, 2, delta=Fraction(1, 10**6))
    shutil.copyfile(path, other)
    led.spend(Fraction(1, 2), label="x", curve="pure")
    Ledger(other).spend(Fraction(1, 2), label="x", curve="snapping")
    shutil.copyfile(other, path)
    with pytest.raises(LedgerError, match="not a continuation of the 1 entries"):
        led.state()


@pytest.mark.parametrize("table", ["entries", "curves"])
def test_approx_write_is_read_back_before_commit(
    approx: Ledger, monkeypatch: pytest.MonkeyPatch, table: str
) -> None:
    """Should an object slip past the schema check, an approximate spend whose entry
    or curve did not land as written is rolled back and refused before its block."""
    monkeypatch.setattr(_ledger, "_check_schema", lambda conn, path: None)
    _sql(
        approx.path,
        f"CREATE TRIGGER swallow BEFORE INSERT ON {table} BEGIN SELECT RAISE(IGNORE); END",
    )
    before = Path(approx.path).read_bytes()
    ran = []
    with (
        pytest.raises(LedgerError, match="not modified"),
        approx.reserve(Fraction(1, 8), curve="snapping"),
    ):
        ran.append(True)
    assert ran == [] and Path(approx.path).read_bytes() == before


def test_approx_write_rewritten_in_place_is_refused_before_commit(
    approx: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A curve rewritten as it is written (a looser one recorded) fails the read-back."""
    monkeypatch.setattr(_ledger, "_check_schema", lambda conn, path: None)
    _sql(
        approx.path,
        "CREATE TRIGGER loosen AFTER INSERT ON curves BEGIN "
        "UPDATE curves SET curve = 'snapping:1/8' WHERE id = new.id; END",
    )
    before = Path(approx.path).read_bytes()
    with pytest.raises(LedgerError, match="not modified"):
        approx.spend(Fraction(1, 8), curve="pure")
    assert Path(approx.path).read_bytes() == before
