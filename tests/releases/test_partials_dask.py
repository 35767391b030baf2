"""Dask data frames: one partial per partition on the workers, merged, released once on
the caller — bit-identical to the single-machine release for the same draws, with 1, 3
and 7 partitions, on the threaded and process schedulers and on a LocalCluster."""

from __future__ import annotations

import concurrent.futures
import multiprocessing

import numpy as np
import pandas as pd
import pytest

import snapcore
from snapcore.errors import ParameterError

dd = pytest.importorskip("dask.dataframe")
dask = pytest.importorskip("dask")
distributed = pytest.importorskip("distributed")

RELEASES = [
    ("mean", "x", {"data_bounds": (0, 100)}),
    ("variance", "x", {"data_bounds": (0, 100)}),
    ("covariance", ("x", "y"), {"data_bounds": ((0, 100), (-1e3, 1e3))}),
    ("histogram", "x", {"bins": [0.0, 10.0, 50.0, 99.5, 100.0]}),
    ("count", None, {"n": 5000, "relation": "add-remove"}),
]


@pytest.fixture(scope="module")
def frame():
    rng = np.random.default_rng(8)
    n = 3001
    return pd.DataFrame(
        {
            "x": rng.uniform(-5, 105, n) * 2.0 ** rng.integers(-30, 1, n),
            "y": rng.normal(0, 500, n),
        }
    )


@pytest.fixture(scope="module")
def expected(frame):
    out = {}
    for stat, column, kw in RELEASES:
        opts = {k: v for k, v in kw.items() if k not in ("n", "relation")}
        out[stat] = (
            snapcore.release(
                stat, frame, column=column, epsilon=1, source=snapcore.SeededSource(17), **kw
            ),
            snapcore.partial(stat, frame, column=column, **opts),
        )
    return out


def _check(frame, expected, partitions):
    ddf = dd.from_pandas(frame, npartitions=partitions)
    assert ddf.npartitions == partitions
    for stat, column, kw in RELEASES:
        opts = {k: v for k, v in kw.items() if k not in ("n", "relation")}
        r = snapcore.release(
            stat, ddf, column=column, epsilon=1, source=snapcore.SeededSource(17), **kw
        )
        want_release, want_partial = expected[stat]
        assert r == want_release, (stat, partitions)
        assert snapcore.partial(stat, ddf, column=column, **opts) == want_partial


@pytest.fixture(scope="module")
def process_pool():
    # one pool for the module: each compute() would otherwise start its own processes
    ctx = multiprocessing.get_context("spawn")  # no fork of a process holding threads
    with concurrent.futures.ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        yield pool


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_threaded_scheduler(frame, expected, partitions):
    with dask.config.set(scheduler="threads"):
        _check(frame, expected, partitions)


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_process_scheduler(frame, expected, process_pool, partitions):
    with dask.config.set(scheduler="processes", pool=process_pool):
        _check(frame, expected, partitions)


@pytest.fixture(scope="module")
def cluster_client():
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        yield client


@pytest.mark.parametrize("partitions", [1, 3, 7])
def test_local_cluster(frame, expected, cluster_client, partitions):
    _check(frame, expected, partitions)


def test_worker_errors_carry_no_values(frame):
    bad = frame.copy()
    bad.loc[17, "x"] = np.nan
    ddf = dd.from_pandas(bad, npartitions=3)
    with pytest.raises(ParameterError, match="missing values") as e:
        snapcore.release("mean", ddf, column="x", epsilon=1, data_bounds=(0, 100))
    assert repr(float(frame.loc[18, "x"]))[:8] not in str(e.value)
    with pytest.raises(ParameterError, match="column 'z' not found"):
        snapcore.release("mean", ddf, column="z", epsilon=1, data_bounds=(0, 100))
    # the same check of column= as for in-memory data, before any worker runs
    with pytest.raises(ParameterError, match="must be a name or a sequence of names"):
        snapcore.partial("mean", ddf, column=5, data_bounds=(0, 100))
