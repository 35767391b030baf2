"""Calibrated quanta kept in the process and across processes (snapcore.padding._quanta).

A quantum is measured on public, synthetic inputs; the store only saves the command
line from measuring it again on every run.  These tests check that a stored quantum is
reused instead of measured, that stale entries, entries of another machine and keys
that are not stable across processes are measured afresh, that a damaged or unusable
store never breaks a release, and that the command line uses the store it is given.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from snapcore.mechanism import _padding as mechanism_padding
from snapcore.padding import _pad, _quanta
from snapcore.releases import _padding as statistic_padding


@pytest.fixture(autouse=True)
def _fresh_caches() -> Iterator[None]:
    _quanta.clear_caches()
    yield
    _quanta.clear_caches()


def _floor_mode() -> bool:
    return bool(getattr(_pad._FLOOR, "on", False))


def _compute(q: int | None, floor: int | None) -> Callable[[], int]:
    """A stand-in for a calibration: ``q`` when measuring a quantum (None: must not be
    measured), ``floor`` when measuring the floor a stored quantum is checked against
    (None: ``q``)."""

    def compute() -> int:
        if _floor_mode():
            if floor is None and q is None:
                raise AssertionError("no floor given")
            return q if floor is None else floor  # type: ignore[return-value]
        if q is None:
            raise AssertionError("measured although the store holds a fresh quantum")
        return q

    return compute


def _get_in(
    store: _quanta.QuantaStore, key: object, q: int | None = None, floor: int | None = None
) -> int:
    """What the scalar cache returns for ``key`` in a fresh process within ``store``
    (``q``: what a measurement gives; ``floor``: what a floor measurement gives)."""
    _quanta.clear_caches()
    with _quanta.quanta_store(store):
        return _quanta.SCALAR_QUANTA.get(key, _compute(q, floor))


def test_a_stored_quantum_is_reused_instead_of_measured(tmp_path: Path) -> None:
    store = _quanta.QuantaStore(tmp_path / "q.sqlite3")
    assert _get_in(store, ("cal", float), 123_456) == 123_456
    # A "new process" (empty in-process cache): the store answers, nothing is measured
    # (only its floor, which it lies above).
    assert _get_in(store, ("cal", float), floor=100_000) == 123_456
    # Another key is measured and stored on its own.
    assert _get_in(store, ("cal", int), 7) == 7
    assert _get_in(store, ("cal", float), floor=100_000) == 123_456


def test_the_three_caches_do_not_share_keys(tmp_path: Path) -> None:
    store = _quanta.QuantaStore(tmp_path / "q.sqlite3")
    with _quanta.quanta_store(store):
        assert _quanta.SCALAR_QUANTA.get("k", lambda: 11) == 11
        assert _quanta.ARRAY_QUANTA.get("k", lambda: 22) == 22
        assert _quanta.STATISTIC_QUANTA.get("k", lambda: 33) == 33
    _quanta.clear_caches()
    with _quanta.quanta_store(store):
        assert _quanta.ARRAY_QUANTA.get("k", _compute(None, 20)) == 22
        assert _quanta.STATISTIC_QUANTA.get("k", _compute(None, 30)) == 33


def test_stale_entries_are_measured_again(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    assert _get_in(_quanta.QuantaStore(path), "k", 5) == 5
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE quanta SET measured_at = measured_at - 7200")
    con.close()
    # One hour by default: a two-hour-old quantum is measured again (and replaced).
    assert _get_in(_quanta.QuantaStore(path), "k", 9) == 9
    assert _get_in(_quanta.QuantaStore(path), "k", floor=9) == 9
    # A store with max_age 0 never reuses anything.
    assert _get_in(_quanta.QuantaStore(path, max_age_s=0.0), "k", 4) == 4


def test_entries_of_another_machine_are_not_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "q.sqlite3"
    assert _get_in(_quanta.QuantaStore(path), "k", 5) == 5
    monkeypatch.setattr(_quanta, "machine_fingerprint", lambda: "another host|another cpu")
    assert _get_in(_quanta.QuantaStore(path), "k", 8) == 8


def test_keys_that_print_an_address_are_never_stored(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    key = ("statistic", object())  # repr holds "at 0x...": differs in every process
    assert _get_in(_quanta.QuantaStore(path), "plain", 4) == 4
    assert _get_in(_quanta.QuantaStore(path), key, 5) == 5
    con = sqlite3.connect(path)
    assert con.execute("SELECT key FROM quanta").fetchall() == [(repr(("scalar", "plain")),)]
    con.close()


@pytest.mark.parametrize("damage", ["garbage", "directory", "wrong table"])
def test_an_unusable_store_falls_back_to_measuring(tmp_path: Path, damage: str) -> None:
    path = tmp_path / "q.sqlite3"
    if damage == "garbage":
        path.write_bytes(b"not a database at all" * 100)
    elif damage == "directory":
        path.mkdir()
    else:
        con = sqlite3.connect(path)
        con.execute("CREATE TABLE quanta (x)")
        con.close()
    store = _quanta.QuantaStore(path)
    assert _get_in(store, "k", 6) == 6
    assert _get_in(store, "k", 7) == 7  # nothing was stored, nothing raised


def test_the_file_is_private_to_its_owner(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "q.sqlite3"
    _get_in(_quanta.QuantaStore(path), "k", 5)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_the_store_is_used_only_within_its_block(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    with _quanta.quanta_store(path):
        with _quanta.quanta_store(None):
            _quanta.SCALAR_QUANTA.get("inner", lambda: 1)
        _quanta.SCALAR_QUANTA.get("outer", lambda: 2)
    _quanta.SCALAR_QUANTA.get("after", lambda: 3)
    con = sqlite3.connect(path)
    keys = [r[0] for r in con.execute("SELECT key FROM quanta")]
    con.close()
    assert keys == [repr(("scalar", "outer"))]


def test_the_command_line_keeps_quanta_in_the_named_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from snapcore.cli import main

    path = tmp_path / "quanta.sqlite3"
    monkeypatch.setenv("SNAPCORE_TIMING_STORE", str(path))
    args = ["release", "mean", "--column", "age", "--data-bounds", "0", "100", "-e", "1"]
    first = CliRunner().invoke(main, args)
    assert first.exit_code == 0, first.output
    con = sqlite3.connect(path)
    kinds = {r[0].split("'")[1] for r in con.execute("SELECT key FROM quanta")}
    con.close()
    assert {"scalar", "statistic"} <= kinds
    measured: list[int] = []
    real = _pad.calibrate_quantum

    def counting(*a: object, **k: object) -> int:
        if not _floor_mode():  # a stored quantum's floor is measured, not its quantum
            measured.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    # Both callers: the mechanism's quanta and the statistic's.
    monkeypatch.setattr(mechanism_padding, "calibrate_quantum", counting)
    monkeypatch.setattr(statistic_padding, "calibrate_quantum", counting)
    # Each stored quantum is checked against a floor measured in the process; on a
    # machine whose speed changes, that floor may come out above a quantum stored in a
    # faster moment (then the quantum is measured again, as the tests of the range above check).
    # Here the check is recorded and passes, whatever the machine's speed.
    checked: list[tuple[int, int]] = []

    def accept(quantum_ns: int, floor_ns: int) -> bool:
        checked.append((quantum_ns, floor_ns))
        return True

    monkeypatch.setattr(_quanta, "in_range", accept)
    # A second run (a fresh process, as far as the cache goes) measures nothing.
    _quanta.clear_caches()
    second = CliRunner().invoke(main, args)
    assert second.exit_code == 0, second.output
    assert measured == []
    assert len(checked) >= 2  # the stored scalar and statistic quanta, each checked
    # With the store off, a fresh process measures its quanta again.
    _quanta.clear_caches()
    monkeypatch.setenv("SNAPCORE_TIMING_STORE", "off")
    third = CliRunner().invoke(main, args)
    assert third.exit_code == 0, third.output
    assert len(measured) >= 2  # the mechanism's scalar quantum and the statistic's


def test_equal_keys_are_interned_once() -> None:
    key = ("calibration", "mpfr", "SystemSource")
    a, b = _quanta.intern_key(key), _quanta.intern_key(tuple(key))
    assert a is b and a == _quanta.InternedKey(key) and hash(a) == hash(key)


def test_a_forked_child_gets_new_locks() -> None:
    """A lock held at the fork by another thread (which the child does not have) would
    never be released: the child replaces every lock of the caches and counters."""
    caches = (_quanta.SCALAR_QUANTA, _quanta.ARRAY_QUANTA, _quanta.STATISTIC_QUANTA)
    held = [c._lock for c in caches] + [_quanta.statistic_stats()._lock, _quanta._INTERN_LOCK]
    for lock in held:
        lock.acquire()
    try:
        _quanta._after_fork_in_child()
        _pad._after_fork_in_child()  # the statistic counters' hook (every PaddingStats)
        for c in caches:
            assert c.get("after the fork", lambda: 5) == 5
        _quanta.statistic_stats().count()
        assert _quanta.intern_key("after the fork") is _quanta.intern_key("after the fork")
    finally:
        for lock in held:
            lock.release()


# -- an untrusted store: every problem is a miss, with a warning naming it -------------
def _stored(path: Path, key: object, q: int) -> None:
    """Write ``q`` for scalar ``key`` through the store, as an honest run would."""
    assert _get_in(_quanta.QuantaStore(path), key, q) == q


def _set(path: Path, sql: str) -> None:
    con = sqlite3.connect(path)
    with con:
        con.execute(sql)
    con.close()


@pytest.mark.parametrize(
    ("stored", "floor", "used"),
    [
        (1, 10_000, False),  # 1 ns: would switch the padding off
        (9_999, 10_000, False),  # just below the floor
        (10_000, 10_000, True),  # at the floor
        (_quanta.STORE_CEILING * 10_000, 10_000, True),  # at the ceiling
        (_quanta.STORE_CEILING * 10_000 + 1, 10_000, False),  # just above it
        (4 * 10**9, 10_000, False),  # every release would wait 4 s
        (10**18, 10_000, False),  # would hang
    ],
)
def test_a_stored_quantum_is_used_only_between_its_floor_and_ceiling(
    tmp_path: Path, stored: int, floor: int, used: bool
) -> None:
    path = tmp_path / "q.sqlite3"
    _stored(path, "k", 12_345)
    _set(path, f"UPDATE quanta SET quantum_ns = {stored}")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = _get_in(_quanta.QuantaStore(path), "k", 20_000, floor=floor)
    texts = [str(w.message).removeprefix(f"timing quanta store {path}: ") for w in caught]
    assert got == (stored if used else 20_000)
    assert len([t for t in texts if "out of range" in t]) == len(texts) == (0 if used else 1)
    assert all(str(stored) not in t for t in texts)  # never the value
    if not used:  # the miss was measured again and replaces the bad entry
        assert _get_in(_quanta.QuantaStore(path), "k", floor=20_000) == 20_000


@pytest.mark.parametrize(
    ("sql", "problem"),
    [
        ("UPDATE quanta SET quantum_ns = 'x17'", "damaged"),
        ("UPDATE quanta SET quantum_ns = 1.5e4", "damaged"),
        ("UPDATE quanta SET quantum_ns = -5", "below one nanosecond"),
        ("UPDATE quanta SET measured_at = 'yesterday'", "damaged"),
        ("UPDATE quanta SET measured_at = measured_at + 86400", "future"),
    ],
)
def test_a_damaged_entry_is_a_miss_with_a_warning(tmp_path: Path, sql: str, problem: str) -> None:
    path = tmp_path / "q.sqlite3"
    _stored(path, "k", 12_345)
    _set(path, sql)
    with pytest.warns(RuntimeWarning, match=problem):
        assert _get_in(_quanta.QuantaStore(path), "k", 777, floor=700) == 777


def test_a_store_with_another_schema_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    _set(
        path,
        "CREATE TABLE quanta (key TEXT PRIMARY KEY, fingerprint TEXT, quantum_ns TEXT, "
        "measured_at REAL)",
    )
    with pytest.warns(RuntimeWarning, match="another schema"):
        assert _get_in(_quanta.QuantaStore(path), "k", 5) == 5
    con = sqlite3.connect(path)
    assert con.execute("SELECT count(*) FROM quanta").fetchone() == (0,)  # nothing written
    con.close()


def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real.sqlite3"
    _stored(real, "k", 12_345)
    link = tmp_path / "q.sqlite3"
    link.symlink_to(real)
    before = real.read_bytes()
    with pytest.warns(RuntimeWarning, match="symbolic link"):
        assert _get_in(_quanta.QuantaStore(link), "k", 6) == 6
    assert real.read_bytes() == before  # neither read nor written through the link


def test_a_linked_directory_is_not_followed(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    _stored(real / "q.sqlite3", "k", 12_345)
    (tmp_path / "linked").symlink_to(real)
    with pytest.warns(RuntimeWarning, match="directory is a symbolic link"):
        assert _get_in(_quanta.QuantaStore(tmp_path / "linked" / "q.sqlite3"), "k", 6) == 6


@pytest.mark.parametrize(("target", "mode"), [("file", 0o620), ("file", 0o606), ("dir", 0o770)])
def test_a_store_writable_by_others_is_not_used(tmp_path: Path, target: str, mode: int) -> None:
    folder = tmp_path / "d"
    folder.mkdir(mode=0o700)
    path = folder / "q.sqlite3"
    _stored(path, "k", 12_345)
    os.chmod(path if target == "file" else folder, mode)
    with pytest.warns(RuntimeWarning, match="writable by group or others"):
        assert _get_in(_quanta.QuantaStore(path), "k", 6) == 6
    _set(path, "SELECT 1")
    con = sqlite3.connect(path)
    assert con.execute("SELECT quantum_ns FROM quanta").fetchall() == [(12_345,)]  # unchanged
    con.close()


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs chown")
def test_a_store_of_another_user_is_not_used(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    _stored(path, "k", 12_345)
    os.chown(path, 4242, -1)
    with pytest.warns(RuntimeWarning, match="another user"):
        assert _get_in(_quanta.QuantaStore(path), "k", 6) == 6


def test_the_store_is_checked_when_its_block_is_entered(tmp_path: Path) -> None:
    """A problem with the file is found on entry, before any release in the block."""
    path = tmp_path / "q.sqlite3"
    path.write_bytes(b"damaged" * 200)
    with pytest.warns(RuntimeWarning, match="cannot be opened"), _quanta.quanta_store(path):
        pass


def test_a_quantum_calibrated_while_a_floor_is_measured_is_a_quantum() -> None:
    """A statistic's floor runs synthetic releases, which may calibrate their
    mechanism's quanta: those are quanta, not floors."""
    with _pad.measuring_floor():
        assert _quanta.SCALAR_QUANTA.get("inner", _compute(50, 5)) == 50
        assert _floor_mode()  # restored
    assert _quanta.SCALAR_QUANTA.get("inner", _compute(None, None)) == 50  # kept
