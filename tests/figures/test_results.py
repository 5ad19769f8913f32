"""Result types of the checks: the band's text and signed margin."""
import pytest

from sgi_run.figures.results import Band


def test_band_text_and_margin():
    assert str(Band(None, 0.035)) == "<= 0.035" and str(Band(5, None)) == ">= 5"
    assert Band(1, 2).margin(1.5) == pytest.approx(0.5) and Band(1, 2).margin(3) == pytest.approx(-1)
