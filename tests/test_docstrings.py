"""The ``>>>`` examples in the package's docstrings (shown in the API reference) run."""

import doctest
import importlib
import pkgutil

import pytest
import snapcore.backends
import snapcore.statistics

import snapcore

# The plugin packages are walked on their own: they install from other folders.
MODULES = sorted(
    {
        info.name
        for pkg in (snapcore, snapcore.backends, snapcore.statistics)
        for info in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + ".")
    }
)


def test_walk_finds_the_plugin_packages():
    assert "snapcore.backends.mpfr" in MODULES
    assert "snapcore.statistics.moments" in MODULES


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    mod = importlib.import_module(name)
    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
