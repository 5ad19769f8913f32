"""Panel kind ``work_precision``: its keys refused at load in one line, and a drawing from synthetic studies and
timings (every method one curve, the costs on x, the timings' spread as bars)."""
import dataclasses
from pathlib import Path

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.engine.convergence import ConvergenceResult
from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.results import StudyData
from sgi_run.work_precision import MethodCost

KIND = PANEL_KINDS["work_precision"]
DTS = np.array([0.25, 0.125, 0.0625])


@pytest.mark.parametrize("panel, key", [
    ({"y": "cost"}, "panels[0].y"), ({"x": "seconds"}, "panels[0].x"), ({"y": "drift"}, "panels[0].invariant"),
    ({"invariant": "C2"}, "panels[0].invariant"),
])
def test_a_bad_key_is_refused_in_one_line(panel, key):
    with pytest.raises(ConfigError) as err:
        KIND.check({"quantity": "work_precision", "runs": ["a"], **panel}, lambda k: f"f.yaml:{k}", "panels[0]",
                   {"a": None}, frozenset({"a"}))
    assert str(err.value).startswith(f"f.yaml:{key}=") and "\n" not in str(err.value)


def _study(scale: float, seconds: float) -> StudyData:
    result = ConvergenceResult("strong", "fine", "shared", DTS, scale * DTS, 0.01 * scale * DTS, np.ones(3, bool),
                               1.0, (0.9, 1.1), np.zeros(3), 100, invariants=("C2",),
                               drift_max=np.array([[1e-15], [0.0], [2e-15]]))
    cost = MethodCost(DTS, 10, np.array([4, 8, 16]), np.ones(3), seconds * np.array([[1, 1.2], [2, 2.2], [4, 4.4]]),
                      "cpu (test)")
    return StudyData(result, "state", 1.0, cost)


def test_the_panel_draws_error_and_drift_against_cost():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from sgi_run.figures.layout import style

    @dataclasses.dataclass
    class Run:
        label: str

    exp = type("Exp", (), {"runs": {"a": Run("A"), "b": Run("B")}, "path": Path("f.yaml")})()
    data = {"a": _study(1.0, 0.1), "b": _study(0.5, 0.3)}
    styles = {"a": style(0), "b": style(1)}
    for panel in ({"runs": ["a", "b"]}, {"runs": ["a", "b"], "y": "drift", "invariant": "C2"},
                  {"runs": ["a", "b"], "x": "path_steps_per_second"}):
        fig, ax = plt.subplots()
        KIND.draw(ax, exp, panel, data, styles)
        lines = [line for line in ax.get_lines() if line.get_label() in ("A: order 1.00 [0.90, 1.10]",
                                                                         "B: order 1.00 [0.90, 1.10]")]
        assert len(lines) == 2 and ax.get_xscale() == "log"
        x = lines[0].get_xdata()
        if panel.get("x") == "path_steps_per_second":
            np.testing.assert_allclose(x, 10 * np.array([4, 8, 16]) / (0.1 * np.array([1.1, 2.1, 4.2])))
        else:
            np.testing.assert_allclose(x, 0.1 * np.array([1.1, 2.1, 4.2]) / 10)     # the median per path
        if panel.get("y") == "drift":     # a drift of 0 is drawn at round-off, not lost off the log axis
            assert np.all(lines[0].get_ydata() > 0)
        plt.close(fig)
    assert "every method in one series on cpu (test)" in KIND.footer({"runs": ["a", "b"]}, data)
