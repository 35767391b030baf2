"""Layer 4, randomness: the source contract (:class:`RandomSource`,
:class:`ByteSource`), the draw format that turns bytes into a p-bit uniform and a sign
(:class:`Draw`), and the built-in sources: the default :class:`ChaCha20Source`, the
operating system's :class:`SystemSource`, and the reproducible :class:`SeededSource`
and :class:`ReplaySource`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.randomness._chacha import (
        ChaCha20Source,
    )
    from snapcore.randomness._sources import (
        ByteSource,
        Draw,
        RandomSource,
        ReplaySource,
        SeededSource,
        SystemSource,
        decode_draw,
        draw_from_u,
        encode_draw,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_sources": [
            "ByteSource",
            "Draw",
            "RandomSource",
            "ReplaySource",
            "SeededSource",
            "SystemSource",
            "decode_draw",
            "draw_from_u",
            "encode_draw",
        ],
        "_chacha": ["ChaCha20Source"],
    },
)

__all__ = [
    "ByteSource",
    "ChaCha20Source",
    "Draw",
    "RandomSource",
    "ReplaySource",
    "SeededSource",
    "SystemSource",
    "decode_draw",
    "draw_from_u",
    "encode_draw",
]
