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
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, NamedTuple

import pluggy

from snapcore.data._values import type_name
from snapcore.errors import ParameterError, PluginError, show
from snapcore.plugins import _hookspecs as hookspecs
from snapcore.plugins._registries import (
    BackendRegistry,
    Registry,
    SourceRegistry,
    StatisticRegistry,
)
from snapcore.plugins._statistic import Statistic

__all__ = [
    "BUILTIN_PLUGINS",
    "BUILTIN_PROVIDES",
    "Registries",
    "get_registries",
    "lazy_registries",
    "make_plugin_manager",
    "reset",
    "resolve_statistic",
]

#: Built-in plugins: entry-point name -> module.  ``pyproject.toml`` declares the
#: same pairs as entry points (a test checks that the two agree).
BUILTIN_PLUGINS: dict[str, str] = {
    "mpfr": "snapcore.backends.mpfr",
    "mpmath": "snapcore.backends.mpmath_backend",
    "arb": "snapcore.backends.arb",
    "sources": "snapcore.plugins._sources",
    "counting": "snapcore.statistics.counting",
    "moments": "snapcore.statistics.moments",
    "fast": "snapcore.backends.fast",
    "chacha20": "snapcore.plugins._chacha20",
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
        self.backends = BackendRegistry(self._load_plugin)
        self.sources = SourceRegistry(self._load_plugin)
        self.statistics = StatisticRegistry(self._load_plugin)
        self._lock = threading.RLock()
        self._lazy = dict(lazy or {})
        self._call_hooks(None)
        for plugin, (_, provides) in self._lazy.items():
            for kind, names in provides.items():
                registry = self._registry(kind)
                for name in names:
                    registry.declare(name, plugin)

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
                    with registry.registering(impl.plugin_name):
                        impl.function(registry)

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
                missing = self._registry(kind).declared_by(plugin)
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
    matched exactly), so its distribution is skipped; the others are parsed as
    ``importlib.metadata`` parses them and returned as light objects with
    ``entry_points`` and ``metadata`` (:class:`_MetadataFolder`), so the usual start-up
    never imports ``importlib.metadata``.  Any finder with ``find_distributions`` but
    ``PathFinder``, a ``PathFinder`` without it, a ``sys.path`` entry that is a file (a
    zip archive) or not a string, an unreadable folder or file, or a file that is not
    UTF-8 or has a line in a group without ``=`` make it return None.
    """
    import os
    import sys
    from importlib.machinery import PathFinder

    finders = [f for f in sys.meta_path if getattr(f, "find_distributions", None)]
    if finders != [PathFinder]:  # another finder, or none (the importlib_metadata backport
        return None  # takes PathFinder's away and adds its own)
    folders: list[str] = []
    parsed: dict[str, list[_EntryPoint]] = {}
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
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                return None  # importlib.metadata raises; let it
            if hookspecs.PROJECT_NAME.encode() in raw:
                eps = _parse_entry_points(text)
                if eps is None:
                    return None  # a line importlib.metadata cannot parse: let it raise
                folders.append(folder)
                parsed[folder] = eps
    import pathlib

    return [_MetadataFolder(pathlib.Path(f), parsed[f]) for f in folders]


class _EntryPoint(NamedTuple):
    name: str
    value: str
    group: str


class _MetadataFolder:
    """One metadata folder found by :func:`_declaring_distributions`: its entry points
    parsed from the text already read, as ``importlib.metadata`` parses them (its
    ``Sectioned`` format: stripped lines, ``#`` comments, ``[group]`` headers, ``name =
    value`` split at the first ``=``), so the common start-up never imports
    ``importlib.metadata``; :attr:`metadata` reads the folder's metadata with it, for
    an error message only."""

    def __init__(self, path: Any, entry_points: list[_EntryPoint]) -> None:
        self._path = path
        self.entry_points = entry_points

    @property
    def metadata(self) -> Any:
        import importlib.metadata

        return importlib.metadata.PathDistribution(self._path).metadata


def _parse_entry_points(text: str) -> list[_EntryPoint] | None:
    """The entry points of an ``entry_points.txt``; None for a line in a group without
    ``=``."""
    out = []
    group: str | None = None
    for line in map(str.strip, text.splitlines()):
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            group = line.strip("[]")
            continue
        if group is None:
            continue
        if "=" not in line:
            return None
        name, _, value = line.partition("=")
        out.append(_EntryPoint(name.strip(), value.strip(), group))
    return out


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


def resolve_statistic(statistic: Any) -> Statistic:
    """``statistic`` itself, an instance of a Statistic subclass, or the registered
    statistic of that name."""
    if isinstance(statistic, Statistic):
        return statistic
    if isinstance(statistic, type) and issubclass(statistic, Statistic):
        return statistic()
    reg = get_registries().statistics
    if isinstance(statistic, str):
        st: Statistic = reg.get(statistic)
        return st
    raise ParameterError(
        f"statistic must be a statistic name {reg.names()} or a Statistic, got "
        f"{type_name(statistic)} {show(statistic)}",
        parameter="statistic",
    )
