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
from collections.abc import Iterator
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


def _never() -> int:
    raise AssertionError("measured although the store holds a fresh quantum")


def _get_in(store: _quanta.QuantaStore, key: object, q: int | None = None) -> int:
    """What the scalar cache returns for ``key`` in a fresh process within ``store``."""
    _quanta.clear_caches()
    with _quanta.quanta_store(store):
        return _quanta.SCALAR_QUANTA.get(key, _never if q is None else (lambda: q))


def test_a_stored_quantum_is_reused_instead_of_measured(tmp_path: Path) -> None:
    store = _quanta.QuantaStore(tmp_path / "q.sqlite3")
    assert _get_in(store, ("cal", float), 123_456) == 123_456
    # A "new process" (empty in-process cache): the store answers, nothing is measured.
    assert _get_in(store, ("cal", float)) == 123_456
    # Another key is measured and stored on its own.
    assert _get_in(store, ("cal", int), 7) == 7
    assert _get_in(store, ("cal", float)) == 123_456


def test_the_three_caches_do_not_share_keys(tmp_path: Path) -> None:
    store = _quanta.QuantaStore(tmp_path / "q.sqlite3")
    with _quanta.quanta_store(store):
        assert _quanta.SCALAR_QUANTA.get("k", lambda: 11) == 11
        assert _quanta.ARRAY_QUANTA.get("k", lambda: 22) == 22
        assert _quanta.STATISTIC_QUANTA.get("k", lambda: 33) == 33
    _quanta.clear_caches()
    with _quanta.quanta_store(store):
        assert _quanta.ARRAY_QUANTA.get("k", _never) == 22
        assert _quanta.STATISTIC_QUANTA.get("k", _never) == 33


def test_stale_entries_are_measured_again(tmp_path: Path) -> None:
    path = tmp_path / "q.sqlite3"
    assert _get_in(_quanta.QuantaStore(path), "k", 5) == 5
    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE quanta SET measured_at = measured_at - 7200")
    con.close()
    # One hour by default: a two-hour-old quantum is measured again (and replaced).
    assert _get_in(_quanta.QuantaStore(path), "k", 9) == 9
    assert _get_in(_quanta.QuantaStore(path), "k") == 9
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
        measured.append(1)
        return real(*a, **k)  # type: ignore[arg-type]

    # Both callers: the mechanism's quanta and the statistic's.
    monkeypatch.setattr(mechanism_padding, "calibrate_quantum", counting)
    monkeypatch.setattr(statistic_padding, "calibrate_quantum", counting)
    # A second run (a fresh process, as far as the cache goes) measures nothing.
    _quanta.clear_caches()
    second = CliRunner().invoke(main, args)
    assert second.exit_code == 0, second.output
    assert measured == []
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
    held = [c._lock for c in caches] + [_quanta.statistic_stats()._lock]
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
