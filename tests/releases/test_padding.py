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
from snapcore.errors import BudgetExceededError
from snapcore.mechanism import _padding as mechanism_padding
from snapcore.padding import _pad, _quanta
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


# -- a group-by release is padded as a whole -------------------------------------------
def _one_padded_grouped_sum(data: Any, kw: dict[str, Any]) -> None:
    """A grouped sum of ``data`` taking the stub's quantum in one padded call for the
    whole call (not one per group), with no timing note on any group."""
    before = _quanta.statistic_stats().calls
    start = time.perf_counter_ns()
    g = snapcore.release("sum", data, **kw)
    assert time.perf_counter_ns() - start >= 2 * MS  # the stub's quantum
    assert _quanta.statistic_stats().calls == before + 1  # one padded call, not per group
    assert all(not any("timing" in n for n in r.notes) for r in g.releases)


def _grouped_data(records: int) -> dict[str, list[Any]]:
    return {
        "g": [("a", "b")[i % 2] for i in range(records)],
        "x": [float(i % 7) for i in range(records)],
    }


@pytest.mark.parametrize("records", [10, 400])
def test_a_grouped_release_is_padded_as_a_whole_by_its_public_total(
    stub_calibration: list[list[Any]], records: int
) -> None:
    """One quantum for the whole group-by call, keyed by the public key set and caps
    (calibrated once for both data sizes), on synthetic tables with every group full
    to its cap, whatever the private number of records."""
    kw: dict[str, Any] = {
        "by": "g",
        "keys": ["a", "b", "c"],
        "n": 50,
        "column": "x",
        "data_bounds": (0, 10),
        "epsilon": 1,
        "timing": "constant",
    }
    _one_padded_grouped_sum(_grouped_data(records), kw)
    tables = [c.data for cs in _statistic_classes(stub_calibration) for c in cs]
    assert tables, "the grouped release was calibrated"
    for t in tables:
        assert sorted(t) == ["g", "x"]
        keys = list(t["g"])
        assert [keys.count(k) for k in ("a", "b", "c")] == [50, 50, 50]
        assert len(t["x"]) == 150


def test_grouped_padding_is_calibrated_once_per_public_configuration(
    stub_calibration: list[list[Any]],
) -> None:
    kw: dict[str, Any] = {
        "by": "g",
        "keys": ["a", "b"],
        "n": 40,
        "column": "x",
        "data_bounds": (0, 10),
        "epsilon": 1,
        "timing": "constant",
    }
    snapcore.release("sum", _grouped_data(12), **kw)
    first = len(_statistic_classes(stub_calibration))
    snapcore.release("sum", _grouped_data(70), **kw)  # another private size: same quantum
    assert len(_statistic_classes(stub_calibration)) == first
    snapcore.release("sum", _grouped_data(12), **{**kw, "n": 41})  # another public cap
    assert len(_statistic_classes(stub_calibration)) > first


def test_grouped_replace_is_calibrated_on_the_declared_sizes(
    stub_calibration: list[list[Any]],
) -> None:
    data = _grouped_data(9)
    sizes = {"a": 5, "b": 4}
    snapcore.release(
        "mean",
        data,
        by="g",
        keys=["a", "b"],
        group_sizes=sizes,
        column="x",
        relation="replace",
        data_bounds=(0, 10),
        epsilon=1,
        timing="constant",
    )
    tables = [c.data for cs in _statistic_classes(stub_calibration) for c in cs]
    assert tables
    for t in tables:
        assert [list(t["g"]).count(k) for k in ("a", "b")] == [5, 4]


def test_a_grouped_release_without_a_public_total_says_so(
    stub_calibration: list[list[Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_padding, "grouped_total", lambda request: None)
    monkeypatch.setattr(snapcore.releases._api, "grouped_total", lambda request: None)
    g = snapcore.release(
        "sum",
        _grouped_data(10),
        by="g",
        keys=["a", "b"],
        n=20,
        column="x",
        data_bounds=(0, 10),
        epsilon=1,
        timing="constant",
    )
    assert all(any("not padded as a whole" in n for n in r.notes) for r in g.releases)


def test_a_real_grouped_calibration_releases_its_synthetic_tables() -> None:
    """No stub: the grouped release's calibration runs end to end and pads the call."""
    _quanta.clear_caches()
    before = _quanta.statistic_stats().calls
    g = snapcore.release(
        "count", _grouped_data(30), by="g", keys=["a", "b"], n=30, epsilon=1, timing="constant"
    )
    assert _quanta.statistic_stats().calls == before + 1
    assert all(not any("timing" in n for n in r.notes) for r in g.releases)


# -- a group-by release of per-key partial states ---------------------------------------


def _key_partials(records: int, bounds: Any = (0, 10), name: str = "sum") -> dict[str, Any]:
    d = _grouped_data(records)
    return {
        k: snapcore.partial(
            name, [x for g, x in zip(d["g"], d["x"], strict=True) if g == k], data_bounds=bounds
        )
        for k in ("a", "b", "c")
    }


@pytest.mark.parametrize("records", [10, 400])
def test_a_grouped_release_of_partial_states_is_padded_as_a_whole(
    stub_calibration: list[list[Any]], records: int
) -> None:
    """One quantum for the whole call of per-key partial states, keyed by the public
    key set and caps (calibrated once for both private sizes), on synthetic partial
    states of every key, each of its cap's records."""
    kw: dict[str, Any] = {
        "by": "g",
        "keys": ["a", "b", "c"],
        "n": {"a": 50, "b": 300, "c": 7},
        "data_bounds": (0, 10),
        "epsilon": 1,
        "timing": "constant",
    }
    _one_padded_grouped_sum(_key_partials(records), kw)
    classes = _statistic_classes(stub_calibration)
    assert len(classes) == 1  # the second size reused the first one's quantum
    for c in classes[0]:
        assert sorted(c.data) == ["a", "b", "c"]
        assert [c.data[k].state[0] for k in ("a", "b", "c")] == [50, 300, 7]
        assert all(p.data_bounds == ((0.0, 10.0),) for p in c.data.values())


def test_partial_state_padding_is_keyed_by_the_states_options(
    stub_calibration: list[list[Any]],
) -> None:
    """Partial states released without the statistic's options carry their own: states
    of other options are another configuration, and the calibration uses them."""

    def parts(records: int, categories: list[str]) -> dict[str, Any]:
        xs = [("x", "y")[i % 2] for i in range(records)]
        return {k: snapcore.partial("histogram", xs, categories=categories) for k in "abc"}

    kw: dict[str, Any] = {"by": "g", "keys": ["a", "b", "c"], "n": 40, "epsilon": 1}
    snapcore.release("histogram", parts(10, ["x", "y"]), timing="constant", **kw)
    first = len(_statistic_classes(stub_calibration))
    snapcore.release("histogram", parts(30, ["x", "y"]), timing="constant", **kw)
    assert len(_statistic_classes(stub_calibration)) == first
    snapcore.release("histogram", parts(10, ["x", "y", "z"]), timing="constant", **kw)
    classes = _statistic_classes(stub_calibration)
    assert len(classes) > first
    for c in classes[-1]:
        assert all(dict(p.options)["categories"] == ("x", "y", "z") for p in c.data.values())


@pytest.mark.parametrize("n", [0, 1, 255, 256, 257, 1000])
@pytest.mark.parametrize("kind", ["lower", "upper", "outside"])
def test_a_synthetic_partial_state_is_the_state_of_its_records(n: int, kind: str) -> None:
    """Built by doubling merges, it equals the state of n such records computed directly
    (exact Fractions: the sum of the clamped values times 2**1074)."""
    from snapcore.plugins._manager import resolve_statistic

    lo, hi = Fraction(-3), Fraction(10)
    state = _padding._synthetic_state(resolve_statistic("variance"), n, ((-3.0, 10.0),), {}, kind)
    one = {"lower": lo, "upper": hi, "outside": None}[kind]
    # "outside": ±1e300 alternately, clamped to the bounds
    values = [one] * n if one is not None else [hi if i % 2 == 0 else lo for i in range(n)]
    assert state == (n, sum(values) * 2**1074, sum(v * v for v in values) * 2**2148)


def test_a_real_calibration_of_partial_states_pads_a_private_size_mean() -> None:
    """No stub: a mean per group of private size from per-key partial states (as the
    command line gives it) is calibrated on synthetic states and padded as a whole."""
    _quanta.clear_caches()
    before = _quanta.statistic_stats().calls
    g = snapcore.release(
        "mean", _key_partials(30, bounds=(0, 10), name="mean"), by="g", keys=["a", "b", "c"],
        data_bounds=(0, 10), n=30, epsilon=1, timing="constant",
    )  # fmt: skip
    assert _quanta.statistic_stats().calls == before + 1
    assert all(not any("timing" in n for n in r.notes) for r in g.releases)


# -- a release followed by the random delay ------------------------------------------
@pytest.fixture
def stub_quantum(monkeypatch: pytest.MonkeyPatch) -> None:
    def fake(run: Any, classes: Any, **kw: Any) -> int:
        return 2 * MS

    monkeypatch.setattr(_padding, "calibrate_quantum", fake)
    monkeypatch.setattr(mechanism_padding, "calibrate_quantum", fake)
    _quanta.clear_caches()


KW: dict[str, Any] = {"data_bounds": (0, 10), "epsilon": 0.5, "timing": "constant"}
DATA = [1.0, 2.0, 3.0, 9.0]


def test_a_release_waits_for_its_delay_after_its_quanta(
    stub_quantum: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A scripted clock-free check: the release's final deadline is its padded end
    (``begin + dither + j·q``, the dither drawn for the call) plus the delay drawn, in
    ``[0, 2·shift]``."""
    ends: list[int] = []
    deadlines: list[int] = []
    dithers: list[int] = []
    waits: list[int] = []
    real_pad, real_wait = _padding.pad, _padding.wait_until
    real_sample = _pad.RandomDelay.sample_ns

    def sample_ns(self: _pad.RandomDelay, quantum_ns: int) -> int:
        waits.append(real_sample(self, quantum_ns))
        return waits[-1]

    def pad(begin: int, q: int, stats: Any = None, dither: int = 0) -> int:
        j = real_pad(begin, q, stats, dither)
        ends.append(begin + dither + j * q)
        dithers.append(dither)
        return j

    def wait_until(deadline: int) -> None:
        deadlines.append(deadline)
        real_wait(deadline)

    monkeypatch.setattr(_padding, "pad", pad)
    monkeypatch.setattr(_padding, "wait_until", wait_until)
    # The largest dither: a deadline that left it out would end before the padded end.
    monkeypatch.setattr(_padding, "next_dither", lambda: _pad.DITHER_NS - 1)
    monkeypatch.setattr(_pad.RandomDelay, "sample_ns", sample_ns)
    delay = _pad.RandomDelay(epsilon=1, jitter_ns=500, basis="test")
    with _pad.random_delay(delay):
        r = snapcore.release("mean", DATA, **KW)
    assert len(ends) == len(deadlines) == 1
    assert dithers == [_pad.DITHER_NS - 1]
    assert deadlines[0] - ends[0] == waits[0]
    assert 0 <= waits[0] <= 2 * delay.shift_for(2 * MS)
    assert r.timing_guarantee == delay.guarantee(2 * MS)  # the stub's quantum
    assert r.to_dict()["timing_guarantee"]["bound_ns"] == 2 * MS + 500
    assert r.epsilon_spent == Fraction(1, 2)  # ε_t is not part of it
    # Outside the block: no delay, no claim.
    assert snapcore.release("mean", DATA, **KW).timing_guarantee is None


def test_a_release_that_is_not_padded_has_no_timing_claim(stub_quantum: None) -> None:
    with _pad.random_delay(_pad.RandomDelay(epsilon=1, bound_ns=100)):
        r = snapcore.release("mean", DATA, **{**KW, "timing": "off"})
    assert r.timing_guarantee is None


def test_a_grouped_release_carries_the_claim_in_every_group(stub_quantum: None) -> None:
    delay = _pad.RandomDelay(epsilon=1, bound_ns=100)
    data = {"g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]}
    with _pad.random_delay(delay):
        g = snapcore.release("sum", data, by="g", keys=["a", "b"], n=10, column="x", **KW)
    assert [r.timing_guarantee for r in g.releases] == [delay.guarantee(2 * MS)] * 2


@pytest.mark.parametrize("statistic", ["mean", "variance"])
def test_a_private_size_ratio_carries_the_claim_in_every_group(
    stub_quantum: None, statistic: str
) -> None:
    delay = _pad.RandomDelay(epsilon=1, bound_ns=100)
    data = {"g": ["a", "b", "a"], "x": [1.0, 2.0, 3.0]}
    with _pad.random_delay(delay):
        g = snapcore.release(statistic, data, by="g", keys=["a", "b"], n=10, column="x", **KW)
    assert [r.timing_guarantee for r in g.releases] == [delay.guarantee(2 * MS)] * 2
    bound = [r.to_dict()["timing_guarantee"]["bound_ns"] for r in g.releases]
    assert bound == [delay.guarantee(2 * MS).bound_ns] * 2


def test_a_budget_is_charged_epsilon_t_only_when_asked(stub_quantum: None, tmp_path: Any) -> None:
    b = snapcore.Budget(1)
    with _pad.random_delay(_pad.RandomDelay(epsilon=Fraction(1, 4), bound_ns=100)):
        snapcore.release("mean", DATA, budget=b, **KW)
    assert b.spent == Fraction(1, 2)
    charging = _pad.RandomDelay(epsilon=Fraction(1, 4), bound_ns=100, charge=True)
    b = snapcore.Budget(1)
    with _pad.random_delay(charging):
        snapcore.release("mean", DATA, budget=b, **KW)
    assert b.spent == Fraction(3, 4)
    assert [label for label, _ in b.history] == ["timing of mean", "mean"]
    # Not enough for both: refused before anything is spent (a ledger records nothing).
    path = tmp_path / "ledger.sqlite3"
    snapcore.Ledger.init(path, Fraction(3, 5))
    lb = snapcore.Budget.from_ledger(path)
    with _pad.random_delay(charging), pytest.raises(BudgetExceededError, match="ε_t"):
        snapcore.release("mean", DATA, budget=lb, **KW)
    assert lb.spent == 0 and snapcore.Ledger(path).entries == ()
