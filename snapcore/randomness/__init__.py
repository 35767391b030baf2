"""Layer 4, randomness: the source contract (:class:`RandomSource`,
:class:`ByteSource`), the draw (:class:`Draw`) and its byte format, which turns bytes
into a p-bit uniform and a sign (one draw at a time or in batches), and the built-in
sources: the default :class:`ChaCha20Source`, the operating system's
:class:`SystemSource`, and the reproducible :class:`SeededSource` and
:class:`ReplaySource`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from snapcore._lazy import attach

if TYPE_CHECKING:
    from snapcore.randomness._chacha import (
        ChaCha20Source,
    )
    from snapcore.randomness._draw import (
        Draw,
        decode_draw,
        draw_from_u,
        encode_draw,
    )
    from snapcore.randomness._sources import (
        ByteSource,
        RandomSource,
        ReplaySource,
        SeededSource,
        SystemSource,
    )

__getattr__, __dir__ = attach(
    __name__,
    {
        "_draw": ["Draw", "decode_draw", "draw_from_u", "encode_draw"],
        "_sources": [
            "ByteSource",
            "RandomSource",
            "ReplaySource",
            "SeededSource",
            "SystemSource",
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
