"""The registries of backends, sources and statistics: name -> object, refusing
duplicates, with names declared by plugins not imported yet."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from snapcore.errors import BackendUnavailableError, ParameterError, PluginError, parameter_name

if TYPE_CHECKING:
    from snapcore.pipeline._backend import Backend
    from snapcore.plugins._statistic import Statistic
    from snapcore.randomness._sources import RandomSource

__all__ = ["BackendRegistry", "Registry", "SourceRegistry", "StatisticRegistry"]

T = TypeVar("T")


class Registry(Generic[T]):
    """Name -> object, refusing duplicates; lookups name the valid choices."""

    kind = "plugin"

    def __init__(self, loader: Callable[[str], None] | None = None) -> None:
        self._items: dict[str, T] = {}
        self._origin: dict[str, str] = {}
        self._current_plugin = "<direct>"
        # Declared by a plugin not imported yet: name -> plugin name (see Registries).
        self._declared: dict[str, str] = {}
        self._loader = loader

    @contextlib.contextmanager
    def registering(self, plugin: str) -> Iterator[None]:
        """Within this block, names added are recorded as registered by ``plugin``."""
        self._current_plugin = plugin
        try:
            yield
        finally:
            self._current_plugin = "<direct>"

    def declared_by(self, plugin: str) -> list[str]:
        """Names ``plugin`` declared that it has not registered yet."""
        return [n for n, p in self._declared.items() if p == plugin]

    def _add(self, name: str, item: T) -> None:
        if not isinstance(name, str) or not name:
            raise PluginError(f"{self.kind} name must be a non-empty string, got {name!r}")
        if name in self._items or self._declared.get(name) not in (None, self._current_plugin):
            raise self._twice(name, self._current_plugin)
        self._items[name] = item
        self._origin[name] = self._current_plugin
        self._declared.pop(name, None)

    def declare(self, name: str, plugin: str) -> None:
        """Know ``name`` as provided by ``plugin``, which is imported on first use."""
        if name in self:
            raise self._twice(name, plugin)
        self._declared[name] = plugin

    def _twice(self, name: str, plugin: str) -> PluginError:
        """The error for ``plugin`` taking ``name``, which another plugin has."""
        return PluginError(
            f"{self.kind} {name!r} is registered twice: by {self.origin(name)} and by {plugin}"
        )

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
            import difflib  # here: only a refused name needs a suggestion

            near = (
                difflib.get_close_matches(name.lower(), self.names(), n=1, cutoff=0.6)
                if isinstance(name, str)
                else []
            )
            hint = f"; did you mean {near[0]!r}?" if near else ""
            raise ParameterError(
                f"{parameter_name(self.kind)} must be one of {self.names()}, got {name!r}{hint}",
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
    """Registry of :class:`snapcore.Backend` classes, keyed by ``Backend.name``."""

    kind = "backend"

    def __init__(self, loader: Callable[[str], None] | None = None) -> None:
        super().__init__(loader)
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
