"""Child-process bodies for the ledger's race and kill tests (started with ``spawn``,
so they live in an importable module)."""

from __future__ import annotations

import os
import signal
from fractions import Fraction
from typing import Any

import snapcore
from snapcore.randomness._sources import SeededSource

DATA = [float(v) for v in range(20)]


def release_or_refuse(
    budget: snapcore.Budget, data: list[float], epsilon: Fraction, upper: float, seed: int
) -> tuple[str, Any]:
    """One real sum release on [0, upper] charged to ``budget``: ``("released", value)``,
    or ``("refused", message)`` when the budget refuses it."""
    try:
        r = snapcore.release(
            "sum",
            data,
            epsilon=epsilon,
            data_bounds=(0, upper),
            budget=budget,
            source=SeededSource(seed),
        )
    except snapcore.BudgetExceededError as exc:
        return "refused", str(exc)
    return "released", r.value


def race(path: str, epsilon: Fraction, barrier: Any, results: Any, i: int) -> None:
    """Wait for every racer, then try one real release charged to the ledger."""
    budget = snapcore.Budget.from_ledger(path)
    barrier.wait()
    kind, value = release_or_refuse(budget, DATA, epsilon, 20, i)
    results.put((i, "refused" if kind == "refused" else f"released {value!r}"))


class _KillingSource(SeededSource):
    """Writes ``marker`` and kills its process with SIGKILL when noise is first read."""

    def __init__(self, marker: str) -> None:
        super().__init__(0)
        self._marker = marker

    def read(self, n: int) -> bytes:
        data = super().read(n)  # the draw happens ...
        with open(self._marker, "w") as fh:  # ... is witnessed ...
            fh.write("drawn")
        os.kill(os.getpid(), signal.SIGKILL)  # ... and the process dies mid-release
        return data  # pragma: no cover


def killed(path: str, where: str, marker: str) -> None:
    """Spend 1/4 of the ledger, then die by SIGKILL at ``where``."""
    budget = snapcore.Budget.from_ledger(path)
    eps = Fraction(1, 4)
    if where == "during-draw":
        snapcore.release(
            "mean",
            DATA,
            epsilon=eps,
            data_bounds=(0, 20),
            budget=budget,
            source=_KillingSource(marker),
        )
        return  # pragma: no cover
    mech = snapcore.SnappingMechanism(
        epsilon=eps, sensitivity=1, clamp_bounds=(-10, 10), source=SeededSource(1)
    )
    with budget.reserve(eps, label=where):
        if where == "after-draw":
            mech.release(3)
        with open(marker, "w") as fh:
            fh.write(where)
        os.kill(os.getpid(), signal.SIGKILL)


def run_race(
    path: str, racers: int, epsilon: Fraction, timeout: float
) -> tuple[dict[int, str], list[int]]:
    """Start ``racers`` spawned :func:`race` processes on the ledger at ``path``, each
    exiting cleanly; return every racer's outcome by index and the pids of those that
    released."""
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(racers)
    results = spawn.Queue()
    procs = [
        spawn.Process(target=race, args=(path, epsilon, barrier, results, i))
        for i in range(racers)
    ]
    for p in procs:
        p.start()
    outcomes = dict(results.get(timeout=timeout) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    pids = [p.pid for p in procs]
    released = [pids[i] for i, o in outcomes.items() if o.startswith("released")]
    assert all(pid is not None for pid in released)
    return outcomes, [pid for pid in released if pid is not None]


def run_killed(path: str, folder: str, timeout: float = 120) -> set[int]:
    """Start one spawned :func:`killed` process on the ledger at ``path`` for each place
    of death (markers written in ``folder``); check each died by SIGKILL after reaching
    that place, and return their pids."""
    import multiprocessing

    spawn = multiprocessing.get_context("spawn")
    procs = []
    for where in ("after-commit", "during-draw", "after-draw"):
        marker = os.path.join(folder, f"{where}.marker")
        p = spawn.Process(target=killed, args=(path, where, marker))
        p.start()
        procs.append((marker, p))
    for marker, p in procs:
        p.join(timeout=timeout)
        assert p.exitcode == -9  # killed by SIGKILL
        assert os.path.exists(marker)  # it got to the point of death
    pids = {p.pid for _, p in procs}
    assert None not in pids
    return {pid for pid in pids if pid is not None}
