"""The plugin's own tests: snapcore's statistic conformance suite, in one line.

It checks range_count's declared Δ and value range exactly on generated neighbours
and extremal datasets, in every container snapcore accepts, under both relations
(run with ``pytest`` from this directory after ``pip install -e .``).
"""

from snapcore_rangecount import RangeCount

from snapcore.testing import statistic_suite

TestRangeCount = statistic_suite(RangeCount)
