"""Hook specifications: how plugins add backends, randomness sources and statistics.

A plugin is any module or object with functions decorated by :data:`hookimpl`,
made known to snapcore through an entry point in the ``snapcore`` group::

    [project.entry-points.snapcore]
    myplugin = "mypackage.snapcore_plugin"

Each hook receives a registry and calls ``registry.add(...)``; it returns nothing.
Names must be unique across all plugins: a second plugin registering a name that
is already taken is an error (:class:`snapcore.errors.PluginError`), never a silent
override.  snapcore's own built-ins register through these same hooks.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from snapcore.plugins._registries import BackendRegistry, SourceRegistry, StatisticRegistry

__all__ = ["PROJECT_NAME", "hookimpl", "hookspec"]

#: The pluggy project name and the entry-point group.
PROJECT_NAME = "snapcore"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def snapcore_register_backends(registry: BackendRegistry) -> None:
    """Register arithmetic backends.

    :param registry: call ``registry.add(BackendClass)`` for each
        :class:`snapcore.Backend` subclass; its ``name`` is the key.
        Register a backend even when its library is missing: it is then listed
        as unavailable with its install hint.
    """


@hookspec
def snapcore_register_sources(registry: SourceRegistry) -> None:
    """Register randomness sources.

    :param registry: call ``registry.add(name, factory)``, where ``factory(**options)``
        returns a :class:`snapcore.RandomSource`.
    """


@hookspec
def snapcore_register_statistics(registry: StatisticRegistry) -> None:
    """Register statistics.

    :param registry: call ``registry.add(statistic)`` for each statistic object;
        its ``name`` attribute is the key.
    """
