"""The registries of backends, sources and statistics (snapcore.plugins._registries):
name to object, each name once, lookups that list the choices, and names declared by a
plugin that is imported on first use.

Discovery through entry points and the built-in plugins are tested in
``tests/plugins/test_manager.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from snapcore.errors import BackendUnavailableError, ParameterError, PluginError
from snapcore.plugins._registries import BackendRegistry, SourceRegistry, StatisticRegistry


class Made:
    """What a source factory makes here: it keeps its options."""

    def __init__(self, **options: Any) -> None:
        self.options = options


def test_added_names_are_found_sorted_with_their_plugin():
    reg = SourceRegistry()
    with reg.registering("plugin-one"):
        reg.add("zeta", Made)
    reg.add("alpha", Made)
    assert reg.names() == list(reg) == ["alpha", "zeta"] and len(reg) == 2
    assert "zeta" in reg and "beta" not in reg and 3 not in reg
    assert reg.origin("zeta") == "plugin-one" and reg.origin("alpha") == "<direct>"
    assert reg.get("zeta") is Made and reg.loaded("zeta")
    made = reg.create("zeta", seed=4)
    assert isinstance(made, Made) and made.options == {"seed": 4}


def test_a_name_is_registered_once():
    reg = SourceRegistry()
    with reg.registering("first"):
        reg.add("dup", Made)
    with reg.registering("second"), pytest.raises(PluginError) as info:
        reg.add("dup", dict)
    assert str(info.value) == "source 'dup' is registered twice: by first and by second"
    assert reg.get("dup") is Made and reg.origin("dup") == "first"


@pytest.mark.parametrize("name", [None, "", 7])
def test_a_name_must_be_a_non_empty_string(name):
    class Nameless:
        pass

    stat = Nameless()
    if name is not None:
        stat.name = name  # type: ignore[attr-defined]
    with pytest.raises(
        PluginError, match=rf"^statistic name must be a non-empty string, got {name!r}$"
    ):
        StatisticRegistry().add(stat)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", ["nope", ["a"], None], ids=repr)
def test_an_unknown_name_lists_the_choices(bad):
    reg = SourceRegistry()
    reg.add("b", Made)
    reg.declare("a", "later")
    with pytest.raises(ParameterError) as info:
        reg.get(bad)
    assert str(info.value) == f"source must be one of ['a', 'b'], got {bad!r}"
    assert info.value.parameter == "source"


def test_a_declared_name_imports_its_plugin_once_on_first_use():
    loads: list[str] = []
    reg: SourceRegistry

    def load(plugin: str) -> None:
        loads.append(plugin)
        with reg.registering(plugin):
            reg.add("lazy", Made)

    reg = SourceRegistry(load)
    reg.declare("lazy", "lazy-plugin")
    assert "lazy" in reg and reg.names() == ["lazy"] and len(reg) == 1
    assert not reg.loaded("lazy") and loads == []
    assert reg.origin("lazy") == "lazy-plugin" and reg.declared_by("lazy-plugin") == ["lazy"]
    assert reg.get("lazy") is Made and reg.get("lazy") is Made
    assert loads == ["lazy-plugin"]  # imported once, on the first lookup
    assert reg.loaded("lazy") and reg.declared_by("lazy-plugin") == []
    assert reg.origin("lazy") == "lazy-plugin"


def test_a_declared_name_belongs_to_its_plugin():
    reg = SourceRegistry()
    reg.declare("mine", "owner")
    with reg.registering("intruder"), pytest.raises(PluginError) as info:
        reg.add("mine", Made)
    assert str(info.value) == "source 'mine' is registered twice: by owner and by intruder"
    with pytest.raises(PluginError, match="'mine' is registered twice: by owner and by other"):
        reg.declare("mine", "other")
    reg.add("here", Made)
    with pytest.raises(PluginError, match=r"'here' is registered twice: by <direct> and by p"):
        reg.declare("here", "p")


class Available:
    name = "avail"
    library = "math"
    install_hint = "nothing to install"

    @classmethod
    def is_available(cls) -> bool:
        return True


class Missing(Available):
    name = "missing"
    library = "no_such_library"
    install_hint = "pip install no-such-library"

    @classmethod
    def is_available(cls) -> bool:
        return False


def test_a_backend_is_made_once_and_an_unavailable_one_says_how_to_install_it():
    reg = BackendRegistry()
    reg.add(Available)  # type: ignore[arg-type]
    reg.add(Missing)  # type: ignore[arg-type]
    assert reg.names() == ["avail", "missing"] and reg.available() == ["avail"]
    first = reg.create("avail")
    assert isinstance(first, Available) and reg.create("avail") is first
    with pytest.raises(BackendUnavailableError) as info:
        reg.create("missing")
    msg = str(info.value)
    assert "'missing'" in msg and "'no_such_library'" in msg
    assert msg.endswith("install it with: pip install no-such-library")
    with pytest.raises(ParameterError, match=r"backend must be one of \['avail', 'missing'\]"):
        reg.create("other")
