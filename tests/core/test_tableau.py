import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.core.tableau import check_conditions, coefficient_array, evaluate


def test_expressions():
    assert evaluate("5/6 - sqrt(3)/3", {}, "k") == pytest.approx(5 / 6 - np.sqrt(3) / 3, abs=1e-16)
    assert evaluate("(1-lam)/2", {"lam": 0.5}, "k") == 0.25
    assert evaluate(-0.5, {}, "k") == -0.5


@pytest.mark.parametrize("bad", ["__import__('os')", "lam + 1", "2 **", "x.y", True])
def test_refuses_anything_but_arithmetic(bad):
    with pytest.raises(ConfigError) as err:
        evaluate(bad, {}, "integrator.tableau.a")
    assert "integrator.tableau.a" in str(err.value) and "\n" not in str(err.value)


def test_shape_is_checked():
    with pytest.raises(ConfigError, match="shape"):
        coefficient_array([[1, 2]], {}, "integrator.tableau.a", (2, 2))


def test_conditions():
    check_conditions({"ok": 1e-15}, "k")
    with pytest.raises(ConfigError, match="bad residual"):
        check_conditions({"ok": 0.0, "bad": 0.1}, "k")
