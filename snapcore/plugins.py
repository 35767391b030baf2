"""Plugin discovery and the registries of backends, sources and statistics.

Discovery order is fixed and never decides anything: entry points of the
``snapcore`` group are loaded first, then any built-in plugin that is not yet
registered (so the built-ins are there even when the entry-point metadata is stale or
entry points are switched off).  snapcore itself must be installed (``pip install -e
.`` for a checkout): its plugin packages ``snapcore.backends`` and
``snapcore.statistics`` are mapped from other folders by the install.  Selection is
always by explicit name; a name registered twice is an error, and so is a hook
implementation whose name is not one of snapcore's hooks.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import pluggy

from snapcore import hookspecs
from snapcore.errors import BackendUnavailableError, ParameterError, PluginError, parameter_name

if TYPE_CHECKING:
    from snapcore.backend import Backend
    from snapcore.sources import RandomSource
    from snapcore.statistic import Statistic

__all__ = [
    "BUILTIN_PLUGINS",
    "BackendRegistry",
    "Registries",
    "Registry",
    "SourceRegistry",
    "StatisticRegistry",
    "get_registries",
    "make_plugin_manager",
    "reset",
]

#: Built-in plugins: entry-point name -> module.  ``pyproject.toml`` declares the
#: same pairs as entry points (a test checks that the two agree).
BUILTIN_PLUGINS: dict[str, str] = {
    "mpfr": "snapcore.backends.mpfr",
    "mpmath": "snapcore.backends.mpmath_backend",
    "arb": "snapcore.backends.arb",
    "sources": "snapcore.sources",
    "counting": "snapcore.statistics.counting",
    "moments": "snapcore.statistics.moments",
    "fast": "snapcore.backends.fast",
    "chacha20": "snapcore.chacha",
}

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> object, refusing duplicates; lookups name the valid choices."""

    kind = "plugin"

    def __init__(self) -> None:
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._current_plugin = "<direct>"

    def _add(self, name: str, item: T) -> None:
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._items:
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by {self._origin[name]} "
                f"and by {self._current_plugin}"
            )
        self._items[name] = item
        self._origin[name] = self._current_plugin

    def get(self, name: str) -> T:
        """The object registered as ``name``.

        Raises
        ------
        ParameterError
            If nothing is registered under that name.
        """
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ParameterError(
                f"{parameter_name(self.kind)} must be one of {sorted(self._items)}, got {name!r}",
                parameter=self.kind,
            ) from None

    def names(self) -> list[str]:
        """Registered names, sorted."""
        return sorted(self._items)

    def origin(self, name: str) -> str:
        """The plugin that registered ``name``."""
        return self._origin[name]

    def __contains__(self, name: object) -> bool:
        return name in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items)


class BackendRegistry(Registry["type[Backend]"]):
    """Registry of :class:`snapcore.backend.Backend` classes, keyed by ``Backend.name``."""

    kind = "backend"

    def __init__(self) -> None:
        super().__init__()
        self._instances: dict[str, Backend] = {}
        self._lock = threading.Lock()

    def add(self, backend: type[Backend]) -> None:
        """Register a backend class under its ``name``."""
        self._add(backend.name, backend)

    def available(self) -> list[str]:
        """Names of the backends whose library can be imported."""
        return [n for n in self.names() if self._items[n].is_available()]

    def create(self, name: str) -> Backend:
        """The (shared) instance of backend ``name``.

        Raises
        ------
        ParameterError
            If no backend has that name.
        BackendUnavailableError
            If its library is missing; the message gives the install command.
        """
        cls = self.get(name)
        if not cls.is_available():
            raise BackendUnavailableError(
                f"backend {name!r} is unavailable: its library {cls.library!r} is not "
                f"installed; install it with: {cls.install_hint}"
            )
        with self._lock:
            inst = self._instances.get(name)
            if inst is None:
                inst = self._instances[name] = cls()
        return inst


class SourceRegistry(Registry["Callable[..., RandomSource]"]):
    """Registry of randomness-source factories."""

    kind = "source"

    def add(self, name: str, factory: Callable[..., RandomSource]) -> None:
        """Register ``factory(**options) -> RandomSource`` as ``name``."""
        self._add(name, factory)

    def create(self, name: str, **options: Any) -> RandomSource:
        """A new source ``name`` built with ``options``."""
        return self.get(name)(**options)


class StatisticRegistry(Registry["Statistic"]):
    """Registry of statistic plugins, keyed by their ``name`` attribute."""

    kind = "statistic"

    def add(self, statistic: Statistic) -> None:
        """Register a statistic object under ``statistic.name``."""
        self._add(getattr(statistic, "name", None), statistic)  # type: ignore[arg-type]


class Registries:
    """The three registries, filled from one plugin manager."""

    def __init__(self, pm: pluggy.PluginManager) -> None:
        self.plugin_manager = pm
        self.backends = BackendRegistry()
        self.sources = SourceRegistry()
        self.statistics = StatisticRegistry()
        hooks = (
            ("snapcore_register_backends", self.backends),
            ("snapcore_register_sources", self.sources),
            ("snapcore_register_statistics", self.statistics),
        )
        for hookname, registry in hooks:
            caller = getattr(pm.hook, hookname)
            # Call plugin by plugin so a duplicate names both plugins.
            for impl in caller.get_hookimpls():
                registry._current_plugin = impl.plugin_name
                impl.function(registry)
            registry._current_plugin = "<direct>"


def _check_entry_point_names() -> None:
    """Refuse two entry points with one name but different targets.

    pluggy keeps the first entry point of a name and silently skips the others, so
    a third-party plugin named like a built-in (``sources``) would replace it, or be
    dropped, depending on ``sys.path`` order.  The same target seen twice (one
    distribution found on two paths) is fine.
    """
    import importlib.metadata

    seen: dict[str, tuple[str, str]] = {
        name: ("snapcore (built-in)", modname) for name, modname in BUILTIN_PLUGINS.items()
    }
    for dist in importlib.metadata.distributions():
        for ep in dist.entry_points:
            if ep.group != hookspecs.PROJECT_NAME:
                continue
            where = f"{dist.metadata['Name']} ({ep.value})"
            first = seen.setdefault(ep.name, (where, ep.value))
            if first[1] != ep.value:
                raise PluginError(
                    f"plugin name {ep.name!r} is declared twice: by {first[0]} and by {where}"
                )


def make_plugin_manager(
    *, entry_points: bool = True, builtins: bool = True, plugins: Sequence[object] = ()
) -> pluggy.PluginManager:
    """A plugin manager with snapcore's hooks and its plugins registered.

    Parameters
    ----------
    entry_points : bool
        Load plugins from the ``snapcore`` entry-point group.
    builtins : bool
        Register the built-in plugins not already loaded from entry points.
    plugins : sequence of objects
        More plugins (modules or objects with ``@hookimpl`` methods) to register.

    Raises
    ------
    PluginError
        If a plugin implements a ``snapcore_*`` hook that does not exist (a misspelt
        hook would otherwise be silently ignored); the message names the hook.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    if entry_points:
        _check_entry_point_names()
        pm.load_setuptools_entrypoints(hookspecs.PROJECT_NAME)
    if builtins:
        for name, modname in BUILTIN_PLUGINS.items():
            module: ModuleType = importlib.import_module(modname)
            if pm.get_plugin(name) is None and not pm.is_registered(module):
                pm.register(module, name=name)
    for plugin in plugins:
        pm.register(plugin)
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"a plugin implements a hook snapcore does not have ({exc}); snapcore's hooks "
            f"are {_hook_names()}"
        ) from None
    return pm


def _hook_names() -> list[str]:
    return [n for n in vars(hookspecs) if n.startswith(f"{hookspecs.PROJECT_NAME}_")]


_lock = threading.Lock()
_registries: Registries | None = None


def get_registries() -> Registries:
    """The process-wide registries, built on first use (thread-safe)."""
    global _registries
    reg = _registries
    if reg is None:
        with _lock:
            if _registries is None:
                _registries = Registries(make_plugin_manager())
            reg = _registries
    return reg


def reset() -> None:
    """Forget the process-wide registries; the next use rediscovers plugins."""
    global _registries
    with _lock:
        _registries = None
