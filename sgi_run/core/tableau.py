"""Butcher-type tableaux as data.

Integrator YAML files hold their coefficients as numbers or short arithmetic strings
(``"5/6 - sqrt(3)/3"``, ``"lam/2"``) over the method's named parameters. This module turns them
into float64 numpy arrays with a small, safe expression evaluator (numbers, parameter names,
``+ - * / **``, ``sqrt``), and offers the residual check used to verify order conditions.
"""
from __future__ import annotations

import ast
import math
import operator
from collections.abc import Mapping

import numpy as np

from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import is_number, real

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.Pow: operator.pow}
_UNARY = {ast.USub: operator.neg, ast.UAdd: operator.pos}
_FUNCTIONS = {"sqrt": math.sqrt}


def evaluate(expr, params: Mapping[str, float], key: str) -> float:
    """Value of one coefficient: a number, or an arithmetic string over ``params``."""
    if is_number(expr):
        return real(key, expr, "a finite coefficient")
    if not isinstance(expr, str):
        raise ConfigError(key, expr, "a number or an arithmetic expression string")

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in params:
            return float(params[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            return _BINARY[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
            return _UNARY[type(node.op)](walk(node.operand))
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                and node.func.id in _FUNCTIONS and len(node.args) == 1):
            return _FUNCTIONS[node.func.id](walk(node.args[0]))
        raise ConfigError(key, expr, f"arithmetic over numbers, sqrt() and the parameters {sorted(params)}")

    try:
        value = walk(ast.parse(expr, mode="eval"))
    except (SyntaxError, ValueError, OverflowError, ZeroDivisionError, RecursionError) as err:
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(key, expr, f"a valid arithmetic expression with a finite value ({type(err).__name__})") from None
    if not math.isfinite(value):
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
