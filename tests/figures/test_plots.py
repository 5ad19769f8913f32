"""Drawing: what a time panel shows for a run that diverges (spec 003 section 3 layout)."""
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np

from sgi_run.figures import plots
from sgi_run.figures.checks import RunData, Series

T = np.arange(0.0, 11.0)


def _panel_lines(mean, nonfinite):
    run = RunData({"two_H": Series(T, np.asarray(mean, float), np.full_like(T, 0.01))}, "two_H",
                  paths=100, nonfinite=np.asarray(nonfinite))
    exp = SimpleNamespace(observable="two_H", runs={"r": SimpleNamespace(label="SVIB, c=10")})
    fig, ax = plt.subplots()
    plots._time_panel(ax, exp, {"quantity": "mean", "runs": ["r"]}, {"r": run}, {"r": "C0"})
    (line,) = ax.get_lines()
    plt.close(fig)
    return line


def test_a_diverged_run_is_truncated_and_says_when_in_its_legend():
    exploding = np.where(T < 4, 1.0, 1e9)
    nonfinite = np.where(T < 6, 0, 100)
    line = _panel_lines(exploding, nonfinite)
    assert line.get_label() == "SVIB, c=10 (diverged at t=4; 100 of 100 paths non-finite at T)"
    assert list(line.get_xdata()) == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_a_finite_run_keeps_its_whole_curve_and_label():
    line = _panel_lines(np.ones_like(T), np.zeros_like(T, dtype=int))
    assert line.get_label() == "SVIB, c=10" and len(line.get_xdata()) == len(T)
