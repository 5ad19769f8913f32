r"""Systems written as formulas in the config, no Python: ``system=custom system.H='...'``.

A formula is config text, so it is read as data, never run: Python's ``ast`` parses it (``mode="eval"``)
and a walk over a whitelist turns it into a sympy expression: numbers, the state's symbols (``q``, ``p``;
``q1..qn``, ``p1..pn`` for ``dof`` n), the system's named parameters, ``+ - * / **``, unary minus,
parentheses and the functions of ``FUNCTIONS``. Anything else (an attribute, a call of another name, a
subscript, a lambda, a comprehension, a string, a name not declared) is one ``ConfigError`` line naming
the key, the text and what is allowed, before any compute. The text never reaches ``eval``, ``sympify``
or ``parse_expr`` (all three evaluate Python).

The expression becomes a JAX function by ``sympy.lambdify(..., modules="jax")``: sympy's own printer
for ``jax.numpy``, so every function of the whitelist maps to its ``jax.numpy`` namesake without a
translation table of ours to keep in step, and the result is plain JAX (float64 under ``jax.grad``,
``jit`` and ``vmap``, as a hand-written system). Its arguments are dummies (``dummify``), so a
parameter's name cannot shadow a name of the generated code. Numbers are kept exact (``0.1`` as
1/10) and printed as Python fractions, which divide to the float64 nearest the literal; a power of two
numbers is computed once in float64 (an exact ``10**10**9`` would never finish).

``FormulaSystem`` (config name ``custom``) is a canonical system of formulas: ``H``, ``noise`` (the
noise Hamiltonians h_i), optional ``F`` and ``noise_forcing``, ``dof``, ``q0``, ``p0``; every other key of
its config is a named parameter (``system.beta: 0.5``), overridden and swept like a built-in's, and a
key no formula uses is refused. ``LangevinFormulaSystem`` (``custom_langevin``) is a Langevin system
(``langevin.py``) whose ``potential`` U(q) is a formula.

A run's numbers then depend on sympy's printing too (``1/10``, ``q**2``), which the code digest of cached
runs (``provenance``) does not see: it is pinned by the environment, as JAX's own version is.
"""
from __future__ import annotations

import ast
import dataclasses
import keyword
import math
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import jax
import jax.numpy as jnp

from sgi_run.core.errors import ConfigError, require
from sgi_run.systems.canonical import CanonicalSystem, HamiltonianParts
from sgi_run.systems.langevin import LangevinSystem, _quad

# The functions a formula may call, by the name it calls them, with their number of arguments.
FUNCTIONS = {"sin": 1, "cos": 1, "tan": 1, "exp": 1, "log": 1, "sqrt": 1, "tanh": 1, "sinh": 1, "cosh": 1,
             "abs": 1, "atan2": 2}
CONSTANTS = ("pi",)
# Past these a text is no formula a person typed: refused before the parser's recursion can run out.
MAX_LENGTH = 10_000
MAX_DEPTH = 200

# A formula as the config has it: text (a number, as YAML reads ``F: 0``, is the text of that number).
Formula = str

_OPERATORS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}


def state_symbols(dof: int) -> tuple[list[str], list[str]]:
    """The names of the positions and momenta: ``q``, ``p`` for one degree of freedom, else ``q1..qn``, ``p1..pn``."""
    if dof == 1:
        return ["q"], ["p"]
    return [f"q{i}" for i in range(1, dof + 1)], [f"p{i}" for i in range(1, dof + 1)]


def reserved_names(dof: int) -> set[str]:
    """Names a parameter cannot take: the state's symbols, the functions and the constants."""
    qs, ps = state_symbols(dof)
    return set(qs) | set(ps) | set(FUNCTIONS) | set(CONSTANTS)


def _allowed(names: Sequence[str]) -> str:
    return (f"a real formula of numbers, the names {', '.join(names)}, pi, + - * / ** and unary minus, "
            f"parentheses and the functions {', '.join(FUNCTIONS)}")


class _Refused(Exception):
    """What the walk met that a formula may not have (turned into the one ConfigError line by ``parse``)."""


def parse(key: str, text, names: Sequence[str]):
    """``text`` as a sympy expression in the symbols ``names`` (real), or a ConfigError naming ``key``.

    Only the whitelist is read (see the module docstring); the text is never evaluated as Python."""
    import sympy

    allowed = _allowed(names)
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        text = repr(text)
    if not isinstance(text, str):
        raise ConfigError(key, text, f"{allowed}, as text")
    if len(text) > MAX_LENGTH:
        raise ConfigError(key, text[:40] + "...", f"a formula of at most {MAX_LENGTH} characters")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as err:
        raise ConfigError(key, text, f"{allowed} (a syntax error: {err.msg})") from None
    except (ValueError, RecursionError, MemoryError):
        raise ConfigError(key, text, f"{allowed} (Python cannot parse it)") from None
    symbols = {name: sympy.Symbol(name, real=True) for name in names}
    try:
        expression = _walk(tree.body, symbols, sympy, 0)
    except _Refused as refused:
        raise ConfigError(key, text, f"{allowed}; not {refused}") from None
    except (ArithmeticError, ValueError, TypeError, RecursionError) as err:  # sympy's own refusal of a number
        raise ConfigError(key, text, f"{allowed} ({type(err).__name__}: {err})") from None
    # sqrt(-1), log(-2) and 1/0 are numbers sympy keeps exact: I, zoo, nan; none is a real float64.
    if expression.has(sympy.I) or expression.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
        raise ConfigError(key, text, f"{allowed}; not a complex or infinite number ({expression})")
    return expression


def _walk(node, symbols, sympy, depth):
    if depth > MAX_DEPTH:
        raise _Refused(f"an expression nested more than {MAX_DEPTH} deep")
    down = lambda child: _walk(child, symbols, sympy, depth + 1)
    if isinstance(node, ast.Constant):
        value = node.value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Refused(f"the constant {value!r} (a {type(value).__name__})")
        try:
            finite = math.isfinite(float(value))
        except OverflowError:
            finite = False
        if not finite:
            raise _Refused(f"the number {value!r} (not a finite float64)")
        return sympy.Rational(repr(value)) if isinstance(value, float) else sympy.Integer(value)
    if isinstance(node, ast.Name):
        if node.id in symbols:
            return symbols[node.id]
        if node.id == "pi":
            return sympy.pi
        raise _Refused(f"the name '{node.id}'")
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        operand = down(node.operand)
        return -operand if isinstance(node.op, ast.USub) else operand
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = down(node.left), down(node.right)
        if isinstance(node.op, ast.Add):
            return left + right
        if isinstance(node.op, ast.Sub):
            return left - right
        if isinstance(node.op, ast.Mult):
            return left * right
        if isinstance(node.op, ast.Div):
            return left / right
        if left.is_Number and right.is_Number:
            return _number_power(left, right, sympy)
        return left**right
    if isinstance(node, ast.Call):
        name = node.func.id if isinstance(node.func, ast.Name) else None
        if name not in FUNCTIONS:
            called = name if name is not None else ast.unparse(node.func)[:60]
            raise _Refused(f"a call of '{called}'")
        if node.keywords or any(isinstance(a, ast.Starred) for a in node.args) or len(node.args) != FUNCTIONS[name]:
            raise _Refused(f"{name} with other than {FUNCTIONS[name]} plain argument(s)")
        args = [down(a) for a in node.args]
        function = {"abs": sympy.Abs}.get(name) or getattr(sympy, name)
        return function(*args)
    what = {ast.Attribute: "an attribute (.)", ast.Subscript: "a subscript ([])", ast.Lambda: "a lambda",
            ast.ListComp: "a comprehension", ast.GeneratorExp: "a comprehension", ast.SetComp: "a comprehension",
            ast.DictComp: "a comprehension", ast.Compare: "a comparison", ast.BoolOp: "and/or"}
    raise _Refused(what.get(type(node), f"Python's {type(node).__name__}"))


def _number_power(base, exponent, sympy):
    """A power of two numbers, in float64: exactly it could be a number too large to compute."""
    try:
        value = float(base) ** float(exponent)
    except (OverflowError, ZeroDivisionError):
        raise _Refused(f"the power {base}**{exponent} (not a finite float64)") from None
    if isinstance(value, complex) or not math.isfinite(value):
        raise _Refused(f"the power {base}**{exponent} (not a finite real float64)")
    return sympy.Rational(repr(value))


def jax_function(expression, names: Sequence[str]) -> Callable:
    """The expression as a function of ``names`` (in that order) on JAX scalars, by sympy's JAX printer."""
    import sympy

    symbols = [sympy.Symbol(name, real=True) for name in names]
    return sympy.lambdify(symbols, expression, modules="jax", dummify=True)


def free_names(expression) -> set[str]:
    return {s.name for s in expression.free_symbols}


# --- formula systems ---------------------------------------------------------------------------------
def _as_floats(value):
    if isinstance(value, (list, tuple)):
        return tuple(float(v) for v in value)
    return float(value)


class _Formulas:
    """What every formula system shares: its named parameters (the config's keys that are not fields,
    gathered into the field ``parameters``), their checks, and its formulas compiled once, at construction."""

    open_parameters: ClassVar[bool] = True

    @classmethod
    def gather_parameters(cls, config: Mapping) -> dict:
        """The config's keys that are not fields, gathered into ``parameters`` (each a finite number)."""
        fields = {f.name for f in dataclasses.fields(cls)}
        if "parameters" in config:
            raise ConfigError("parameters", config["parameters"],
                              "the parameters as keys of their own (system.beta: 0.5), not a mapping")
        named = {k: v for k, v in config.items() if k not in fields}
        for name, value in named.items():
            finite = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
            require(name, value, finite, "a finite number (a parameter a formula uses)")
        gathered = {k: v for k, v in config.items() if k in fields}
        return gathered | {"parameters": tuple((k, float(v)) for k, v in sorted(named.items()))}

    def _compiler(self, symbols: Sequence[str]):
        """(compile, finish): ``compile(key, text)`` is the text's JAX function of the symbols and the
        parameters' values; ``finish()`` refuses a parameter no compiled formula used, and keeps the values."""
        require("dof", self.dof, isinstance(self.dof, int) and 1 <= self.dof <= 1000, "an integer from 1 to 1000")
        values = dict(self.parameters)
        reserved = reserved_names(self.dof)
        for name, value in self.parameters:
            require(name, value, name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
                    and name not in reserved, f"a parameter named as a formula names it (not one of {sorted(reserved)})")
        names, used = list(symbols) + list(values), set()

        def compile(key, text):
            expression = parse(key, text, names)
            used.update(free_names(expression))
            return jax_function(expression, names)

        def finish():
            keys = ", ".join(f.name for f in dataclasses.fields(self) if f.name != "parameters")
            for name, value in self.parameters:
                require(name, value, name in used, f"a key of {self.config_name} ({keys}) or a parameter its formulas "
                        f"use ({', '.join(sorted(used & set(values))) or 'none'})")
            object.__setattr__(self, "_values", tuple(values.values()))

        return compile, finish

    def __reduce__(self):
        # Rebuilt from its texts: the compiled functions are generated code, which pickle cannot carry.
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def _per_dof(self, key, formulas, compile):
        texts = (formulas,) if not isinstance(formulas, (list, tuple)) else tuple(formulas)
        require(key, formulas, len(texts) == self.dof,
                f"{'a formula' if self.dof == 1 else f'a list of {self.dof} formulas'} (one per degree of freedom)")
        return [compile(key, text) for text in texts]

    def _initial(self):
        q0 = jnp.broadcast_to(jnp.asarray(self.q0, dtype=jnp.float64), (self.dof,))
        p0 = jnp.broadcast_to(jnp.asarray(self.p0, dtype=jnp.float64), (self.dof,))
        return jnp.concatenate([q0, p0])


@dataclasses.dataclass(frozen=True)
class FormulaSystem(_Formulas, CanonicalSystem):
    r"""A canonical system whose :math:`H`, :math:`h_i`, :math:`F` and :math:`f_i` are formulas of the config.

    ``noise_forcing`` is a field here (the formulas :math:`f_i`, one per noise: a text for ``dof`` 1, else a
    list of ``dof`` texts), so the base's method of that name is replaced by ``noise_forcing_values``,
    which ``parts`` calls. ``parameters`` is gathered from the config's other keys (``gather_parameters``),
    never given as a key itself."""

    config_name: ClassVar[str] = "custom"

    H: Formula = "(p**2 + q**2)/2"
    noise: tuple[Formula, ...] = ("0.1*p",)
    F: Formula | tuple[Formula, ...] | None = None
    noise_forcing: tuple[Formula | tuple[Formula, ...], ...] | None = None
    dof: int = 1
    q0: float | tuple[float, ...] = 1.0
    p0: float | tuple[float, ...] = 0.0
    parameters: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        for name in ("q0", "p0"):
            object.__setattr__(self, name, _as_floats(getattr(self, name)))
        qs, ps = state_symbols(self.dof)
        compile, finish = self._compiler(qs + ps)
        noise = (self.noise,) if isinstance(self.noise, str) else self.noise
        require("noise", self.noise, isinstance(noise, tuple) and len(noise) > 0,
                "a list of one or more noise Hamiltonians h_i")
        hamiltonian = compile("H", self.H)
        noise_hamiltonians = [compile("noise", h) for h in noise]
        forcing = None if self.F is None else self._per_dof("F", self.F, compile)
        noise_forcing = None
        if self.noise_forcing is not None:
            require("noise_forcing", self.noise_forcing, len(self.noise_forcing) == len(noise),
                    f"one forcing f_i per noise Hamiltonian ({len(noise)}), or null")
            noise_forcing = [self._per_dof("noise_forcing", f, compile) for f in self.noise_forcing]
        finish()
        # Not fields: derived from them, so equality, hashing and pickling (__reduce__) see the texts alone.
        object.__setattr__(self, "_functions", (hamiltonian, noise_hamiltonians, forcing, noise_forcing))

    @property
    def noises(self) -> int:
        return len(self._functions[1])

    def check(self):
        for name in ("q0", "p0"):
            value = getattr(self, name)
            require(name, value, not isinstance(value, tuple) or len(value) == self.dof,
                    f"one number or {self.dof} numbers (one per coordinate)")

    # --- physics -----------------------------------------------------------------------------
    def _call(self, function, q, p):
        value = function(*(q[i] for i in range(self.dof)), *(p[i] for i in range(self.dof)), *self._values)
        return jnp.asarray(value, dtype=p.dtype)   # a constant formula is a Python number

    def hamiltonian(self, q, p):
        return self._call(self._functions[0], q, p)

    def noise_hamiltonians(self, q, p):
        return jnp.stack([self._call(h, q, p) for h in self._functions[1]])

    def forcing(self, q, p):
        if self._functions[2] is None:
            return jnp.zeros_like(p)
        return jnp.stack([self._call(f, q, p) for f in self._functions[2]])

    def noise_forcing_values(self, q, p):
        """(m, dof): the forcings f_i of the noises."""
        if self._functions[3] is None:
            return jnp.zeros((self.noises,) + p.shape, dtype=p.dtype)
        return jnp.stack([jnp.stack([self._call(f, q, p) for f in row]) for row in self._functions[3]])

    def parts(self, q, p) -> HamiltonianParts:
        # The base's, with noise_forcing_values for its noise_forcing (a field here).
        dH_dq, dH_dp = jax.grad(self.hamiltonian, argnums=(0, 1))(q, p)
        dh_dq, dh_dp = jax.jacrev(self.noise_hamiltonians, argnums=(0, 1))(q, p)
        return HamiltonianParts(dH_dq, dH_dp, self.forcing(q, p), dh_dq, dh_dp, self.noise_forcing_values(q, p))

    def initial_state(self, key):
        return self._initial()


@dataclasses.dataclass(frozen=True)
class LangevinFormulaSystem(_Formulas, LangevinSystem):
    r"""A Langevin system (``langevin.py``: friction ``c``, inverse temperature ``beta``, diagonal ``mass``,
    :math:`\sigma = \sqrt{2c/\beta}`) whose potential :math:`U(q)` is a formula of the config; the splitting
    integrators (SVIA/B/C) fit it as they fit the built-ins.

    ``potential`` is a field here (the text), so the base's method of that name is ``potential_value``, which
    ``hamiltonian`` and ``potential_force`` call. Its Boltzmann-Gibbs means (one degree of freedom) come
    from quadrature of the formula, as the built-ins' do; None where the quadrature does not converge."""

    config_name: ClassVar[str] = "custom_langevin"

    potential: Formula = "q**2/2"
    dof: int = 1
    parameters: tuple[tuple[str, float], ...] = ()

    def __post_init__(self):
        super().__post_init__()
        compile, finish = self._compiler(state_symbols(self.dof)[0])
        function = compile("potential", self.potential)
        finish()
        object.__setattr__(self, "_potential", function)

    @property
    def noises(self) -> int:
        return self.dof

    def potential_value(self, q):
        """U(q), a scalar."""
        return jnp.asarray(self._potential(*(q[i] for i in range(self.dof)), *self._values), dtype=q.dtype)

    def hamiltonian(self, q, p):
        return self.kinetic_energy(q, p) + self.potential_value(q)

    def potential_force(self, q):
        return -jax.grad(self.potential_value)(q)

    def mean_potential(self) -> float:
        r""":math:`\langle U\rangle` under :math:`e^{-\beta U}`, by quadrature over the line (one degree of
        freedom), the weight shifted by U's least value on a grid so it stays O(1) for large beta."""
        if self.dof != 1:
            raise ArithmeticError("a Boltzmann-Gibbs mean by quadrature in one dimension only")
        on_the_line = jax.jit(lambda x: self.potential_value(jnp.reshape(x, (1,))))
        u = lambda x: float(on_the_line(x))
        floor = float(jnp.min(jax.vmap(on_the_line)(jnp.linspace(-20.0, 20.0, 4001))))
        weight = lambda x: math.exp(-self.beta * (u(x) - floor))
        norm = _quad(weight, -math.inf, math.inf)
        return _quad(lambda x: u(x) * weight(x), -math.inf, math.inf) / norm
