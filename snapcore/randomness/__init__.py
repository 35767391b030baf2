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
        ChaCha20Source as ChaCha20Source,
    )
    from snapcore.randomness._draw import (
        Draw as Draw,
        decode_draw as decode_draw,
        draw_from_u as draw_from_u,
        encode_draw as encode_draw,
    )
    from snapcore.randomness._sources import (
        ByteSource as ByteSource,
        RandomSource as RandomSource,
        ReplaySource as ReplaySource,
        SeededSource as SeededSource,
        SystemSource as SystemSource,
    )

__getattr__, __dir__ = attach(__name__, __file__)
