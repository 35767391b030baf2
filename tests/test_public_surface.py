"""The public surface: what ``import snapcore`` offers and what stays private.

Each check runs in a fresh interpreter, so that no earlier test has imported a module
by name and made an attribute appear that a user would not see.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import snapcore

PACKAGE = Path(snapcore.__file__).resolve().parent
#: The sub-packages, one per layer (docs/architecture.md), and the public modules.
SUBPACKAGES = (
    "adapters",
    "analysis",
    "calibration",
    "cli",
    "data",
    "exact",
    "mechanism",
    "padding",
    "pipeline",
    "plugins",
    "randomness",
    "releases",
    "testing",
)


def fresh(code: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.splitlines()


def test_every_exported_name_resolves():
    out = fresh(
        """
        import snapcore
        missing = [n for n in snapcore.__all__ if getattr(snapcore, n, None) is None]
        print(missing)
        """
    )
    assert out == ["[]"]


@pytest.mark.parametrize("package", SUBPACKAGES)
def test_a_subpackage_is_an_attribute_without_importing_it(package):
    out = fresh(
        f"""
        import snapcore
        mod = snapcore.{package}
        print(mod.__name__)
        print(sorted(n for n in getattr(mod, "__all__", []) if getattr(mod, n, None) is None))
        """
    )
    assert out == [f"snapcore.{package}", "[]"]


def test_what_a_user_needs_is_at_the_top():
    out = fresh(
        """
        import snapcore
        m = snapcore.SnappingMechanism(epsilon=1, clamp_bounds=(0, 1))
        print(type(m.source) is snapcore.ChaCha20Source)
        print(issubclass(snapcore.ChaCha20Source, snapcore.ByteSource))
        print(issubclass(snapcore.ByteSource, snapcore.RandomSource))
        print(snapcore.Ledger.__module__.startswith("snapcore.releases."))
        print(snapcore.release.__module__.startswith("snapcore.releases."))
        """
    )
    assert out == ["True"] * 5


def test_internal_modules_are_private():
    """Inside the layer packages every module is underscored: a user imports the
    package, whose ``__init__`` names what is public."""
    public = []
    for package in SUBPACKAGES:
        if package in ("testing", "adapters"):
            continue  # the suites plugin authors import by module, one module per adapter
        for path in (PACKAGE / package).glob("*.py"):
            if path.name != "__init__.py" and not path.name.startswith("_"):
                public.append(f"snapcore.{package}.{path.stem}")
    assert not public, public


def test_names_exported_by_a_package_are_defined_below_it():
    """A package exports names defined in its own modules, never another layer's."""
    import importlib
    import inspect

    problems = []
    for package in SUBPACKAGES:
        if package in ("cli", "testing", "adapters"):
            continue
        mod = importlib.import_module(f"snapcore.{package}")
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue  # constants, type aliases, pluggy's markers
            if not obj.__module__.startswith(f"snapcore.{package}."):
                problems.append(f"snapcore.{package}.{name} is defined in {obj.__module__}")
    assert not problems, problems


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no attribute 'accuracy_plan'"):
        _ = snapcore.accuracy_plan
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        _ = snapcore.exact.nothing
