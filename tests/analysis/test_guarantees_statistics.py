"""Planning a statistic's release without data matches the real release.

Needs the statistic plugins and ``snapcore.release`` (snapcore.releases._api); skipped, saying
so, where they are not installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import snapcore
from snapcore.analysis import _guarantees as guarantees
from snapcore.errors import ParameterError

api = pytest.importorskip(
    "snapcore.releases._api", reason="statistic plugins (snapcore.releases._api) missing"
)

CASES = [
    ("mean", {"data_bounds": (0.0, 100.0)}, {}),
    ("sum", {"data_bounds": (-5.0, 20.0)}, {}),
    ("variance", {"data_bounds": (0.0, 10.0)}, {}),
    ("count", {}, {}),
    ("histogram", {}, {"bins": [0.0, 25.0, 50.0, 75.0, 100.0]}),
    ("histogram", {}, {"categories": ["a", "b", "c"]}),
]


def _data(name, options, n, rng):
    if "categories" in options:
        return list(rng.choice(options["categories"], size=n))
    return rng.uniform(0.0, 10.0, size=n)


@pytest.mark.parametrize(("name", "plan", "options"), CASES)
def test_planned_accuracy_equals_the_release_records(name, plan, options):
    n, eps, gamma, alpha = 500, 0.8, 0.01, 0.05
    rng = np.random.default_rng(0)
    data = _data(name, options, n, rng)
    rec = snapcore.release(
        name,
        data,
        epsilon=eps,
        data_bounds=plan.get("data_bounds"),
        gamma=gamma,
        n=n,
        source=snapcore.SeededSource(1),
        **options,
    )
    planned = guarantees.plan_calibration(
        epsilon=eps, gamma=gamma, statistic=name, n=n, options=options, **plan
    )
    assert (float(planned.lower), float(planned.upper)) == tuple(rec.clamp_bounds)
    assert planned.sensitivity == rec.sensitivity
    assert planned.epsilon == rec.epsilon_per_value
    assert guarantees.plan_accuracy(
        alpha, epsilon=eps, gamma=gamma, statistic=name, n=n, options=options, **plan
    ) == guarantees.accuracy(rec, alpha)


def test_epsilon_for_accuracy_of_a_statistic():
    plan = {"statistic": "mean", "n": 1000, "data_bounds": (0.0, 100.0), "gamma": 0.05}
    eps = guarantees.epsilon_for_accuracy(1.0, 0.05, **plan)
    assert guarantees.plan_accuracy(0.05, epsilon=eps, **plan) <= 1.0
    assert guarantees.plan_accuracy(0.05, epsilon=eps * (1 - 2**-50), **plan) > 1.0


def test_statistic_plan_errors():
    with pytest.raises(ParameterError, match="needs n="):
        guarantees.plan_calibration(epsilon=1.0, statistic="mean", gamma=0.1)
    with pytest.raises(ParameterError, match="statistic"):
        guarantees.plan_calibration(epsilon=1.0, statistic="nope", n=10, gamma=0.1)
