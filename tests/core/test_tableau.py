import ast
import glob
import math
import operator
from pathlib import Path

import numpy as np
import pytest
import yaml

from sgi_run.core.errors import ConfigError
from sgi_run.core.tableau import check_conditions, coefficient_array, evaluate

ROOT = Path(__file__).resolve().parents[2]


def test_expressions():
    assert evaluate("5/6 - sqrt(3)/3", {}, "k") == pytest.approx(5 / 6 - np.sqrt(3) / 3, abs=1e-16)
    assert evaluate("(1-lam)/2", {"lam": 0.5}, "k") == 0.25
    assert evaluate(-0.5, {}, "k") == -0.5


def test_a_coefficient_is_computed_step_by_step_in_float64():
    """Each operation rounded as Python's floats round it, not the float64 nearest the exact value."""
    assert evaluate("5/6 - sqrt(3)/3", {}, "k") == 5.0 / 6.0 - math.sqrt(3.0) / 3.0
    assert evaluate("1/4 + sqrt(3)/6", {}, "k") == 1.0 / 4.0 + math.sqrt(3.0) / 6.0
    assert evaluate("-1/6 + sqrt(3)/3", {}, "k") == -1.0 / 6.0 + math.sqrt(3.0) / 3.0
    assert evaluate("(1-lam)/2", {"lam": 0.3}, "k") == (1.0 - 0.3) / 2.0


def test_a_coefficient_may_use_pi_and_the_functions_of_a_formula():
    assert evaluate("cos(pi/3)", {}, "k") == math.cos(math.pi / 3.0)
    assert evaluate("atan2(1, lam) + abs(-2)*exp(0)", {"lam": 2.0}, "k") == math.atan2(1.0, 2.0) + abs(-2.0) * math.exp(0.0)


def _old_evaluate(expr, params):
    """The evaluator tableaux had before they shared the formulas' grammar (numbers, the parameters,
    + - * / **, unary minus, sqrt), as a reference for the bundled coefficients."""
    binary = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
              ast.Pow: operator.pow}

    def walk(node):
        if isinstance(node, ast.Constant):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(params[node.id])
        if isinstance(node, ast.BinOp):
            return binary[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp):
            return -walk(node.operand) if isinstance(node.op, ast.USub) else walk(node.operand)
        assert isinstance(node, ast.Call) and node.func.id == "sqrt"
        return math.sqrt(walk(node.args[0]))

    return float(expr) if not isinstance(expr, str) else walk(ast.parse(expr, mode="eval").body)


def _coefficients(node, path):
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _coefficients(value, f"{path}.{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _coefficients(value, f"{path}[{i}]")
    elif (isinstance(node, (int, float)) and not isinstance(node, bool)) or (
            isinstance(node, str) and any(c.isdigit() for c in node) and "=" not in node):
        yield path, node


BUNDLED = [(Path(f).stem, path, value) for f in sorted(glob.glob(str(ROOT / "conf/integrator/*.yaml")))
           for path, value in _coefficients(yaml.safe_load(Path(f).read_text()).get("tableau") or {}, "tableau")]


def test_every_bundled_tableau_coefficient_is_the_float64_it_was():
    assert len(BUNDLED) > 300
    for name, path, value in BUNDLED:
        params = yaml.safe_load((ROOT / f"conf/integrator/{name}.yaml").read_text()).get("parameters") or {}
        params = {k: float(v) for k, v in params.items()}
        ours, reference = evaluate(value, params, path), _old_evaluate(value, params)
        assert ours.hex() == reference.hex(), (name, path, value)


@pytest.mark.parametrize("bad", ["__import__('os')", "lam + 1", "2 **", "x.y", True])
def test_refuses_anything_but_arithmetic(bad):
    with pytest.raises(ConfigError) as err:
        evaluate(bad, {}, "integrator.tableau.a")
    assert "integrator.tableau.a" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("bad", ["(-1)**0.5", "sqrt(-1)", "log(0)", "exp(1000)", "1/0", "1e400", "cos(1, 2)"])
def test_refuses_a_coefficient_that_is_no_finite_real(bad):
    with pytest.raises(ConfigError) as err:
        evaluate(bad, {}, "integrator.tableau.a")
    assert str(err.value).startswith("integrator.tableau.a=") and "\n" not in str(err.value)


def test_shape_is_checked():
    with pytest.raises(ConfigError, match="shape"):
        coefficient_array([[1, 2]], {}, "integrator.tableau.a", (2, 2))


def test_conditions():
    check_conditions({"ok": 1e-15}, "k")
    with pytest.raises(ConfigError, match="bad residual"):
        check_conditions({"ok": 0.0, "bad": 0.1}, "k")
