"""Butcher-type tableaux as data.

Integrator YAML files hold their coefficients as numbers or short arithmetic strings
(``"5/6 - sqrt(3)/3"``, ``"lam/2"``) over the method's named parameters. This module turns them
into float64 numpy arrays by the grammar of ``core.expressions`` (numbers, parameter names, ``pi``,
``+ - * / **``, its functions), evaluated in float64 operation by operation as Python computes it (``math``'s
functions), and offers the residual check used to verify order conditions.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Mapping

import numpy as np

from sgi_run.core import expressions
from sgi_run.core.errors import ConfigError
from sgi_run.core.expressions import FUNCTIONS, MAX_LENGTH, Refused
from sgi_run.core.fields import is_number, real

_BINARY = {"+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv, "**": operator.pow}
_FUNCTIONS = {"sin": math.sin, "cos": math.cos, "tan": math.tan, "exp": math.exp, "log": math.log, "sqrt": math.sqrt,
              "tanh": math.tanh, "sinh": math.sinh, "cosh": math.cosh, "abs": abs, "atan2": math.atan2}
_CONSTANTS = {"pi": math.pi}
assert _FUNCTIONS.keys() == FUNCTIONS.keys() and _CONSTANTS.keys() == set(expressions.CONSTANTS)


class _FloatArithmetic(expressions.Arithmetic):
    """Each node a Python float, each operation rounded as Python rounds it: a coefficient is the float64 its
    text computes step by step (``5/6 - sqrt(3)/3``), not the float64 nearest its exact value."""

    def __init__(self, params: Mapping[str, float]):
        self.params = params

    def number(self, value):
        return float(value)

    def name(self, name):
        return float(self.params[name]) if name in self.params else None

    def constant(self, name):
        return _CONSTANTS[name]

    def negative(self, operand):
        return -operand

    def binary(self, operator, left, right):
        return _BINARY[operator](left, right)

    def call(self, function, arguments):
        return _FUNCTIONS[function](*arguments)


def evaluate(expr, params: Mapping[str, float], key: str) -> float:
    """Value of one coefficient: a number, or an arithmetic string over ``params``."""
    if is_number(expr):
        return real(key, expr, "a finite coefficient")
    if not isinstance(expr, str):
        raise ConfigError(key, expr, "a number or an arithmetic expression string")
    if len(expr) > MAX_LENGTH:
        raise ConfigError(key, expr[:40] + "...", f"an arithmetic expression of at most {MAX_LENGTH} characters")
    try:
        value = expressions.build(expressions.syntax_tree(expr), _FloatArithmetic(params))
    except Refused:
        raise ConfigError(key, expr, f"arithmetic over numbers, pi, the functions {', '.join(FUNCTIONS)} and the "
                                     f"parameters {sorted(params)}") from None
    except (SyntaxError, ValueError, TypeError, OverflowError, ZeroDivisionError, RecursionError) as err:
        raise ConfigError(key, expr, f"a valid arithmetic expression with a finite value ({type(err).__name__})") from None
    if not isinstance(value, float) or not math.isfinite(value):    # a complex power, (-1)**0.5, is no coefficient
        raise ConfigError(key, expr, "a finite coefficient")
    return value


def coefficient_array(value, params: Mapping[str, float], key: str, shape: tuple[int, ...]) -> np.ndarray:
    """A vector or matrix of coefficients, checked against the expected shape."""
    arr = np.asarray(value, dtype=object)
    if arr.shape != shape:
        raise ConfigError(key, value, f"an array of shape {shape}")
    return np.vectorize(lambda e: evaluate(e, params, key), otypes=[float])(arr).reshape(shape)


def variational_residual(w1: np.ndarray, x: np.ndarray, w2: np.ndarray, y: np.ndarray) -> float:
    """max over i, j of |w1_i x_ij + w2_j y_ji - w1_i w2_j|: the form of every symplecticity
    (Lagrange-d'Alembert) condition pairing two coefficient matrices, (3.16) and (3.43)."""
    return float(np.max(np.abs(w1[:, None] * x + (w2[:, None] * y).T - np.outer(w1, w2))))


def check_conditions(conditions: Mapping[str, float], key: str, tol: float = 1e-12) -> None:
    """Refuse a tableau whose named condition residuals are not zero (to ``tol``)."""
    overflowed = sorted(name for name, r in conditions.items() if not math.isfinite(r))
    if overflowed:      # huge coefficients: the residual says nothing but that it overflowed
        raise ConfigError(key, f"{overflowed[0]} residual {conditions[overflowed[0]]}",
                          f"finite coefficients whose order conditions are finite (those overflow: {overflowed})")
    failed = {name: r for name, r in conditions.items() if abs(r) > tol}
    if failed:
        name, r = max(failed.items(), key=lambda kv: abs(kv[1]))
        raise ConfigError(key, f"{name} residual {r:.3g}",
                          f"a tableau satisfying all of {sorted(conditions)} to {tol:g} ({name} misses by {r:.3g})")
