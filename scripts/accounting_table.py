"""Print the composition tables of docs/budgets.md: every number there comes from here.

    PYTHONSAFEPATH=1 python scripts/accounting_table.py

For ε = 0.1 and ε = 1 per release, k = 10, 100, 1000 and δ = 1e-6, 1e-9: the pure
sum; the certified snapping curve composed under PLD and under RDP
(snapcore.analysis._accounting); the generic ε-DP curve (randomized response) under
PLD; dp-accounting's ideal Laplace(1/ε); and the worst of 16 exact phase pairs
audited at bounds [-16, 16] (a lower reference: a real pair of the implemented
mechanism needs at least that much).  Then the 1,000-release analysis at ε = 0.1,
accounted by an approximate-DP Budget.
"""

from __future__ import annotations

import time
from fractions import Fraction

from dp_accounting.pld import privacy_loss_distribution as dp_pld

from snapcore import SnappingMechanism
from snapcore.analysis._accounting import ReleaseCurve, compose, phase_scan
from snapcore.releases._budget import ApproxBudget

KS = (10, 100, 1000)
DELTAS = (1e-6, 1e-9)


def main() -> None:
    print(
        "| ε each | k | δ | pure sum | snapping, PLD | snapping, RDP | any ε-DP, PLD "
        "| ideal Laplace | worst audited phase |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for eps in (Fraction(1, 10), Fraction(1)):
        mech = SnappingMechanism(epsilon=float(eps), clamp_bound=16.0)
        gran = mech.calibration.granularity
        scan = phase_scan(mech, [gran * Fraction(i, 16) for i in range(16)])
        lap = dp_pld.from_laplace_mechanism(1 / float(eps), value_discretization_interval=1e-4)
        for k in KS:
            comps = [
                pl.pld(pessimistic=False, value_discretization_interval=1e-3).self_compose(k)
                for _, pl in scan
            ]
            lk = lap.self_compose(k)
            for d in DELTAS:
                snap = [ReleaseCurve("snapping", eps)] * k
                row = (
                    float(eps * k),
                    compose(snap, d).epsilon,
                    compose(snap, d, accountant="rdp").epsilon,
                    compose([ReleaseCurve("pure", eps)] * k, d).epsilon,
                    lk.get_epsilon_for_delta(d),
                    max(c.get_epsilon_for_delta(d) for c in comps),
                )
                cells = " | ".join(f"{x:.4g}" for x in row)
                print(f"| {float(eps):g} | {k} | {d:g} | {cells} |")
    t = time.perf_counter()
    b = ApproxBudget(100, Fraction(1, 10**6))
    for i in range(1000):
        b.spend(Fraction(1, 10), label=f"release {i}", curve="snapping")
    g = b.guarantee
    print(
        f"\n1,000 releases at ε = 0.1 through ApproxBudget(100, 1e-6): ε = {g.epsilon:.6g} "
        f"at δ = {g.delta:g} ({g.accountant}), pure sum {float(g.pure_epsilon):g}; "
        f"{time.perf_counter() - t:.0f} s"
    )


if __name__ == "__main__":
    main()
