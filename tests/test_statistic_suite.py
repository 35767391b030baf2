"""The statistic conformance suite over every built-in statistic, in every relation it
supports (snapcore.testing.statistic_suite)."""

from __future__ import annotations

from snapcore.testing import RegisteredStatisticsConformance

BUILTINS = ("count", "sum", "mean", "variance", "covariance", "histogram")


class TestBuiltinStatistics(RegisteredStatisticsConformance):
    names = BUILTINS
