"""The ``threads=`` setting (snapcore.pipeline._threads): checked, and resolved for one
array; and how the public API passes it to the fast path."""

from __future__ import annotations

import os
from fractions import Fraction

import numpy as np
import pytest
from snapcore.backends.fast import FastBackend

import snapcore
from snapcore import SnappingMechanism
from snapcore.errors import ParameterError
from snapcore.pipeline import _engine, _threads
from snapcore.pipeline._threads import (
    THREADS_MIN_SIZE,
    check_threads,
    resolve_threads,
    usable_cpus,
)
from snapcore.randomness._sources import SeededSource


@pytest.mark.parametrize("good", [None, 1, 2, 64, np.int64(3), np.uint8(1)])
def test_threads_accepts_none_and_ints_from_one(good):
    got = check_threads(good)
    assert got == (None if good is None else int(good))
    assert got is None or type(got) is int


@pytest.mark.parametrize(
    ("bad", "shown"),
    [
        (0, "int 0"),
        (-3, "int -3"),
        (np.int32(0), "numpy.int32 0"),
        (True, "bool"),
        (2.0, "float"),
        ("4", "str"),
        (Fraction(2), "fractions.Fraction"),
    ],
)
def test_threads_refuses_anything_else_naming_rule_and_type(bad, shown):
    with pytest.raises(ParameterError) as info:
        check_threads(bad)
    assert str(info.value) == f"threads must be None or an int >= 1, got {shown}"
    assert info.value.parameter == "threads"


def test_resolve_threads_by_size_and_cpus(monkeypatch):
    """An int is kept; None is one thread below THREADS_MIN_SIZE, else the CPUs of the
    process's affinity mask (not the machine's count)."""
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 2, 5}, raising=False)
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    assert usable_cpus() == 3
    assert resolve_threads(None, THREADS_MIN_SIZE - 1) == 1
    assert resolve_threads(None, THREADS_MIN_SIZE) == 3
    assert resolve_threads(5, 10) == 5
    monkeypatch.delattr(os, "sched_getaffinity", raising=False)
    assert _threads.usable_cpus() == 64


class _Spy(FastBackend):
    """The fast backend, recording the ``threads`` each batch is offered."""

    name = "fast-spy"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[object] = []

    def batch(self, pipeline, values, source, *, threads=None):
        self.seen.append(("batch", threads))
        return super().batch(pipeline, values, source, threads=threads)

    def batch_padded(self, pipeline, values, source, exact_floor, *, threads=None):
        self.seen.append(("padded", threads))
        return super().batch_padded(pipeline, values, source, exact_floor, threads=threads)


@pytest.mark.parametrize("threads", [None, 1, 3])
def test_the_mechanism_passes_threads_to_the_backend(threads):
    """``SnappingMechanism(threads=)`` reaches the backend's batch (padded or not) and
    the output does not depend on it."""
    values = np.random.default_rng(1).uniform(0.0, 100.0, 5000)
    ref = SnappingMechanism(
        epsilon=1.0, clamp_bounds=(0.0, 100.0), source=SeededSource(4), threads=1
    ).release(values)
    for timing in ("off", "constant"):
        spy = _Spy()
        m = SnappingMechanism(
            epsilon=1.0,
            clamp_bounds=(0.0, 100.0),
            backend=spy,
            source=SeededSource(4),
            timing=timing,
            threads=threads,
        )
        assert m.threads == threads
        out = m.release(values)
        kind = "batch" if timing == "off" else "padded"
        assert spy.seen and set(spy.seen) == {(kind, threads)}
        if timing == "off":
            assert np.array_equal(out.view(np.int64), ref.view(np.int64))


def test_the_mechanism_refuses_bad_threads_before_anything():
    with pytest.raises(ParameterError, match=r"^threads must be None or an int >= 1, got int 0"):
        SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 1.0), threads=0)


def test_release_passes_threads_and_checks_it_before_the_budget(monkeypatch):
    """``snapcore.release(threads=)``: a histogram of 70,000 bins released at 1 and 3
    threads runs the fused loop on that many threads and gives the same counts; a bad
    value is refused before the budget is charged or the data read."""
    seen = []
    run_stream = _engine.FastEngine.run_stream

    def spy(self, v, source, pipe, threads=1, **kw):
        seen.append(threads)
        return run_stream(self, v, source, pipe, threads, **kw)

    monkeypatch.setattr(_engine.FastEngine, "run_stream", spy)
    data = np.random.default_rng(2).integers(0, 70_000, 1000).astype(float)
    kw = dict(epsilon=1, bins=np.arange(70_001.0), source=SeededSource(9), timing="off")
    one = snapcore.release("histogram", data, threads=1, **kw)
    kw["source"] = SeededSource(9)
    three = snapcore.release("histogram", data, threads=3, **kw)
    assert seen == [1, 3]
    assert np.array_equal(np.asarray(one.value), np.asarray(three.value))
    budget = snapcore.Budget(1)
    with pytest.raises(ParameterError, match=r"^threads must be None or an int >= 1") as exc:
        snapcore.release("mean", object(), epsilon=1, budget=budget, threads=1.5)
    assert exc.value.parameter == "threads"
    assert budget.spent == 0
