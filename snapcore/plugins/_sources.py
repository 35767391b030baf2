"""The built-in plugin ``sources``: the operating system's source and the reproducible
seeded and replay sources (:mod:`snapcore.randomness`), registered through the same entry
point group as a third-party plugin."""

from __future__ import annotations

from snapcore.plugins._hookspecs import hookimpl
from snapcore.plugins._registries import SourceRegistry
from snapcore.randomness._sources import ReplaySource, SeededSource, SystemSource


@hookimpl
def snapcore_register_sources(registry: SourceRegistry) -> None:
    registry.add("system", SystemSource)
    registry.add("seeded", SeededSource)
    registry.add("replay", ReplaySource)
