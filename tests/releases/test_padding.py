"""The padding of a statistic's whole release (snapcore.releases._padding).

A statistic's release is padded to a quantum that depends on the statistic, its public
parameters and the public n only, calibrated on synthetic data of that shape; a
statistic that cannot be calibrated, or a release above the default's size, says so in
its notes.  Whether time still leaks is measured by ``benchmarks/timing_leak.py``.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest

import snapcore
from snapcore.mechanism import _padding as mechanism_padding
from snapcore.padding import _quanta
from snapcore.randomness._sources import SeededSource, SystemSource
from snapcore.releases import _padding
from snapcore.releases._request import ReleaseRequest

MS = 1_000_000


@pytest.fixture
def stub_calibration(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[list[Any]]]:
    """Replace every measurement (the statistic's and its mechanisms') by a
    deterministic quantum; record what was calibrated on."""
    seen: list[list[Any]] = []

    def fake(run: Any, classes: Any, **kw: Any) -> int:
        seen.append(list(classes))
        return 2 * MS

    monkeypatch.setattr(_padding, "calibrate_quantum", fake)
    monkeypatch.setattr(mechanism_padding, "calibrate_quantum", fake)
    _quanta.clear_caches()
    yield seen
    _quanta.clear_caches()


def _statistic_classes(seen: list[list[Any]]) -> list[list[ReleaseRequest]]:
    return [c for c in seen if isinstance(c[0], ReleaseRequest)]


def test_statistic_padding_uses_public_n_and_synthetic_data(
    stub_calibration: list[list[Any]],
) -> None:
    data = [3.0, 1.0, 4.0, 1.0, 5.0]
    kw: dict[str, Any] = {"epsilon": 1.0, "data_bounds": (0, 10), "timing": "constant"}
    before = _quanta.statistic_stats().calls
    start = time.perf_counter_ns()
    r = snapcore.release("mean", data, source=SeededSource(2), **kw)
    assert time.perf_counter_ns() - start >= 2 * MS
    assert _quanta.statistic_stats().calls == before + 1
    stat_classes = _statistic_classes(stub_calibration)
    assert stat_classes, "the statistic was calibrated"
    for request in stat_classes[0]:
        synth = request.data
        assert len(synth) == r.n == 5
        assert synth is not data and synth != data
        # never the caller's stream, never the caller's budget
        assert request.budget is None and isinstance(request.source, SeededSource)
    # Same public shape, other values: the same quantum, no new calibration.
    n_cal = len(stat_classes)
    snapcore.release("mean", [9.0] * 5, source=SeededSource(2), **kw)
    assert len(_statistic_classes(stub_calibration)) == n_cal
    # Another public n: another quantum.
    snapcore.release("mean", [9.0] * 6, source=SeededSource(2), **kw)
    assert len(_statistic_classes(stub_calibration)) == n_cal + 1


def test_a_statistic_that_cannot_be_calibrated_says_so(
    monkeypatch: pytest.MonkeyPatch, stub_calibration: list[list[Any]]
) -> None:
    def broken(*a: Any, **k: Any) -> Any:
        raise RuntimeError("no synthetic data for this plugin")

    monkeypatch.setattr(_padding, "_synthetic", broken)
    r = snapcore.release(
        "mean",
        [1.0, 2.0],
        epsilon=1.0,
        data_bounds=(0, 3),
        source=SeededSource(1),
        timing="constant",
    )
    assert any("could not be calibrated" in n for n in r.notes)


def test_by_default_a_large_release_pads_only_its_mechanism(
    monkeypatch: pytest.MonkeyPatch, stub_calibration: list[list[Any]]
) -> None:
    monkeypatch.setattr(_padding, "STATISTIC_DEFAULT_MAX_N", 4)
    data = [1.0, 2.0, 3.0, 4.0, 5.0]
    r = snapcore.release("mean", data, epsilon=1.0, data_bounds=(0, 10))
    assert any("padded by default only up to" in n for n in r.notes), r.notes
    assert not _statistic_classes(stub_calibration)
    r = snapcore.release("mean", data, epsilon=1.0, data_bounds=(0, 10), timing="constant")
    assert not any("padded by default" in n for n in r.notes)
    assert _statistic_classes(stub_calibration)


@pytest.mark.parametrize(
    ("source", "cryptographic"),
    [
        (None, True),  # the release's default: the OS or ChaCha20
        ("system", True),
        ("chacha20", True),
        ("seeded", False),
        ("replay", False),
        ("no such source", False),  # the release itself reports the name
        (SystemSource(), True),
        (SeededSource(1), False),
    ],
)
def test_the_default_switch_follows_the_source_by_instance_name_or_default(
    source: Any, cryptographic: bool
) -> None:
    assert _padding._cryptographic(source) is cryptographic


def test_a_seeded_release_is_not_padded_by_default(stub_calibration: list[list[Any]]) -> None:
    before = _quanta.statistic_stats().calls
    snapcore.release("mean", [1.0, 2.0], epsilon=1.0, data_bounds=(0, 3), source=SeededSource(1))
    assert _quanta.statistic_stats().calls == before
    assert stub_calibration == []


@pytest.mark.parametrize("container", ["mapping", "pandas"])
def test_statistic_padding_calibrates_tables_with_a_named_column(container: str) -> None:
    """A table with column= (the CLI's input, data frames) is calibrated on a synthetic
    table of the same shape, not refused (which would leave the statistic unpadded)."""
    import pandas as pd

    cols = {"age": [30.0, 40.0, 50.0, 60.0, 70.0, 20.0, 10.0]}
    data = cols if container == "mapping" else pd.DataFrame(cols)
    r = snapcore.release(
        "mean", data, column="age", epsilon=1, data_bounds=(0, 100), timing="constant"
    )
    assert not any("could not be calibrated" in note for note in r.notes), r.notes


# -- a damaged quanta store is decided before anything is charged ----------------------
def _damage_every_entry(path: Any) -> None:
    import sqlite3

    con = sqlite3.connect(path)
    with con:
        con.execute("UPDATE quanta SET quantum_ns = 'damaged'")
    con.close()


def test_a_damaged_store_entry_charges_nothing_and_records_no_failed_spend(
    tmp_path: Any,
) -> None:
    """A damaged entry for the mechanism's quantum is found before the ledger commits
    ε: with warnings turned into errors the release stops there (nothing spent,
    nothing recorded); otherwise it is a miss, and the one spend completes."""
    import warnings

    store = tmp_path / "q.sqlite3"
    data = [float(i % 90) for i in range(200)]
    kw: dict[str, Any] = {"data_bounds": (0, 100), "epsilon": 0.5, "timing": "constant"}
    with _quanta.quanta_store(store):
        snapcore.release("mean", data, **kw)  # fills the store
    _damage_every_entry(store)

    ledger_path = tmp_path / "ledger.sqlite3"
    snapcore.Ledger.init(ledger_path, 2)
    budget = snapcore.Budget.from_ledger(ledger_path)
    _quanta.clear_caches()  # a fresh process
    with _quanta.quanta_store(store), warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(RuntimeWarning, match="entry is damaged"):
            snapcore.release("mean", data, budget=budget, **kw)
    assert budget.spent == 0
    assert snapcore.Ledger(ledger_path).entries == ()

    _quanta.clear_caches()
    with _quanta.quanta_store(store), pytest.warns(RuntimeWarning, match="entry is damaged"):
        out = snapcore.release("mean", data, budget=budget, **kw)
    assert out.epsilon_spent == Fraction(1, 2)
    entries = snapcore.Ledger(ledger_path).entries
    assert [(e.status, e.epsilon) for e in entries] == [("completed", Fraction(1, 2))]
