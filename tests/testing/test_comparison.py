"""snapcore.testing._comparison: the backends' and statistics' comparison tables (small
sizes)."""

from __future__ import annotations

from snapcore.testing._comparison import (
    compare_backends,
    compare_statistics,
    format_statistics_table,
    format_table,
)


def test_compare_backends_measures_every_backend():
    rows = compare_backends(size=300, scalar_seconds=0.05)
    assert rows[0].name == "mpfr"
    assert {r.name for r in rows} >= {"mpfr", "mpmath", "arb"}
    for r in rows:
        assert r.available
        assert r.conformance.startswith("pass ("), r.conformance
        assert r.scalar_per_s > 0 and r.vector_per_s > 0 and r.vector_size == 300
        assert r.outputs_agree is True
    text = format_table(rows)
    assert "scalar releases/s" in text and "mpmath" in text
    md = format_table(rows, markdown=True)
    assert md.startswith("| backend |") and md.count("\n") == len(rows) + 1


def test_compare_statistics_runs_the_statistic_suite():
    rows = compare_statistics(["count", "covariance"], random_pairs=6)
    assert [r.name for r in rows] == ["count", "covariance"]
    assert rows[0].origin == "counting" and rows[0].relations == ("add-remove", "replace")
    for r in rows:
        assert r.conformance.startswith("pass ("), r.conformance
    text = format_statistics_table(rows)
    assert "statistic" in text.splitlines()[0] and "pass (" in text


def test_every_backend_is_warmed_up_before_anything_is_timed():
    """The untimed warm-up step comes before the scalar loop and the array releases
    (the steps reported to ``progress``)."""
    from snapcore.plugins._manager import get_registries

    log: list[str] = []
    reg = get_registries().backends
    names = [n for n in sorted(reg.names()) if reg.get(n).is_available()][:2]
    compare_backends(
        names,
        size=50,
        scalar_seconds=0.01,
        conformance=False,
        progress=lambda what, total: log.append(what),
    )
    assert log.index("warm-up") < log.index("scalar releases")
    assert log[-len(names) :] == [f"array release {n}" for n in names]
