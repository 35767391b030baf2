"""Plugin discovery and the registries of backends, sources and statistics.

Discovery order is fixed and never decides anything: entry points of the
``snapcore`` group are loaded first, then any built-in plugin that is not yet
registered (so the built-ins are there even when the entry-point metadata is stale or
entry points are switched off).  The process-wide registries (:func:`get_registries`)
know the built-ins' names from :data:`BUILTIN_PROVIDES` and import a built-in plugin
only when one of its names is first used, so a release with MPFR never imports the
other backends or the statistics it does not use.  snapcore itself must be installed
(``pip install -e .`` for a checkout): its plugin packages ``snapcore.backends`` and
``snapcore.statistics`` are mapped from other folders by the install.  Selection is
always by explicit name; a name registered twice is an error, and so is a hook
implementation whose name is not one of snapcore's hooks.
"""

from __future__ import annotations

import importlib
import re
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
    "BUILTIN_PROVIDES",
    "BackendRegistry",
    "Registries",
    "Registry",
    "SourceRegistry",
    "StatisticRegistry",
    "get_registries",
    "lazy_registries",
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

#: What each built-in plugin registers, by kind, so the process-wide registries know
#: every name without importing the plugin (it is imported when one of its names is
#: first used).  A test checks that loading each plugin registers exactly these.
BUILTIN_PROVIDES: dict[str, dict[str, tuple[str, ...]]] = {
    "mpfr": {"backends": ("mpfr",)},
    "mpmath": {"backends": ("mpmath",)},
    "arb": {"backends": ("arb",)},
    "fast": {"backends": ("fast",)},
    "sources": {"sources": ("replay", "seeded", "system")},
    "chacha20": {"sources": ("chacha20",)},
    "counting": {"statistics": ("count", "histogram")},
    "moments": {"statistics": ("covariance", "mean", "sum", "variance")},
}

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> object, refusing duplicates; lookups name the valid choices."""

    kind = "plugin"

    def __init__(self) -> None:
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._current_plugin = "<direct>"
        # Declared by a plugin not imported yet: name -> plugin name (see Registries).
        self._declared: dict[str, str] = {}
        self._loader: Callable[[str], None] | None = None

    def _add(self, name: str, item: T) -> None:
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.kind} name must be a non-empty string, got {name!r}")
        declared_by = self._declared.get(name)
        if name in self._items or declared_by not in (None, self._current_plugin):
            first = self._origin[name] if name in self._items else declared_by
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by {first} "
                f"and by {self._current_plugin}"
            )
        self._items[name] = item
        self._origin[name] = self._current_plugin
        self._declared.pop(name, None)

    def _declare(self, name: str, plugin: str) -> None:
        """Know ``name`` as provided by ``plugin``, which is imported on first use."""
        if name in self._items or name in self._declared:
            first = self._origin.get(name) or self._declared[name]
            raise PluginError(
                f"{self.kind} {name!r} is registered twice: by {first} and by {plugin}"
            )
        self._declared[name] = plugin

    def _load(self, name: object) -> None:
        plugin = self._declared.get(name) if isinstance(name, str) else None
        if plugin is not None and self._loader is not None:
            self._loader(plugin)

    def get(self, name: str) -> T:
        """The object registered as ``name`` (importing its plugin on first use).

        Raises
        ------
        ParameterError
            If nothing is registered under that name.
        """
        self._load(name)
        try:
            return self._items[name]
        except (KeyError, TypeError):
            raise ParameterError(
                f"{parameter_name(self.kind)} must be one of {self.names()}, got {name!r}",
                parameter=self.kind,
            ) from None

    def names(self) -> list[str]:
        """Registered names, sorted (without importing any plugin)."""
        return sorted(self._items.keys() | self._declared.keys())

    def origin(self, name: str) -> str:
        """The plugin that registered ``name``."""
        return self._declared.get(name) or self._origin[name]

    def loaded(self, name: str) -> bool:
        """Whether the plugin providing ``name`` has been imported."""
        return name in self._items

    def __contains__(self, name: object) -> bool:
        return name in self._items or name in self._declared

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._items) + len(self._declared)


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
        """Names of the backends whose library can be imported (imports every backend
        plugin, and asks each whether its library imports)."""
        return [n for n in self.names() if self.get(n).is_available()]

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
    """The three registries, filled from one plugin manager.

    Parameters
    ----------
    pm : pluggy.PluginManager
        The plugin manager; the hooks of every plugin registered in it are called now.
    lazy : mapping, optional
        Plugins not imported yet: plugin name -> ``(module, provides)``, where
        ``provides`` maps ``"backends"``, ``"sources"``, ``"statistics"`` to the names
        the plugin registers.  Those names are known at once; the module is imported,
        registered with ``pm`` and its hooks called when one of them is first used.
    """

    def __init__(
        self,
        pm: pluggy.PluginManager,
        lazy: Mapping[str, tuple[str, Mapping[str, Sequence[str]]]] | None = None,
    ) -> None:
        self.plugin_manager = pm
        self.backends = BackendRegistry()
        self.sources = SourceRegistry()
        self.statistics = StatisticRegistry()
        self._lock = threading.RLock()
        self._lazy = dict(lazy or {})
        self._call_hooks(None)
        for plugin, (_, provides) in self._lazy.items():
            for kind, names in provides.items():
                registry = self._registry(kind)
                registry._loader = self._load_plugin
                for name in names:
                    registry._declare(name, plugin)

    def _registry(self, kind: str) -> Registry[Any]:
        registries: dict[str, Registry[Any]] = {
            "backends": self.backends,
            "sources": self.sources,
            "statistics": self.statistics,
        }
        try:
            return registries[kind]
        except KeyError:
            raise PluginError(f"unknown registry {kind!r}") from None

    def _call_hooks(self, plugin: str | None) -> None:
        """Call the registration hooks of ``plugin`` (None: of every plugin)."""
        for kind in ("backends", "sources", "statistics"):
            registry = self._registry(kind)
            caller = getattr(self.plugin_manager.hook, f"snapcore_register_{kind}")
            # Call plugin by plugin so a duplicate names both plugins.
            for impl in caller.get_hookimpls():
                if plugin is None or impl.plugin_name == plugin:
                    registry._current_plugin = impl.plugin_name
                    try:
                        impl.function(registry)
                    finally:
                        registry._current_plugin = "<direct>"

    def _load_plugin(self, plugin: str) -> None:
        """Import a declared plugin, register it with pluggy and call its hooks."""
        with self._lock:
            entry = self._lazy.get(plugin)
            if entry is None:  # loaded meanwhile
                return
            modname, provides = entry
            pm = self.plugin_manager
            module = importlib.import_module(modname)
            if pm.get_plugin(plugin) is None and not pm.is_registered(module):
                pm.register(module, name=plugin)
            _check_pending(pm)
            del self._lazy[plugin]
            self._call_hooks(plugin)
            for kind in provides:
                missing = [n for n, p in self._registry(kind)._declared.items() if p == plugin]
                if missing:
                    raise PluginError(
                        f"plugin {plugin!r} declares {kind} {missing} but did not register them"
                    )


def _normalized(name: str) -> str:
    """A distribution name as ``importlib.metadata`` groups its metadata folders (PEP 503
    normalization, dashes as underscores)."""
    return re.sub(r"[-_.]+", "-", name).lower().replace("-", "_")


def _declaring_distributions() -> Iterable[Any] | None:
    """The installed distributions whose ``entry_points.txt`` may declare the
    ``snapcore`` group (every one that does, and perhaps a few that only mention the
    word), in the order of ``importlib.metadata.distributions()``; None when that order
    cannot be followed here (then every distribution is read).

    ``importlib.metadata`` finds distributions through each finder on ``sys.meta_path``
    that has ``find_distributions``; the standard one (``PathFinder``) lists each
    ``sys.path`` folder and takes every ``*.dist-info`` and ``*.egg-info`` child, grouped
    by normalized name, then an ``EGG-INFO`` child of a ``*.egg`` folder.  This walks
    the same children and opens only their ``entry_points.txt``: a file that does not
    contain the bytes ``snapcore`` declares no entry point of the group (a group is
    matched exactly), so its distribution is skipped; the others are read by
    ``importlib.metadata`` itself.  Any finder with ``find_distributions`` but
    ``PathFinder``, a ``PathFinder`` without it, a
    ``sys.path`` entry that is a file (a zip archive) or not a string, an unreadable
    folder or file, or a file that is not UTF-8 make it return None.
    """
    import os
    import sys
    from importlib.machinery import PathFinder

    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None)]
    if finders != [PathFinder]:  # another finder, or none (the importlib_metadata backport
        return None  # takes PathFinder's away and adds its own)
    folders: list[str] = []
    for root in sys.path:
        if not isinstance(root, str):
            return None
        try:
            children = os.listdir(root or ".")
        except OSError:
            if os.path.exists(root or "."):  # a zip archive, or a folder not readable
                return None
            continue
        base = os.path.basename(root).lower()
        infos: dict[str, list[str]] = {}
        eggs: list[str] = []
        for child in children:
            low = child.lower()
            if low.endswith((".dist-info", ".egg-info")):
                name = _normalized(low.rpartition(".")[0].partition("-")[0])
                infos.setdefault(name, []).append(os.path.join(root, child))
            elif low == "egg-info" and base.endswith(".egg"):
                eggs.append(os.path.join(root, child))
        for folder in (*(f for group in infos.values() for f in group), *eggs):
            try:
                with open(os.path.join(folder, "entry_points.txt"), "rb") as fh:
                    raw = fh.read()
            except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
                continue  # as importlib.metadata: no entry points
            except OSError:
                return None
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return None  # importlib.metadata raises; let it
            if hookspecs.PROJECT_NAME.encode() in raw:
                folders.append(folder)
    if not folders:
        return []
    import importlib.metadata
    import pathlib

    return [importlib.metadata.PathDistribution(pathlib.Path(f)) for f in folders]


def _check_entry_point_names() -> dict[str, str]:
    """The ``snapcore`` entry points, name -> target, in discovery order; refuse two
    entry points with one name but different targets.

    pluggy keeps the first entry point of a name and silently skips the others, so
    a third-party plugin named like a built-in (``sources``) would replace it, or be
    dropped, depending on ``sys.path`` order.  The same target seen twice (one
    distribution found on two paths) is fine.
    """
    # name -> (the distribution declaring it, None for a built-in; its target).  The
    # distribution's name is read only for an error: its METADATA is parsed anew on
    # every read, and snapcore's own holds the whole README.
    seen: dict[str, tuple[Any, str]] = {
        name: (None, modname) for name, modname in BUILTIN_PLUGINS.items()
    }

    def where(dist: Any, target: str) -> str:
        return "snapcore (built-in)" if dist is None else f"{dist.metadata['Name']} ({target})"

    found: dict[str, str] = {}
    dists = _declaring_distributions()
    if dists is None:
        import importlib.metadata

        dists = importlib.metadata.distributions()
    for dist in dists:
        for ep in dist.entry_points:
            if ep.group != hookspecs.PROJECT_NAME:
                continue
            first = seen.setdefault(ep.name, (dist, ep.value))
            if first[1] != ep.value:
                raise PluginError(
                    f"plugin name {ep.name!r} is declared twice: by {where(*first)} and by "
                    f"{where(dist, ep.value)}"
                )
            found.setdefault(ep.name, ep.value)
    return found


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
    _check_pending(pm)
    return pm


def _check_pending(pm: pluggy.PluginManager) -> None:
    try:
        pm.check_pending()
    except pluggy.PluginValidationError as exc:
        raise PluginError(
            f"a plugin implements a hook snapcore does not have ({exc}); snapcore's hooks "
            f"are {_hook_names()}"
        ) from None


def lazy_registries() -> Registries:
    """Registries that import a built-in plugin only when one of its names is used.

    One scan of the installed entry points (:func:`_check_entry_point_names`); every
    third-party plugin is loaded through pluggy at once (its names are known only by
    calling its hooks), each built-in is declared by :data:`BUILTIN_PROVIDES` and
    imported on first use.  Names, duplicates and errors are those of
    ``Registries(make_plugin_manager())``.
    """
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    for name, target in _check_entry_point_names().items():
        if BUILTIN_PLUGINS.get(name) != target:
            pm.load_setuptools_entrypoints(hookspecs.PROJECT_NAME, name=name)
    _check_pending(pm)
    lazy = {
        name: (modname, BUILTIN_PROVIDES[name])
        for name, modname in BUILTIN_PLUGINS.items()
        if pm.get_plugin(name) is None
    }
    return Registries(pm, lazy)


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
                _registries = lazy_registries()
            reg = _registries
    return reg


def reset() -> None:
    """Forget the process-wide registries; the next use rediscovers plugins."""
    global _registries
    with _lock:
        _registries = None
