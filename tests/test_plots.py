"""The accuracy pictures: functions return figures with the right data; the CLI writes files."""

from __future__ import annotations

import builtins
import math

import pytest
from click.testing import CliRunner

from snapcore import accuracy
from snapcore.cli import main
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
    assert sum(heights) == pytest.approx(1.0, abs=1e-9)
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


@pytest.mark.parametrize(
    ("args", "name"),
    [
        (
            ["accuracy", "--clamp-bounds", "0", "10", "--eps-min", "0.1", "--eps-max", "10"],
            "a.png",
        ),
        (["distribution", "--epsilon", "1", "--clamp-bound", "8", "--guess", "3"], "d.svg"),
        (["gamma", "--b-prime", "10", "--epsilon", "2"], "g.png"),
    ],
)
def test_cli_plot_writes_files(tmp_path, args, name):
    out = tmp_path / name
    res = CliRunner().invoke(main, ["plot", *args, "-o", str(out)])
    assert res.exit_code == 0, res.output
    data = out.read_bytes()
    assert data[:4] == b"\x89PNG" if name.endswith(".png") else b"<svg" in data[:400]


def test_cli_plot_bad_arguments(tmp_path):
    r = CliRunner().invoke(main, ["plot", "accuracy", "-o", str(tmp_path / "x.png")])
    assert r.exit_code != 0 and "exactly one of --clamp-bounds" in r.output
    r = CliRunner().invoke(
        main, ["plot", "accuracy", "--clamp-bounds", "0", "1", "-o", str(tmp_path / "x.pdf")]
    )
    assert r.exit_code != 0 and ".png or .svg" in r.output
    r = CliRunner().invoke(
        main,
        [
            "plot",
            "distribution",
            "--epsilon",
            "-1",
            "--clamp-bound",
            "1",
            "--guess",
            "0",
            "-o",
            str(tmp_path / "x.png"),
        ],
    )
    assert r.exit_code != 0 and "epsilon must be" in r.output and "Traceback" not in r.output


def test_missing_matplotlib_message(monkeypatch, tmp_path):
    from snapcore import plots

    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(PlotDependencyError, match=r"pip install \"snapcore\[plot\]\""):
        plots.accuracy_vs_epsilon(clamp_bounds=(0.0, 1.0), epsilons=[1.0])
    r = CliRunner().invoke(
        main, ["plot", "accuracy", "--clamp-bounds", "0", "1", "-o", str(tmp_path / "x.png")]
    )
    assert r.exit_code == 1 and "snapcore[plot]" in r.output
