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
import sys
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


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform != "linux", reason="os.fork")
def test_system_source_buffer_dropped_in_forked_child():
    """Parent and child must not replay the same buffered bytes after a fork."""
    src = SystemSource()
    src.read(1)  # fill the buffer: the next 4095 bytes are already in memory
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # child
        try:
            os.close(r)
            os.write(w, src.read(64))
        finally:
            os._exit(0)
    os.close(w)
    child = b""
    while len(child) < 64:
        chunk = os.read(r, 64 - len(child))
        if not chunk:
            break
        child += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    parent = src.read(64)
    assert len(child) == 64
    assert child != parent  # equal with probability 2**-512 unless the buffer is shared


_HOOKS_RAN: list[int] = []
if hasattr(os, "register_at_fork"):
    # Witness for the raw fork below: CPython's fork hooks append the child's pid.
    os.register_at_fork(after_in_child=lambda: _HOOKS_RAN.append(os.getpid()))


def _collect(r: int, pid: int, size: int, timeout: float) -> bytes:
    """Up to ``size`` bytes a forked child writes to the pipe ``r`` (waiting at most
    ``timeout`` s for each piece), then the child reaped: it must have exited with 0."""
    got = b""
    try:
        while len(got) < size:
            ready, _, _ = select.select([r], [], [], timeout)
            chunk = os.read(r, size - len(got)) if ready else b""
            if not chunk:
                break
            got += chunk
    finally:
        os.close(r)
        _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    return got


def _raw_fork() -> int:
    """``fork()`` called straight from libc, as a C extension would: CPython's
    ``os.register_at_fork`` hooks do not run.  ``PyDLL`` keeps the GIL across the
    call, so the child's interpreter is consistent."""
    import ctypes

    libc = ctypes.PyDLL(None)
    libc.fork.restype = ctypes.c_int
    libc.fork.argtypes = []
    return int(libc.fork())


@pytest.mark.skipif(sys.platform != "linux", reason="raw libc fork() through ctypes")
@pytest.mark.parametrize("make", [ChaCha20Source, SystemSource], ids=["chacha20", "system"])
def test_raw_fork_bypassing_the_hooks_shares_no_noise(make):
    src = make()
    src.read(1)  # the next bytes are already buffered in this process
    r, w = os.pipe()
    pid = _raw_fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            signal.alarm(20)
            os.close(r)
            hooks = b"1" if _HOOKS_RAN and _HOOKS_RAN[-1] == os.getpid() else b"0"
            os.write(w, hooks + src.read(64))
        finally:
            os._exit(0)
    assert pid > 0
    os.close(w)
    got = _collect(r, pid, 65, 20)
    assert len(got) == 65
    hooks, child = got[:1], got[1:]
    assert hooks == b"0"  # the fork really bypassed CPython's hooks
    parent = src.read(64)
    assert child != parent  # equal with probability 2**-512 unless the buffer is shared


@pytest.mark.parametrize("raw", [False, True], ids=["os.fork", "raw-fork"])
def test_child_reserves_fresh_keystream_and_releases_on_threads(raw):
    """After the parent released an array on two threads (its thread pool and its
    reservations), a forked child (through CPython or straight from libc) reserves
    keystream that is not the parent's, and releases an array on two threads of its
    own without hanging."""
    import numpy as np

    from snapcore import SnappingMechanism
    from snapcore.exact._sums import numba_available
    from snapcore.pipeline._engine import release_batch

    if raw and sys.platform != "linux":
        pytest.skip("raw libc fork() through ctypes")
    mech = SnappingMechanism(epsilon=1.0, clamp_bounds=(0.0, 100.0))
    values = np.linspace(0.0, 100.0, 70_000)
    src = ChaCha20Source()
    release_batch(mech.pipeline, values, src, threads=2)
    src.read(3)  # buffered bytes a child must not reuse either
    r, w = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
        pid = _raw_fork() if raw else os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        try:
            signal.alarm(60)
            os.close(r)
            with src.exclusive():
                fill = src.reserve(64)
            mine = bytearray(64)
            fill(0, mine)
            out = release_batch(mech.pipeline, values, src, threads=2)
            ok = b"1" if numba_available() and 0.0 <= out.min() <= out.max() <= 100.0 else b"0"
            os.write(w, ok + bytes(mine))
        finally:
            os._exit(0)
    os.close(w)
    got = _collect(r, pid, 65, 60)
    assert len(got) == 65, "the child did not finish its release"
    assert got[:1] == b"1"
    with src.exclusive():
        fill = src.reserve(64)
    parent = bytearray(64)
    fill(0, parent)
    assert got[1:] != bytes(parent)  # equal with probability 2**-512 unless shared
