"""The fused loop's threads (``FastEngine.run_stream``): the same bits for every number.

Each check releases one array at ``threads`` = 1, 2, 3 and 4 from sources that give
the same stream, and compares every output with the exact pipeline run element by
element on the draws the scalar decoder reads from that stream (an independent
reference), then checks that each release left its source at the same stream
position.  The streams: the seeded test source, ChaCha20 with a fixed key (its
``reserve`` path: each thread produces its own chunks' keystream), and crafted
streams with planted near-ties (exact fallbacks) and continuation rows (a draw whose
exponent continues past its first word), read in turn by a source that reserves and
by one that does not.  Chunks and rounds are made small so that a few hundred draws
span many chunks, rounds and threads.
"""

from __future__ import annotations

import io
import random
from fractions import Fraction

import gmpy2
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from snapcore import SnappingMechanism
from snapcore.exact._dyadic import round_fraction
from snapcore.exact._sums import numba_available
from snapcore.pipeline import _engine
from snapcore.pipeline._engine import release_batch
from snapcore.randomness._chacha import ChaCha20Source
from snapcore.randomness._draw import Draw, encode_draw
from snapcore.randomness._sources import ByteSource, SeededSource
from snapcore.testing.sources import FixedBytes

pytestmark = pytest.mark.skipif(not numba_available(), reason="the fused loop is compiled")

THREADS = [1, 2, 3, 4]
#: (mechanism keywords, value range): the table output stage, and the certified
#: double-double output stage (Δ a double, a wide interval).
SETTINGS = [
    (dict(epsilon=1.0, clamp_bounds=(0.0, 100.0)), (-20.0, 120.0)),
    (dict(epsilon=1.5, clamp_bounds=(-123456.75, 987654.3), sensitivity=0.7), (-2e5, 1.1e6)),
]
KEY = bytes(range(7, 39)) + bytes.fromhex("000000090000004a00000000")


class Reservable(ByteSource):
    """The bytes ``data`` in order, and the optional capability ``reserve`` over them
    (a test double: a stream that can be produced from any position)."""

    name = "reservable-bytes"

    def __init__(self, data: bytes) -> None:
        super().__init__()
        self.data = bytes(data)
        self.position = 0
        self.reserved = 0

    def read(self, n: int) -> bytes:
        out = self.data[self.position : self.position + n]
        assert len(out) == n, "read past the end of the stream"
        self.position += n
        return out

    def reserve(self, n: int):
        start = self.position
        self.position += n
        self.reserved += 1
        assert self.position <= len(self.data), "reserved past the end of the stream"

        def fill(offset: int, buffer) -> None:
            mv = memoryview(buffer).cast("B")
            assert offset >= 0 and offset + len(mv) <= n
            mv[:] = self.data[start + offset : start + offset + len(mv)]

        return fill


def _identical(a: np.ndarray, b: np.ndarray) -> bool:
    return a.dtype == b.dtype and np.array_equal(a.view(np.int64), b.view(np.int64))


def _exact(mech: SnappingMechanism, values: np.ndarray, draws: list[Draw]) -> np.ndarray:
    pipe = mech.pipeline
    return np.array(
        [pipe.run(pipe.centre(Fraction(float(v))), d) for v, d in zip(values, draws, strict=True)],
        dtype=np.float64,
    )


def _near_tie(mech: SnappingMechanism, v: float, k: int, sigma: int, j: int) -> Draw:
    """A draw putting ``y`` within about ``2**-j``·Λ of the tie ``(k + 1/2)·Λ`` (MPFR
    at 400 bits, rounded once to p bits)."""
    x = Fraction(*mech.pipeline.centre(Fraction(v)))
    target = (k + Fraction(1, 2) + sigma * Fraction(1, 2**j)) * mech.granularity
    nstar = target - x
    ctx = gmpy2.context(precision=400)
    u = ctx.exp(ctx.div(-gmpy2.mpq(abs(nstar)), gmpy2.mpq(mech.scale)))
    m, e = round_fraction(Fraction(*u.as_integer_ratio()), mech.precision)
    return Draw(sign=-1 if nstar > 0 else 1, mantissa=m, exponent=e)


def _crafted(
    mech: SnappingMechanism, values: np.ndarray, ties: set[int], conts: set[int], seed: int
) -> bytes:
    """A stream of ``len(values)`` draws: near-ties at ``ties``, draws whose exponent
    continues past the first word (e > 63) at ``conts``, ordinary draws elsewhere;
    then a few spare bytes."""
    p = mech.precision
    rng = random.Random(seed)
    parts = []
    for i, v in enumerate(values):
        if i in ties:
            x = Fraction(*mech.pipeline.centre(Fraction(float(v))))
            k = round(x / mech.granularity) + rng.randint(-2, 2)
            d = _near_tie(mech, float(v), k, rng.choice([-1, 1]), 110)
        else:
            e = rng.randint(64, 200) if i in conts else rng.randint(1, 6)
            m = (1 << (p - 1)) | rng.getrandbits(p - 1)
            d = Draw(sign=rng.choice([-1, 1]), mantissa=m, exponent=-(p - 1) - e)
        parts.append(encode_draw(d, p))
    return b"".join(parts) + bytes(rng.getrandbits(8) for _ in range(40))


def _release_all(mech, values, make_source, threads_list=THREADS):
    """``(output, stats, the next 24 stream bytes)`` of a release at each thread count,
    each from a fresh source."""
    out = {}
    for t in threads_list:
        src = make_source()
        got, stats = release_batch(mech.pipeline, values, src, stats=True, threads=t)
        out[t] = (got, stats, src.read(24))
    return out


def _check(mech, values, make_source, reference_source, label):
    runs = _release_all(mech, values, make_source)
    ref_src = reference_source()
    ref = _exact(mech, values, ref_src.draws(values.size, mech.precision))
    after = ref_src.read(24)
    first = runs[1][1]
    for t, (got, stats, tail) in runs.items():
        bad = np.flatnonzero(got.view(np.int64) != ref.view(np.int64))
        assert bad.size == 0, f"{label} threads={t}: {bad.size} mismatches, first {bad[:3]}"
        assert tail == after, f"{label} threads={t}: the stream position differs"
        for name in ("fallback_k", "fallback_output"):
            idx = getattr(stats, name)
            assert np.all(np.diff(idx) > 0), f"{label} threads={t}: {name} not in element order"
            assert np.array_equal(idx, getattr(first, name)), f"{label} threads={t}: {name}"
    return first


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n=st.integers(1, 400),
    chunk=st.integers(1, 40),
    rounds=st.integers(1, 6),
    setting=st.sampled_from(range(len(SETTINGS))),
    kind=st.sampled_from(["seeded", "chacha20", "crafted", "crafted-reservable"]),
    seed=st.integers(0, 2**32),
)
def test_same_bits_for_every_thread_count(n, chunk, rounds, setting, kind, seed):
    """Arrays of 1 to 400 values, chunks of 1 to 40 draws, rounds of 1 to 6 chunks:
    at 1, 2, 3 and 4 threads, every output equals the exact pipeline's on the scalar
    decoder's draws, the source ends at the same position, and the fallbacks are the
    same, in element order."""
    kw, vrange = SETTINGS[setting]
    mech = SnappingMechanism(**kw)
    values = np.random.default_rng(seed).uniform(*vrange, n)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_engine.FastEngine, "STREAM_CHUNK", chunk)
        mp.setattr(_engine.FastEngine, "ROUND_CHUNKS", rounds)
        if kind == "seeded":
            _check(mech, values, lambda: SeededSource(seed), lambda: SeededSource(seed), kind)
        elif kind == "chacha20":
            key = random.Random(seed).randbytes(44)

            def make() -> ChaCha20Source:
                return ChaCha20Source(reader=io.BytesIO(key).read)

            _check(mech, values, make, make, kind)
        else:
            rng = random.Random(seed)
            ties = set(rng.sample(range(n), min(n, 3)))
            conts = set(rng.sample(range(n), min(n, 3))) - ties
            data = _crafted(mech, values, ties, conts, seed)
            source = Reservable if kind == "crafted-reservable" else FixedBytes
            stats = _check(mech, values, lambda: source(data), lambda: FixedBytes(data), kind)
            assert conts <= set(stats.fallback_k.tolist())  # computed exactly


@pytest.mark.parametrize("source", [FixedBytes, Reservable])
@pytest.mark.parametrize("setting", range(len(SETTINGS)))
def test_planted_continuations_and_fallbacks_in_many_chunks(source, setting):
    """Chunks of 16 draws, rounds of 4 chunks, 1,000 draws: continuation rows in the
    middle of chunks (and a chunk's first and last row, and the last draw), near-ties
    in many chunks and 50 in a row.  Every thread count gives the exact pipeline's
    outputs, reads the same bytes, and lists the same fallbacks in element order;
    every near-tie and every continuation is among them."""
    kw, vrange = SETTINGS[setting]
    mech = SnappingMechanism(**kw)
    n = 1000
    values = np.random.default_rng(3).uniform(*vrange, n)
    conts = {7, 40, 41, 64 + 8, 64 * 3 + 15, 64 * 3 + 16, 500, 777, n - 1}
    # a dense block of near-ties: more fallbacks than a thread's buffer takes at once
    ties = ({3, 100, 230, 333, 610, 901} | set(range(400, 450))) - conts
    data = _crafted(mech, values, ties, conts, seed=11)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(_engine.FastEngine, "STREAM_CHUNK", 16)
        mp.setattr(_engine.FastEngine, "ROUND_CHUNKS", 4)
        stats = _check(mech, values, lambda: source(data), lambda: FixedBytes(data), "planted")
    fallbacks = set(stats.fallback_k.tolist()) | set(stats.fallback_output.tolist())
    assert conts <= set(stats.fallback_k.tolist())
    assert ties <= fallbacks, sorted(ties - fallbacks)
    assert len({i // 16 for i in fallbacks}) >= 10  # fallbacks in many chunks


def test_threads_share_a_round_and_reserve_each_round():
    """A source that reserves is asked for one reservation per round (two for a round
    of chunks and five more draws), the same at every thread count, and takes exactly
    the draws' bytes."""
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    eng = _engine.FastEngine
    n = eng.ROUND_CHUNKS * eng.STREAM_CHUNK + 5
    values = np.random.default_rng(1).uniform(0.0, 100.0, n)
    data = random.Random(2).randbytes(n * 23 + 64)
    counts = set()
    for t in THREADS:
        src = Reservable(data)
        release_batch(mech.pipeline, values, src, threads=t)
        counts.add((src.reserved, src.position))
    assert counts == {(2, n * 23)}


def test_chacha20_reserve_path_equals_read_path():
    """ChaCha20 with a fixed key: 200,003 values at 1 to 4 threads and with the
    default, against the exact pipeline on the draws read from the same keystream by
    the scalar decoder (a sample of elements) and against one another (all)."""
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    n = 200_003
    values = np.random.default_rng(4).uniform(-20.0, 120.0, n)

    def make() -> ChaCha20Source:
        return ChaCha20Source(reader=io.BytesIO(KEY).read)

    runs = _release_all(mech, values, make, [*THREADS, None])
    ref_src = make()
    draws = ref_src.draws(n, mech.precision)
    after = ref_src.read(24)
    idx = np.random.default_rng(5).choice(n, 2000, replace=False)
    ref = _exact(mech, values[idx], [draws[i] for i in idx])
    for t, (got, _stats, tail) in runs.items():
        assert _identical(got, runs[1][0]), f"threads={t}"
        assert _identical(got[idx], ref), f"threads={t}"
        assert tail == after


@pytest.mark.slow
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("kind", ["seeded", "chacha20"])
def test_million_draws_at_one_and_two_threads(kind, threads, slow_size):
    """10**6 draws (reduced in the default run): the exact pipeline's outputs on the
    scalar decoder's draws from the same stream, element for element."""
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    n = slow_size(1_000_000, 20_000)
    values = np.random.default_rng(n).uniform(-20.0, 120.0, n)

    def make() -> ByteSource:
        if kind == "seeded":
            return SeededSource(n)
        return ChaCha20Source(reader=io.BytesIO(KEY).read)

    src = make()
    got = release_batch(mech.pipeline, values, src, threads=threads)
    ref_src = make()
    ref = _exact(mech, values, ref_src.draws(n, mech.precision))
    assert _identical(got, ref)
    assert src.read(24) == ref_src.read(24)
