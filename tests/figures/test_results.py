"""Result types of the checks: the band's text and signed margin."""
import pytest

from sgi_run.figures.results import Band


def test_band_text_and_margin():
    assert str(Band(None, 0.035)) == "<= 0.035" and str(Band(5, None)) == ">= 5"
    assert Band(1, 2).margin(1.5) == pytest.approx(0.5) and Band(1, 2).margin(3) == pytest.approx(-1)


def test_a_study_counts_its_results_paths():
    import numpy as np

    from sgi_run.engine.convergence import ConvergenceResult
    from sgi_run.figures.results import StudyData
    dts = np.array([0.5, 0.25])
    result = ConvergenceResult("weak", "exact", "independent", dts, np.array([1e-2, 2.5e-3]), np.full(2, 1e-4),
                               np.array([True, True]), 2.0, (1.9, 2.1), np.zeros(2, int), 1000)
    study = StudyData(result, "H", 2.0)
    assert study.paths == 1000 and study.observable == "H" and study.T == 2.0
