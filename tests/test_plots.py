"""The accuracy pictures (snapcore.plots): the functions return figures with the right data."""

from __future__ import annotations

import builtins
import math

import pytest

from snapcore.analysis import _guarantees as accuracy
from snapcore.errors import PlotDependencyError

mpl = pytest.importorskip("matplotlib")


def test_accuracy_vs_epsilon_data():
    from snapcore import plots

    eps = [0.05, 0.5, 1.0, 3.0]
    fig = plots.accuracy_vs_epsilon(clamp_bounds=(0.0, 100.0), alpha=0.1, epsilons=eps)
    ax = fig.axes[0]
    lap, snap = ax.lines[0], ax.lines[1]
    assert list(lap.get_xdata()) == eps
    assert list(lap.get_ydata()) == pytest.approx([math.log(10) / e for e in eps])
    ys = [float(y) for y in snap.get_ydata()]
    want = [accuracy.plan_accuracy(0.1, epsilon=e, clamp_bounds=(0.0, 100.0)) for e in eps]
    assert ys == want
    assert all(s > lp for s, lp in zip(ys, lap.get_ydata(), strict=True))


def test_accuracy_vs_epsilon_skips_inadmissible_epsilon():
    from snapcore import plots

    fig = plots.accuracy_vs_epsilon(clamp_bound=2.0**60, epsilons=[1e-3, 1.0])
    assert list(fig.axes[0].lines[1].get_xdata()) == [1e-3]


def test_output_distribution_figure(tmp_path):
    from snapcore import plots

    fig = plots.output_distribution_figure(
        epsilon=1.0, clamp_bounds=(0.0, 20.0), guess=17.3, window=30
    )
    ax = fig.axes[0]
    heights = [
        float(h)
        for c in ax.containers
        for h in c.markerline.get_ydata()  # stem containers
    ]
    # every grid point of the window and every interval end in view: an end whose mass
    # is above 1e-4 is always in view, and the lower end (0, far from 17.3) is not
    assert sum(heights) == pytest.approx(1.0, abs=2e-4)
    lo, hi = ax.get_xlim()
    assert lo > 0.0 and hi >= 20.0
    out = tmp_path / "d.svg"
    fig.savefig(out)
    assert out.read_text().lstrip().startswith("<?xml")


def test_accuracy_vs_gamma_figure():
    from snapcore import plots

    gammas = [1e-3, 1e-2, 0.5]
    fig = plots.accuracy_vs_gamma(50.0, epsilon=1.0, gammas=gammas)
    p_line = fig.axes[2].lines[1]
    assert all(p <= g for p, g in zip(p_line.get_ydata(), gammas, strict=True))
    b_line = fig.axes[0].lines[0]
    assert list(b_line.get_ydata()) == sorted(b_line.get_ydata(), reverse=True)


def test_missing_matplotlib_message(monkeypatch):
    from snapcore import plots

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(PlotDependencyError, match=r"pip install \"snapcore\[plot\]\""):
        plots.accuracy_vs_epsilon(clamp_bounds=(0.0, 1.0), epsilons=[1.0])


def test_plot_titles_fit_and_name_the_plan():
    """Every text of the figures lies inside the figure (titles are not cut off)."""
    from snapcore import plots

    figs = [
        plots.accuracy_vs_epsilon(
            clamp_bounds=(-1.58594, 101.586),
            sensitivity=100 / 442,
            epsilons=[0.1, 1.0, 10.0],
            subject="mean of n = 442 on [0, 100]",
        ),
        plots.output_distribution_figure(
            epsilon=1.0,
            clamp_bounds=(-1.58594, 101.586),
            sensitivity=100 / 442,
            guess=48.5,
            subject="mean of n = 442 on [0, 100]",
        ),
        plots.accuracy_vs_gamma(
            50.0,
            epsilon=1.0,
            sensitivity=100 / 442,
            gammas=[1e-3, 0.5],
            subject="mean of n = 442 on [0, 100]",
        ),
    ]
    for fig in figs:
        from matplotlib.backends.backend_agg import FigureCanvasAgg

        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        box = fig.bbox
        texts = [fig._suptitle] + [ax.title for ax in fig.axes]
        assert "mean of n = 442" in fig._suptitle.get_text()
        for t in texts:
            if t is None or not t.get_text():
                continue
            e = t.get_window_extent(renderer)
            assert box.x0 <= e.x0 and e.x1 <= box.x1 and e.y1 <= box.y1, t.get_text()


def test_distribution_zooms_to_the_mass():
    from snapcore import plots

    fig = plots.output_distribution_figure(
        epsilon=1.0, clamp_bounds=(-1.58594, 101.586), sensitivity=100 / 442, guess=48.5
    )
    lo, hi = fig.axes[0].get_xlim()
    assert 40 < lo < 48.5 < hi < 57  # a window of a few grid steps, not the whole interval


@pytest.mark.parametrize(
    "statistic, kw",
    [
        ("mean", {"data_bounds": (0, 100)}),
        ("histogram", {"categories": ["a", "b", "c"]}),
    ],
)
def test_a_planned_accuracy_curve_is_what_a_release_at_each_epsilon_states(statistic, kw):
    """Each point of the snapping curve against the accuracy a real release at that ε
    states (its own clamp interval, chosen from γ at that ε)."""
    import snapcore
    from snapcore import plots

    n = 10
    opts = {k: v for k, v in kw.items() if k != "data_bounds"}
    plan = accuracy.plan_statistic(
        statistic, epsilon=1, n=n, data_bounds=kw.get("data_bounds"), options=opts
    )
    eps = [0.01, 0.1, 1.0, 3.0]
    fig = plots.accuracy_vs_epsilon(plan=plan, epsilons=eps)
    step = fig.axes[0].lines[1]  # Laplace, then snapping
    data = [0.5] * n if statistic == "mean" else ["a"] * n
    for e, y in zip(step.get_xdata(), step.get_ydata(), strict=True):
        r = snapcore.release(statistic, data, epsilon=e, source=snapcore.SeededSource(1), **kw)
        assert y == pytest.approx(r.accuracy(0.05), rel=1e-12), e
