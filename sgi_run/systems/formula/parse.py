"""A formula's text as a sympy expression, and that expression as a JAX function.

The text is read by the grammar of ``core.expressions`` (Python's ``ast`` and a whitelist walk), each node built
as a sympy expression: the state's symbols and the parameters as real symbols, numbers kept exact (``0.1`` as
1/10, printed as a Python fraction, which divides to the float64 nearest the literal), ``pi`` as sympy's. A power
of two numbers is computed once in float64 (an exact ``10**10**9`` would never finish). The text never reaches
``eval``, ``sympify`` or ``parse_expr`` (all three evaluate Python).

The expression becomes a JAX function by ``sympy.lambdify(..., modules="jax")``: sympy's own printer for
``jax.numpy``, so every function of the whitelist maps to its ``jax.numpy`` namesake without a translation table
of ours to keep in step, and the result is plain JAX (float64 under ``jax.grad``, ``jit`` and ``vmap``, as a
hand-written system). Its arguments are dummies (``dummify``), so a parameter's name cannot shadow a name of the
generated code.
"""
from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from sgi_run.core import expressions
from sgi_run.core.errors import ConfigError
from sgi_run.core.expressions import FUNCTIONS, MAX_LENGTH, Refused

# A formula as the config has it: text (a number, as YAML reads ``F: 0``, is the text of that number).
Formula = str


def state_symbols(dof: int) -> tuple[list[str], list[str]]:
    """The names of the positions and momenta: ``q``, ``p`` for one degree of freedom, else ``q1..qn``, ``p1..pn``."""
    if dof == 1:
        return ["q"], ["p"]
    return [f"q{i}" for i in range(1, dof + 1)], [f"p{i}" for i in range(1, dof + 1)]


def _allowed(names: Sequence[str]) -> str:
    return (f"a real formula of numbers, the names {', '.join(names)}, pi, + - * / ** and unary minus, "
            f"parentheses and the functions {', '.join(FUNCTIONS)}")


class _SympyArithmetic(expressions.Arithmetic):
    """Each node a sympy expression in the real symbols of ``names``."""

    def __init__(self, names: Sequence[str]):
        import sympy

        self.sympy = sympy
        self.symbols = {name: sympy.Symbol(name, real=True) for name in names}

    def number(self, value):
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = False
        if not finite:
            raise Refused(f"the number {value!r} (not a finite float64)")
        return self.sympy.Rational(repr(value)) if isinstance(value, float) else self.sympy.Integer(value)

    def name(self, name):
        return self.symbols.get(name)

    def constant(self, name):
        return self.sympy.pi

    def negative(self, operand):
        return -operand

    def binary(self, operator, left, right):
        if operator == "+":
            return left + right
        if operator == "-":
            return left - right
        if operator == "*":
            return left * right
        if operator == "/":
            return left / right
        if left.is_Number and right.is_Number:
            return self._number_power(left, right)
        return left**right

    def call(self, function, arguments):
        sympy_function = {"abs": self.sympy.Abs}.get(function) or getattr(self.sympy, function)
        return sympy_function(*arguments)

    def _number_power(self, base, exponent):
        """A power of two numbers, in float64: exactly it could be a number too large to compute."""
        try:
            value = float(base) ** float(exponent)
        except (OverflowError, ZeroDivisionError):
            raise Refused(f"the power {base}**{exponent} (not a finite float64)") from None
        if isinstance(value, complex) or not math.isfinite(value):
            raise Refused(f"the power {base}**{exponent} (not a finite real float64)")
        return self.sympy.Rational(repr(value))


def parse(key: str, text, names: Sequence[str], shown: Sequence[str] | None = None):
    """``text`` as a sympy expression in the symbols ``names`` (real), or a ConfigError naming ``key``;
    ``shown``: the names as a refusal lists them, where not one by one (an initial law's ``xi1, xi2, ..``).

    Only the whitelist is read (see the module docstring); the text is never evaluated as Python."""
    import sympy

    allowed = _allowed(names if shown is None else shown)
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(text)
    if not isinstance(text, str):
        raise ConfigError(key, text, f"{allowed}, as text")
    if len(text) > MAX_LENGTH:
        raise ConfigError(key, text[:40] + "...", f"a formula of at most {MAX_LENGTH} characters")
    try:
        tree = expressions.syntax_tree(text)
    except SyntaxError as err:
        raise ConfigError(key, text, f"{allowed} (a syntax error: {err.msg})") from None
    except (ValueError, RecursionError, MemoryError):
        raise ConfigError(key, text, f"{allowed} (Python cannot parse it)") from None
    try:
        expression = expressions.build(tree, _SympyArithmetic(names))
    except Refused as refused:
        raise ConfigError(key, text, f"{allowed}; not {refused}") from None
    except (ArithmeticError, ValueError, TypeError, RecursionError) as err:  # sympy's own refusal of a number
        raise ConfigError(key, text, f"{allowed} ({type(err).__name__}: {err})") from None
    # sqrt(-1), log(-2) and 1/0 are numbers sympy keeps exact: I, zoo, nan; none is a real float64.
    if expression.has(sympy.I) or expression.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ConfigError(key, text, f"{allowed}; not a complex or infinite number ({expression})")
    # Exact arithmetic keeps 1e200*1e200 a number (10**400), which no float64 holds.
    huge = sorted(str(sympy.Float(n, 3)) for n in expression.atoms(sympy.Number) if not math.isfinite(float(n)))
    if huge:
        raise ConfigError(key, text, f"{allowed}; not the number {huge[0]} (past float64's largest, 1.8e+308)")
    return expression


def jax_function(expression, names: Sequence[str]) -> Callable:
    """The expression as a function of ``names`` (in that order) on JAX scalars, by sympy's JAX printer."""
    import sympy

    symbols = [sympy.Symbol(name, real=True) for name in names]
    return sympy.lambdify(symbols, expression, modules="jax", dummify=True)


def free_names(expression) -> set[str]:
    return {s.name for s in expression.free_symbols}
