"""The built-in plugin ``chacha20``: the default source,
:class:`~snapcore.randomness.ChaCha20Source`, registered through the same entry point
group as a third-party plugin."""

from __future__ import annotations

from snapcore.plugins._hookspecs import hookimpl
from snapcore.plugins._registries import SourceRegistry
from snapcore.randomness._chacha import ChaCha20Source


@hookimpl
def snapcore_register_sources(registry: SourceRegistry) -> None:
    registry.add("chacha20", ChaCha20Source)
