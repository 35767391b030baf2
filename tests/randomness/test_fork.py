"""Randomness sources across fork(): no deadlock, no shared noise.

A child forked while another thread of the parent holds a source's lock must still
be able to draw (the lock is replaced in the child), and parent and child must never
produce the same bytes (the child re-keys or drops its buffer).  Every wait has a
timeout, so a deadlock fails the test instead of hanging it.
"""

from __future__ import annotations

import os
import select
import signal
import threading
import time
import warnings

import pytest

from snapcore.randomness._chacha import ChaCha20Source
from snapcore.randomness._sources import ByteSource, SystemSource

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

N_BYTES = 32


def _child_bytes(src: ByteSource, timeout: float) -> bytes | None:
    """Fork; the child reads N_BYTES from ``src`` under its lock and sends them.
    Returns them, or None if the child did not answer within ``timeout``."""
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            signal.alarm(int(timeout) + 5)  # the child never outlives the test
            os.close(r)
            with src.exclusive():
                data = src.read(N_BYTES)
            os.write(w, data)
        finally:
            os._exit(0)
    os.close(w)
    try:
        ready, _, _ = select.select([r], [], [], timeout)
        data = os.read(r, N_BYTES) if ready else b""
    finally:
        os.close(r)
        deadline = time.monotonic() + timeout
        while os.waitpid(pid, os.WNOHANG) == (0, 0):
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                break
            time.sleep(0.001)
    return data if len(data) == N_BYTES else None


@pytest.mark.parametrize("make", [ChaCha20Source, SystemSource], ids=["chacha20", "system"])
def test_fork_while_another_thread_draws(make):
    src = make()
    stop = threading.Event()

    def drawing() -> None:
        while not stop.is_set():
            src.draw(118)

    thread = threading.Thread(target=drawing, daemon=True)
    thread.start()
    children: list[bytes] = []
    parent: list[bytes] = []
    hung = 0
    try:
        for _ in range(200):
            got = _child_bytes(src, timeout=5.0)
            if got is None:
                hung += 1
                continue
            children.append(got)
            with src.exclusive():
                parent.append(src.read(N_BYTES))
    finally:
        stop.set()
        thread.join(10)
    assert hung == 0, f"{hung} of 200 children could not draw (deadlocked on the lock)"
    # every child drew fresh bytes: none equal to each other or to the parent's
    assert len(set(children)) == 200
    assert not set(children) & set(parent)


def test_chacha20_child_rekeys_and_parent_stream_continues():
    """The child's stream is not the parent's continuation (same position, other
    bytes), and the parent's stream is unaffected by the fork."""
    src = ChaCha20Source()
    src.read(5)  # leave buffered bytes behind, as a real parent would
    for _ in range(20):
        child = _child_bytes(src, timeout=5.0)
        assert child is not None
        with src.exclusive():
            mine = src.read(N_BYTES)
        assert child != mine


def _keyed(key: bytes, nonce: bytes) -> ChaCha20Source:
    src = ChaCha20Source()
    src._enc = src._Cipher(src._algorithms.ChaCha20(key, nonce), mode=None).encryptor()
    src._buf, src._pos = b"", 0
    return src


def test_chacha20_readinto_is_read():
    """In-place reads give the stream's bytes in order, mixed with buffered reads;
    the stream is RFC 8439's ChaCha20 (the reference is cryptography's keystream
    read in one piece, checked against the RFC's own vector)."""
    import numpy as np

    key = bytes(range(32))
    nonce = (1).to_bytes(4, "little") + bytes.fromhex("000000000000004a00000000")
    ref = _keyed(key, nonce)._enc.update(bytes(300_000))
    assert ref[:16].hex() == "224f51f3401bd9e12fde276fb8631ded"  # RFC 8439 §2.4.2
    src = _keyed(key, nonce)
    got = bytearray()
    for n in (3, 70_000, 5, 1, 100_000, 64, 129_927):
        if n % 2:
            got += src.read(n)
        else:
            buf = np.empty(n, np.uint8)
            src.readinto(buf)
            got += buf.tobytes()
    assert bytes(got) == ref


def test_chacha20_rekeys_after_the_limit(monkeypatch):
    import snapcore.randomness._chacha as chacha

    monkeypatch.setattr(chacha, "REKEY_BYTES", 1 << 16)
    src = ChaCha20Source()
    seen = {id(src._enc)}
    encs = [src._enc]  # keep them alive so ids stay distinct
    for _ in range(10):
        src.read(40_000)
        encs.append(src._enc)
        seen.add(id(src._enc))
        assert src._produced <= 1 << 16
    assert len(seen) >= 5
