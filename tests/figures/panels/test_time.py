"""The ``mean`` and ``error`` panel kinds' helpers: readable reference labels, where a curve leaves the y-range."""
import numpy as np
import pytest

from sgi_run.figures.panels import time


@pytest.mark.parametrize("reference, label", [
    ("equilibrium_mean:two_H", "2<H> at equilibrium = 0.9791"),
    ("ergodic_energy", "<H> in the ergodic limit = 0.9791"),
    ("ergodic_mean:sin4pix", "<sin 4πx> in the ergodic limit = 0.9791"),
    ("initial_mean:v", "<v> under the initial law = 0.9791"),
    (1.5, "reference = 1.5"),
])
def test_reference_labels_name_the_quantity_and_where_it_holds(reference, label):
    value = reference if isinstance(reference, float) else 0.97910
    assert time.reference_label(reference, value) == label



@pytest.mark.parametrize("value, shown", [(2.3165, "2.3165"), (0.9791, "0.9791"), (0.979097551, "0.9791"),
                                          (1.5, "1.5"), (0.123456, "0.123456"), (2.31651234, "2.317")])
def test_a_reference_shows_its_value_as_held_up_to_six_digits_else_four(value, shown):
    """Van der Pol's published ergodic energy 2.3165 reads 2.3165, not 2.317 (the window means are compared with
    it to its last digit); a computed value keeps 4 digits."""
    assert time.reference_digits(value) == shown
    assert time.reference_label("ergodic_energy", value) == f"<H> in the ergodic limit = {shown}"


def test_off_scale_finds_each_edge_and_the_farthest_value():
    t = np.arange(6.0)
    marks = time.off_scale(t, np.array([0.0, 2.0, 5.0, 1.0, -4.0, -9.0]), -1.0, 3.0)
    assert [(m["edge"], m["value"], m["t"]) for m in marks] == [("top", 5.0, 2.0), ("bottom", -9.0, 5.0)]
    assert marks[0]["t_exit"] == pytest.approx(1 + 1 / 3) and marks[1]["t_exit"] == pytest.approx(3.4)
    assert time.off_scale(t, np.zeros(6), -1, 3) == []
