"""The budget ledger: exact durable accounting, write-ahead, races, corruption refused."""

from __future__ import annotations

import os
import sqlite3
import sys
from fractions import Fraction
from pathlib import Path

import ledger_workers
import pytest

import snapcore
from snapcore import Budget, BudgetExceededError, ReplaySource
from snapcore.errors import LedgerError, ParameterError
from snapcore.releases._budget import LedgerBudget
from snapcore.releases._ledger import Ledger

DATA = [float(v) for v in range(20)]


def _files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    led = Ledger.init(tmp_path / "b.ledger", 1)
    led.spend(Fraction(1, 3), label="first")
    led.spend(0.1, label="second")  # the double 0.1, exactly
    return led


def test_exact_accounting_and_history(ledger: Ledger) -> None:
    third, tenth = Fraction(1, 3), Fraction(0.1)
    st = ledger.state()
    assert st.total == 1 and st.spent == third + tenth and st.remaining == 1 - third - tenth
    assert [(e.index, e.label, e.epsilon, e.cumulative, e.status) for e in st.entries] == [
        (1, "first", third, third, "completed"),
        (2, "second", tenth, third + tenth, "completed"),
    ]
    # Stored as exact text p/q, read back by an independent reader.
    with sqlite3.connect(ledger.path) as conn:
        meta = dict(conn.execute("SELECT key, value FROM meta"))
        rows = conn.execute("SELECT epsilon FROM entries ORDER BY id").fetchall()
    assert meta["spent"] == f"{(third + tenth).numerator}/{(third + tenth).denominator}"
    assert rows[0][0] == "1/3" and Fraction(rows[1][0]) == Fraction(0.1)
    with pytest.raises(BudgetExceededError, match="nothing was recorded"):
        ledger.spend(1 - third - tenth + Fraction(1, 10**40))
    ledger.spend(1 - third - tenth)
    assert ledger.remaining == 0 and len(ledger.entries) == 3


def test_budget_from_ledger_refuses_before_drawing(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    Ledger.init(path, Fraction(1, 2))
    b = Budget.from_ledger(path)
    assert isinstance(b, Budget) and isinstance(b, LedgerBudget) and b.total == Fraction(1, 2)
    src = ReplaySource([(1, 0.5)])
    with pytest.raises(BudgetExceededError):
        snapcore.release("mean", DATA, epsilon=1, data_bounds=(0, 20), budget=b, source=src)
    assert src.remaining == 1 and b.spent == 0 and b.history == ()
    # Bad input is refused before the ledger is touched.
    with pytest.raises(ParameterError):
        snapcore.release("mean", [*DATA, float("nan")], epsilon=0.5, data_bounds=(0, 1), budget=b)
    assert Ledger(path).entries == ()
    r = snapcore.release("mean", DATA, epsilon=0.5, data_bounds=(0, 20), budget=b, source=src)
    assert r.epsilon_spent == Fraction(1, 2) and src.remaining == 0
    assert b.remaining == 0 and b.history == (("mean", Fraction(1, 2)),)
    # A second Budget on the same file sees the spend.
    assert Budget.from_ledger(path).spent == Fraction(1, 2)


def test_no_refund_after_commit(tmp_path: Path) -> None:
    led = Ledger.init(tmp_path / "b.ledger", 2)
    b = LedgerBudget(led)
    # A histogram of 3 bins needs 3 draws; the source has 2 and claims it can serve
    # them all (a source failing mid-release, as a broken device would): it fails after
    # the ledger commit and after drawing.

    class Failing(ReplaySource):
        def can_draw(self, count: int, precision: int) -> bool:
            return True

    src = Failing([(1, 0.5), (-1, 0.25)])
    with pytest.raises(snapcore.SourceExhaustedError):
        snapcore.release("histogram", DATA, epsilon=1, bins=[0, 5, 10, 20], budget=b, source=src)
    (entry,) = led.entries
    assert entry.epsilon == 1 and entry.status == "failed" and led.remaining == 1
    with pytest.raises(RuntimeError), b.reserve(Fraction(1, 2), label="x"):
        assert led.state().entries[-1].status == "committed"  # on disk before the block
        raise RuntimeError("boom")
    assert led.spent == Fraction(3, 2)


def test_init_refuses_to_overwrite_and_bad_totals(tmp_path: Path) -> None:
    path = tmp_path / "b.ledger"
    path.write_bytes(b"keep me")
    with pytest.raises(LedgerError, match="already exists"):
        Ledger.init(path, 1)
    assert path.read_bytes() == b"keep me"
    for bad in (0, -1, float("nan"), float("inf"), "1"):
        with pytest.raises(ParameterError, match="total_epsilon"):
            Ledger.init(tmp_path / "c.ledger", bad)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.ledger"]
    with pytest.raises(LedgerError, match="cannot be created"):
        Ledger.init(tmp_path / "no such folder" / "b.ledger", 1)
    with pytest.raises(LedgerError, match="does not exist"):
        Ledger(tmp_path / "missing.ledger")
    assert not (tmp_path / "missing.ledger").exists()  # never created by opening


def _tamper_sql(path: str, *statements: str) -> None:
    with sqlite3.connect(path) as conn:
        for s in statements:
            conn.execute(s)
    conn.close()


def _truncate(cut: int):
    def go(path: str) -> None:
        with open(path, "r+b") as fh:
            fh.truncate(cut if cut >= 0 else os.path.getsize(path) + cut)

    return go


def _garbage_at(offset: int):
    def go(path: str) -> None:
        with open(path, "r+b") as fh:
            fh.seek(offset if offset >= 0 else os.path.getsize(path) + offset)
            fh.write(bytes(range(7, 250, 3)))

    return go


def _replace_all(path: str) -> None:
    Path(path).write_bytes(os.urandom(4096))


CORRUPTIONS = {
    "truncated to 0": (_truncate(0), "empty"),
    "truncated to 100": (_truncate(100), "not a readable"),
    "truncated by one page": (_truncate(-4096), "not a readable|size"),
    "truncated by one byte": (_truncate(-1), "truncated"),
    "garbage header": (_garbage_at(0), "not a readable"),
    "garbage in the meta cells": (
        _garbage_at(2 * 4096 - 100),
        "integrity|not a readable|malformed",
    ),
    "garbage at the end": (_garbage_at(-100), "integrity|not a readable|malformed|entry"),
    "random bytes": (_replace_all, "not a readable"),
    "tampered spent total": (
        lambda p: _tamper_sql(p, "UPDATE meta SET value = '1/4' WHERE key = 'spent'"),
        "stored spent total",
    ),
    "tampered entry": (
        lambda p: _tamper_sql(p, "UPDATE entries SET epsilon = '1/100' WHERE id = 2"),
        "running total",
    ),
    "tampered entry and totals": (
        lambda p: _tamper_sql(
            p,
            "UPDATE entries SET epsilon = '0/1', cumulative = '0/1' WHERE id = 1",
        ),
        "running total",
    ),
    "deleted entry": (
        lambda p: _tamper_sql(p, "DELETE FROM entries WHERE id = 2"),
        "records '2' entries",
    ),
    "raised total": (
        lambda p: _tamper_sql(p, "UPDATE meta SET value = '1/3' WHERE key = 'total'"),
        "more than its total",
    ),
    "non-canonical fraction": (
        lambda p: _tamper_sql(p, "UPDATE meta SET value = '2/2' WHERE key = 'total'"),
        "lowest terms",
    ),
    "schema version": (lambda p: _tamper_sql(p, "PRAGMA user_version = 2"), "schema version"),
    "meta schema version": (
        lambda p: _tamper_sql(p, "UPDATE meta SET value = '2' WHERE key = 'schema_version'"),
        "schema version",
    ),
    "raised total, consistently": (
        lambda p: _tamper_sql(p, "UPDATE meta SET value = '2/1' WHERE key = 'total'"),
        "digest",
    ),
    "history rewritten consistently": (
        lambda p: _tamper_sql(
            p,
            "UPDATE entries SET epsilon = '1/10', cumulative = '13/30' WHERE id = 2",
            "UPDATE meta SET value = '13/30' WHERE key = 'spent'",
        ),
        "digest",
    ),
    "label rewritten": (
        lambda p: _tamper_sql(p, "UPDATE entries SET label = 'other' WHERE id = 1"),
        "digest",
    ),
    "not a ledger": (lambda p: _tamper_sql(p, "PRAGMA application_id = 0"), "application id"),
}


@pytest.mark.parametrize("how", list(CORRUPTIONS))
def test_corrupt_ledger_refused_and_untouched(ledger: Ledger, how: str) -> None:
    damage, message = CORRUPTIONS[how]
    damage(ledger.path)
    folder = Path(ledger.path).parent
    before = _files(folder)
    for attempt in (
        lambda: Ledger(ledger.path),
        lambda: Budget.from_ledger(ledger.path),
        lambda: ledger.spend(Fraction(1, 100)),
        lambda: LedgerBudget(ledger).remaining,
    ):
        with pytest.raises(LedgerError, match=message) as info:
            attempt()
        assert "not modified" in str(info.value)
    assert _files(folder) == before  # byte for byte, and no journal or new file


def test_processes_racing_cannot_overspend(tmp_path: Path) -> None:
    # 8 processes race for a ledger that allows 5 releases of 1/5 (exactly 1 in all).
    path = str(tmp_path / "race.ledger")
    Ledger.init(path, 1)
    racers = 8
    outcomes, released = ledger_workers.run_race(path, racers, Fraction(1, 5), timeout=120)
    assert len(released) == 5 and len(outcomes) == racers
    st = Ledger(path).state()
    assert st.spent == 1 and st.remaining == 0  # exact: five times 1/5
    assert sorted(e.pid for e in st.entries) == sorted(released)
    assert all(e.status == "completed" and e.epsilon == Fraction(1, 5) for e in st.entries)


@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_killed_release_stays_spent(tmp_path: Path) -> None:
    path = str(tmp_path / "kill.ledger")
    Ledger.init(path, 1)
    pids = ledger_workers.run_killed(path, str(tmp_path))
    st = Ledger(path).state()  # still a valid ledger: no half-written transaction
    assert len(st.entries) == 3 and st.spent == Fraction(3, 4)
    assert all(e.status == "committed" for e in st.entries)  # never completed
    assert {e.pid for e in st.entries} == pids
    with pytest.raises(BudgetExceededError):
        Ledger(path).spend(Fraction(1, 4) + Fraction(1, 10**30))
