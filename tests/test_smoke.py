"""Packaging guards: the stdlib is never shadowed and the public names exist."""

import importlib
import statistics as stdlib_statistics
import sys


def test_import_statistics_is_stdlib_after_snapcore():
    import snapcore.statistics

    import snapcore

    mod = importlib.import_module("statistics")
    assert mod is stdlib_statistics
    assert hasattr(mod, "median") and hasattr(mod, "fmean")
    assert snapcore.statistics is not mod
    assert sys.modules["snapcore.statistics"].__name__ == "snapcore.statistics"


def test_backends_and_statistics_live_under_snapcore():
    import snapcore.backends
    import snapcore.backends.mpfr

    assert "backends" not in sys.modules
    assert snapcore.backends.mpfr.MPFRBackend.name == "mpfr"
