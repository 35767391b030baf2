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
    )
    from snapcore.randomness._draw import (
        decode_draw as decode_draw,
    )
    from snapcore.randomness._draw import (
        draw_from_u as draw_from_u,
    )
    from snapcore.randomness._draw import (
        encode_draw as encode_draw,
    )
    from snapcore.randomness._sources import (
        ByteSource as ByteSource,
    )
    from snapcore.randomness._sources import (
        RandomSource as RandomSource,
    )
    from snapcore.randomness._sources import (
        ReplaySource as ReplaySource,
    )
    from snapcore.randomness._sources import (
        SeededSource as SeededSource,
    )
    from snapcore.randomness._sources import (
        SystemSource as SystemSource,
    )

__getattr__, __dir__ = attach(__name__, __file__)
