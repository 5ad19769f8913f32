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
key no formula uses is refused. A parameter that is a list of n numbers (``inertia: [2, 1, 2/3]``, as the
built-ins' tuples) gives the formulas ``inertia1 .. inertian``. ``LangevinFormulaSystem``
(``custom_langevin``) is a Langevin system (``langevin.py``) whose ``potential`` U(q) is a formula.
``ConstrainedLangevinFormulaSystem`` (``custom_constrained_langevin``) adds ``constraints``, k formulas g(q) = 0
in the positions, for the constrained integrators (``circle_pendulum_formula.yaml``,
``spherical_pendulum_formula.yaml`` restate the built-ins).
``LiePoissonFormulaSystem`` (``custom_lie_poisson``) is a Lie-Poisson system (``lie_poisson.py``) whose
``h`` and noise Hamiltonians are formulas in the coordinates of its ``algebra`` (so3, se3, so(n), su(N) and
products ``so3 x so3`` of them, factor k's symbols suffixed ``_k``):
``rigid_body_formula.yaml`` and ``heavy_top_formula.yaml`` restate the built-ins with their keys.

**Initial laws.** Each entry of an initial state (``q0``, ``p0``; ``pi0``, ``gamma0``, ``m0``) is a number (a
deterministic start, as before) or a formula in independent standard normal variables ``xi1, xi2, ..``, uniform
variables on [0, 1) ``u1, u2, ..`` and the parameters (``q0: "2 + 0.1*xi1"``). Each path draws them once, from its
own key (``initial_state(key)``: ``jax.random`` on the engine's ``noise.init_key`` of the path), so the same seed
gives the same starts whatever the shards; a variable named in two entries is one draw. A condition on the start
(a constraint manifold, an su(N) trace) is checked on CHECKED_DRAWS draws of fixed keys, before any run.

**Invariants.** ``FormulaSystem.invariants`` declares H where sympy shows, with the parameters' values substituted,
that F and every f_i vanish and every h_i Poisson-commutes with H; a Lie-Poisson system declares its Casimirs.

A run's numbers then depend on sympy's printing too (``1/10``, ``q**2``), which the code digest of cached
runs (``provenance``) does not see: it is pinned by the environment, as JAX's own version is.
"""
from __future__ import annotations

import ast
import dataclasses
import functools
import keyword
import math
import re
from collections.abc import Callable, Mapping, Sequence
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import ConfigError, require
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.canonical import CanonicalSystem
from sgi_run.systems.langevin import ConstrainedLangevinSystem, LangevinSystem, _quad
from sgi_run.systems.lie_poisson import LiePoissonSystem

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


def _allowed(names: Sequence[str]) -> str:
    return (f"a real formula of numbers, the names {', '.join(names)}, pi, + - * / ** and unary minus, "
            f"parentheses and the functions {', '.join(FUNCTIONS)}")


class _Refused(Exception):
    """What the walk met that a formula may not have (turned into the one ConfigError line by ``parse``)."""


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
    # Exact arithmetic keeps 1e200*1e200 a number (10**400), which no float64 holds.
    huge = sorted(str(sympy.Float(n, 3)) for n in expression.atoms(sympy.Number) if not math.isfinite(float(n)))
    if huge:
        raise ConfigError(key, text, f"{allowed}; not the number {huge[0]} (past float64's largest, 1.8e+308)")
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


def _finite(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


# The most numbers a list parameter may have (each is a symbol of every formula's generated function).
MAX_VECTOR = 1000

# An initial law's random variables: xi<k> independent standard normals, u<k> independent uniforms on [0, 1), drawn
# once per path from the path's own key and shared by every entry of its initial state that names them (so
# q0: xi1, p0: xi1 is one draw twice). At most MAX_RANDOM of each: each is an argument of the generated functions.
RANDOM = re.compile(r"(xi|u)([1-9]\d*)")
MAX_RANDOM = 1000
RANDOM_SHOWN = ("xi1, xi2, .. (independent standard normals)", "u1, u2, .. (uniform on [0, 1))")
# A random initial law is checked (a constraint, a trace) on this many draws, from keys of its own (not a run's).
CHECKED_DRAWS = 16


def _as_entries(value):
    """An initial state's value as the config gives it: a number (float), a formula (text), or a tuple of those."""
    entry = lambda v: v if isinstance(v, str) else float(v)
    return tuple(map(entry, value)) if isinstance(value, (list, tuple)) else entry(value)


def parameter_symbols(name: str, value) -> list[str]:
    """The formula symbols of a parameter: its name for a number, ``<name>1 .. <name>n`` for a list of n
    numbers (``inertia: [2, 1, 2/3]`` gives ``inertia1``, ``inertia2``, ``inertia3``, as the built-ins' tuples)."""
    return [f"{name}{i}" for i in range(1, len(value) + 1)] if isinstance(value, tuple) else [name]


def _shown(name: str, value) -> str:
    symbols = parameter_symbols(name, value)
    return name if len(symbols) == 1 else f"{name} ({symbols[0]} .. {symbols[-1]})"


class _Formulas:
    """What every formula system shares: its named parameters (the config's keys that are not fields,
    gathered into the field ``parameters``), their checks, and its formulas compiled once, at construction.

    A formula's text is a field named apart from its config key (``System.KEYS``) where the key's own name is the
    base class's method (a Langevin system's ``potential(q)``, a canonical one's ``noise_forcing(q, p)``, a
    Lie-Poisson one's ``algebra``): the base's derived physics then calls the formula system's methods as it
    calls a built-in's."""

    open_parameters: ClassVar[bool] = True
    # A key that belongs to a sibling config name (config key -> what to use instead): refused by name, before
    # it is read as a parameter (a list of formulas is no parameter's value).
    ELSEWHERE: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def gather_parameters(cls, config: Mapping) -> dict:
        """The config's keys that are not fields, gathered into ``parameters`` (each a finite number or a
        list of finite numbers)."""
        for key, instead in cls.ELSEWHERE.items():
            if key in config:
                raise ConfigError(key, config[key], instead)
        for key, field in cls.KEYS.items():
            if field in config:
                raise ConfigError(field, config[field], f"the key {key} (system.{key}), not {field}")
        config = {cls.KEYS.get(k, k): v for k, v in config.items()}
        fields = {f.name for f in dataclasses.fields(cls)}
        if "parameters" in config:
            raise ConfigError("parameters", config["parameters"],
                              "the parameters as keys of their own (system.beta: 0.5), not a mapping")
        named = {k: v for k, v in config.items() if k not in fields}
        for name, value in named.items():
            vector = isinstance(value, (list, tuple)) and 1 <= len(value) <= MAX_VECTOR and all(map(_finite, value))
            require(name, value, _finite(value) or vector,
                    f"a finite number, or a list of 1 to {MAX_VECTOR} finite numbers (a parameter a formula uses: "
                    f"a list's are {name}1, {name}2, ...)")
        gathered = {k: v for k, v in config.items() if k in fields}
        return gathered | {"parameters": tuple((k, _as_floats(v)) for k, v in sorted(named.items()))}

    def _check_dof(self):
        require("dof", self.dof, isinstance(self.dof, int) and 1 <= self.dof <= 1000, "an integer from 1 to 1000")

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The state's entries by their formula symbols (q1..qn, p1..pn): the observables' names and the views'
        (the class default, ("q", "p"), names one degree of freedom only)."""
        positions, momenta = state_symbols(self.dof)
        return tuple(positions + momenta)

    def _compiler(self, symbols: Sequence[str], reserved: Sequence[str] = ()):
        """(compile, finish): ``compile(key, text)`` is the text's JAX function of the symbols and the
        parameters' values (a list parameter's one by one); ``finish()`` refuses a parameter no compiled
        formula used, and keeps the values. A parameter's symbols cannot be the state's symbols, ``reserved``
        (names the formulas cannot use, as the Langevin momenta), a function, a constant, or another's."""
        # A list given from Python (the config's are tuples already) as a tuple: the field is hashed.
        object.__setattr__(self, "parameters", tuple((name, _as_floats(value)) for name, value in self.parameters))
        taken = set(symbols) | set(reserved) | set(FUNCTIONS) | set(CONSTANTS)
        owners, values = {}, {}     # each parameter's symbol -> its parameter's name, its number
        for name, value in self.parameters:
            require(name, value, name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
                    and name not in taken, f"a parameter named as a formula names it (not one of {sorted(taken)})")
            for symbol, number in zip(parameter_symbols(name, value), value if isinstance(value, tuple) else (value,)):
                owner = ("the state's or a function's" if symbol in taken else f"{owners[symbol]}'s" if symbol in owners
                         else "an initial law's random variable" if RANDOM.fullmatch(symbol) else None)
                require(name, value, owner is None, f"a parameter whose formula symbols are its own ({symbol} is "
                        f"also {owner})")
                owners[symbol], values[symbol] = name, number
        names, used, expressions = list(symbols) + list(values), set(), {}

        def compile(key, text, leading=None, shown=None):
            """``leading``: the symbols before the parameters' where not the state's (an initial law's random
            variables), ``shown`` as a refusal lists them."""
            here = names if leading is None else list(leading) + list(values)
            try:
                expression = parse(key, text, here, None if shown is None else [*shown, *values])
            except ConfigError:
                self._refuse_misshapen(text, here)
                raise
            used.update(owners[name] for name in free_names(expression) if name in owners)
            expressions.setdefault(key, []).append(expression)
            return jax_function(expression, here)

        def finish():
            keys = ", ".join(self.config_key(f.name) for f in dataclasses.fields(self) if f.name != "parameters")
            shown = ", ".join(_shown(name, value) for name, value in self.parameters if name in used)
            for name, value in self.parameters:
                require(name, value, name in used, f"a key of {self.config_name} ({keys}) or a parameter its formulas "
                        f"use ({shown or 'none'})")
            object.__setattr__(self, "_values", tuple(values.values()))
            # The sympy expressions by key, and the parameters' values by symbol: what ``invariants`` reasons on.
            object.__setattr__(self, "_expressions", expressions)
            object.__setattr__(self, "_parameter_values", dict(values))

        return compile, finish

    def _refuse_misshapen(self, text, names):
        """A formula that names a list parameter's entries (inertia1) where it is a number, or a number parameter
        where it is a list, is refused on the parameter's key: that key was typed (system.inertia=2), not the
        formula's."""
        unknown = set(re.findall(r"[A-Za-z_]\w*", text if isinstance(text, str) else "")) - set(names)
        for name, value in self.parameters:
            if isinstance(value, tuple):
                require(name, value, name not in unknown, f"a number: the formulas use {name}")
            else:
                entries = sorted(u for u in unknown if re.fullmatch(rf"{re.escape(name)}\d+", u))
                require(name, value, not entries, f"a list of numbers: the formulas use {', '.join(entries)}")

    def __reduce__(self):
        # Rebuilt from its texts: the compiled functions are generated code, which pickle cannot carry.
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    def _per_dof(self, key, formulas, compile):
        texts = (formulas,) if not isinstance(formulas, (list, tuple)) else tuple(formulas)
        require(key, formulas, len(texts) == self.dof,
                f"{'a formula' if self.dof == 1 else f'a list of {self.dof} formulas'} (one per degree of freedom)")
        return [compile(key, text) for text in texts]

    # --- the initial law ----------------------------------------------------------------------------
    def _compile_initial(self, compile, keys: Sequence[str]):
        """Each entry of the initial state's keys: a number as it is, a formula compiled in the random variables
        ``xi1..xiK``, ``u1..uL`` (K, L the largest indices any entry names) and the parameters. Called before
        ``finish``, so a parameter only an initial law uses is used."""
        texts = [(key, v) for key in keys for v in (getattr(self, key) if isinstance(getattr(self, key), tuple)
                                                   else (getattr(self, key),)) if isinstance(v, str)]
        largest = {"xi": 0, "u": 0}
        for key, text in texts:
            for name in re.findall(r"[A-Za-z_]\w*", text):
                matched = RANDOM.fullmatch(name)
                if matched:
                    require(key, text, int(matched[2]) <= MAX_RANDOM, f"an initial law in at most xi{MAX_RANDOM} and "
                            f"u{MAX_RANDOM} (not {name})")
                    largest[matched[1]] = max(largest[matched[1]], int(matched[2]))
        randoms = [f"xi{k}" for k in range(1, largest["xi"] + 1)] + [f"u{k}" for k in range(1, largest["u"] + 1)]
        law = {}
        for key in keys:
            value = getattr(self, key)
            entries = value if isinstance(value, tuple) else (value,)
            law[key] = None if value is None else tuple(compile(key, v, randoms, RANDOM_SHOWN) if isinstance(v, str)
                                                        else v for v in entries)
        object.__setattr__(self, "_law", (law, largest["xi"], largest["u"]))

    @property
    def random_initial(self) -> bool:
        """Whether the initial law draws (a formula names xi<k> or u<k>); else every path starts alike."""
        return self._law[1] + self._law[2] > 0

    def _initial_values(self, key) -> dict:
        """Each initial key's entries (float64 scalars), drawn from the path's ``key``: xi from one half of it,
        u from the other (jax.random, so a path's start depends on its key alone, whatever the shards)."""
        law, normals, uniforms = self._law
        drawn = ()
        if normals + uniforms:
            if key is None:
                raise ValueError(f"{type(self).__name__}: a random initial law is drawn from a path's key, not None")
            k_xi, k_u = jax.random.split(key)
            drawn = (*jax.random.normal(k_xi, (normals,), jnp.float64), *jax.random.uniform(k_u, (uniforms,), jnp.float64))
        value = lambda e: jnp.asarray(e(*drawn, *self._values) if callable(e) else e, dtype=jnp.float64)
        return {k: None if entries is None else tuple(map(value, entries)) for k, entries in law.items()}

    def checked_starts(self) -> tuple:
        """The initial states ``check`` inspects: the one start, or a random law's draws from CHECKED_DRAWS fixed keys
        (a start off the manifold on a set of draws of probability 0 is not seen; the runs' constraint residual is)."""
        if not self.random_initial:
            return (self.initial_state(None),)
        return tuple(self.initial_state(jax.random.key(k)) for k in range(CHECKED_DRAWS))

    def _initial(self, key):
        values = self._initial_values(key)
        q0, p0 = (jnp.broadcast_to(jnp.stack(values[k]), (self.dof,)) for k in ("q0", "p0"))
        return jnp.concatenate([q0, p0])


@dataclasses.dataclass(frozen=True)
class FormulaSystem(_Formulas, CanonicalSystem):
    r"""A canonical system whose :math:`H`, :math:`h_i`, :math:`F` and :math:`f_i` are formulas of the config.

    The config key ``noise_forcing`` (the formulas :math:`f_i`, one per noise: a text for ``dof`` 1, else a list
    of ``dof`` texts) is the field ``noise_forcing_formulas``: ``noise_forcing(q, p)`` is the base's method, which
    its ``parts`` calls. ``parameters`` is gathered from the config's other keys (``gather_parameters``), never
    given as a key itself."""

    config_name: ClassVar[str] = "custom"
    KEYS: ClassVar[Mapping[str, str]] = {"noise_forcing": "noise_forcing_formulas"}

    H: Formula = "(p**2 + q**2)/2"
    noise: tuple[Formula, ...] = ("0.1*p",)
    F: Formula | tuple[Formula, ...] | None = None
    noise_forcing_formulas: tuple[Formula | tuple[Formula, ...], ...] | None = None
    dof: int = 1
    q0: float | Formula | tuple[float | Formula, ...] = 1.0
    p0: float | Formula | tuple[float | Formula, ...] = 0.0
    parameters: tuple[tuple[str, float | tuple[float, ...]], ...] = ()

    def __post_init__(self):
        for name in ("q0", "p0"):
            object.__setattr__(self, name, _as_entries(getattr(self, name)))
        self._check_dof()
        qs, ps = state_symbols(self.dof)
        compile, finish = self._compiler(qs + ps)
        noise = (self.noise,) if isinstance(self.noise, str) else self.noise
        require("noise", self.noise, isinstance(noise, tuple) and len(noise) > 0,
                "a list of one or more noise Hamiltonians h_i")
        hamiltonian = compile("H", self.H)
        noise_hamiltonians = [compile("noise", h) for h in noise]
        forcing = None if self.F is None else self._per_dof("F", self.F, compile)
        noise_forcing, texts = None, self.noise_forcing_formulas
        if texts is not None:
            require("noise_forcing", texts, len(texts) == len(noise),
                    f"one forcing f_i per noise Hamiltonian ({len(noise)}), or null")
            noise_forcing = [self._per_dof("noise_forcing", f, compile) for f in texts]
        self._compile_initial(compile, ("q0", "p0"))
        finish()
        # Not fields: derived from them, so equality, hashing and pickling (__reduce__) see the texts alone.
        object.__setattr__(self, "_functions", (hamiltonian, noise_hamiltonians, forcing, noise_forcing))

    @property
    def noises(self) -> int:
        return len(self._functions[1])

    def invariants(self) -> tuple[str, ...]:
        r"""``("H",)`` where the exact flow keeps H on every path for these parameters, by sympy on the formulas
        with the parameters' values substituted (exactly, as the parser reads a literal): the forcing F and every
        noise forcing f_i are identically 0, and every noise Hamiltonian Poisson-commutes with H,
        :math:`\{H, h_i\} = \sum_j \partial_{q_j}H\,\partial_{p_j}h_i - \partial_{p_j}H\,\partial_{q_j}h_i`
        simplifies to 0 (then dH = 0 along the Stratonovich flow). Otherwise none: sympy not proving a 0 is no
        claim of one (kubo_formula at nu = 0 declares H, at its default nu nothing)."""
        return self._conserved

    @functools.cached_property
    def _conserved(self) -> tuple[str, ...]:
        import sympy

        values = {sympy.Symbol(name, real=True): sympy.Rational(repr(value))
                  for name, value in self._parameter_values.items()}
        zero = lambda e: sympy.simplify(e.subs(values)) == 0
        if not all(map(zero, self._expressions.get("F", []) + self._expressions.get("noise_forcing", []))):
            return ()
        qs, ps = (sympy.symbols(names, real=True) for names in state_symbols(self.dof))
        [H] = self._expressions["H"]
        bracket = lambda h: sum(sympy.diff(H, q) * sympy.diff(h, p) - sympy.diff(H, p) * sympy.diff(h, q)
                                for q, p in zip(qs, ps))
        return ("H",) if all(zero(bracket(h)) for h in self._expressions["noise"]) else ()

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

    def noise_forcing(self, q, p):
        """(m, dof): the forcings f_i of the noises."""
        if self._functions[3] is None:
            return super().noise_forcing(q, p)
        return jnp.stack([jnp.stack([self._call(f, q, p) for f in row]) for row in self._functions[3]])

    def initial_state(self, key):
        return self._initial(key)


@dataclasses.dataclass(frozen=True)
class LangevinFormulaSystem(_Formulas, LangevinSystem):
    r"""A Langevin system (``langevin.py``: friction ``c``, inverse temperature ``beta``, diagonal ``mass``,
    :math:`\sigma = \sqrt{2c/\beta}`) whose potential :math:`U(q)` is a formula of the config; the splitting
    integrators (SVIA/B/C) fit it as they fit the built-ins.

    The config key ``potential`` is the field ``potential_formula``: ``potential(q)`` is the base's method, which
    its ``hamiltonian`` and ``potential_force`` call. Its Boltzmann-Gibbs means (one degree of freedom) come
    from quadrature of the formula, as the built-ins' do; None where the quadrature does not converge."""

    config_name: ClassVar[str] = "custom_langevin"
    KEYS: ClassVar[Mapping[str, str]] = {"potential": "potential_formula"}
    ELSEWHERE: ClassVar[Mapping[str, str]] = {
        "constraints": "system=custom_constrained_langevin for a constrained system (custom_langevin is flat space: "
                       "svia, svib, svic)"}

    potential_formula: Formula = "q**2/2"
    dof: int = 1
    q0: float | Formula | tuple[float | Formula, ...] = 0.0
    p0: float | Formula | tuple[float | Formula, ...] = 0.0
    parameters: tuple[tuple[str, float | tuple[float, ...]], ...] = ()
    _float_fields: ClassVar[tuple[str, ...]] = ("mass",)      # q0, p0 may be formulas: _as_entries

    def __post_init__(self):
        self._check_dof()
        for name in ("q0", "p0"):
            object.__setattr__(self, name, _as_entries(getattr(self, name)))
        super().__post_init__()
        positions, momenta = state_symbols(self.dof)
        compile, finish = self._compiler(positions, reserved=momenta)
        self._compile(compile)
        finish()

    def _compile(self, compile):
        """Compiles the formulas (a subclass adds its own) before ``finish`` checks the parameters."""
        object.__setattr__(self, "_potential", compile("potential", self.potential_formula))
        self._compile_initial(compile, ("q0", "p0"))

    def initial_state(self, key):
        return self._initial(key)

    @property
    def noises(self) -> int:
        return self.dof

    def potential(self, q):
        """U(q), a scalar."""
        return jnp.asarray(self._potential(*(q[i] for i in range(self.dof)), *self._values), dtype=q.dtype)

    def mean_potential(self) -> float:
        r""":math:`\langle U\rangle` under :math:`e^{-\beta U}`, by quadrature over the line (one degree of
        freedom), the weight shifted by U's least value on a grid so it stays O(1) for large beta."""
        if self.dof != 1:
            raise ArithmeticError("a Boltzmann-Gibbs mean by quadrature in one dimension only")
        on_the_line = jax.jit(lambda x: self.potential(jnp.reshape(x, (1,))))
        u = lambda x: float(on_the_line(x))
        floor = float(jnp.min(jax.vmap(on_the_line)(jnp.linspace(-20.0, 20.0, 4001))))
        weight = lambda x: math.exp(-self.beta * (u(x) - floor))
        norm = _quad(weight, -math.inf, math.inf)
        return _quad(lambda x: u(x) * weight(x), -math.inf, math.inf) / norm



@dataclasses.dataclass(frozen=True)
class ConstrainedLangevinFormulaSystem(LangevinFormulaSystem, ConstrainedLangevinSystem):
    r"""A constrained Langevin system (``langevin.py``, paper 003 section 6) whose potential :math:`U(q)` and
    constraints :math:`g(q) = 0` (config key ``constraints``: k formulas in the positions, k < ``dof``) are
    formulas; only the constrained integrators (CSVIA/B/C) fit it, with the general SHAKE solve (Newton on the
    k multipliers, the Jacobian G from ``jax.jacfwd`` of the formulas): ``unit_sphere``'s closed form is the
    built-in ``spherical_pendulum``'s optimisation, which a formula cannot claim.

    A config name of its own (``custom_constrained_langevin``), not ``custom_langevin`` with a key: a class's
    ``structure`` says which integrators fit it, and the refusals list the systems of each structure by config
    name (``SYSTEMS``), so a flat and a constrained system are two names, as the built-ins are.
    ``constraints`` is the config key and ``constraint_formulas`` its field: the base's ``constraints`` is k,
    which the integrators read. A q0 off the manifold, or a p0 not tangent to it, is refused by the base's
    ``check``. No Boltzmann-Gibbs reference (the measure on the manifold needs its volume element)."""

    config_name: ClassVar[str] = "custom_constrained_langevin"
    KEYS: ClassVar[Mapping[str, str]] = LangevinFormulaSystem.KEYS | {"constraints": "constraint_formulas"}
    ELSEWHERE: ClassVar[Mapping[str, str]] = {}

    potential_formula: Formula = "q3"
    dof: int = 3
    q0: float | Formula | tuple[float | Formula, ...] = (0.0, 0.0, -1.0)
    p0: float | Formula | tuple[float | Formula, ...] = (0.0, 0.0, 0.0)
    constraint_formulas: tuple[Formula, ...] = ("q1**2 + q2**2 + q3**2 - 1",)

    def _compile(self, compile):
        super()._compile(compile)
        texts = (self.constraint_formulas,) if isinstance(self.constraint_formulas, str) else self.constraint_formulas
        require("constraints", self.constraint_formulas, isinstance(texts, tuple) and 1 <= len(texts) < self.dof,
                f"a list of 1 to {self.dof - 1} formulas g_j(q) = 0 in the positions (fewer than dof = {self.dof})")
        object.__setattr__(self, "_constraints", [compile("constraints", g) for g in texts])

    @property
    def constraints(self) -> int:
        return len(self._constraints)

    def constraint(self, q):
        return jnp.stack([jnp.asarray(g(*(q[i] for i in range(self.dof)), *self._values), dtype=q.dtype)
                          for g in self._constraints])

    def mean_potential(self) -> float:
        raise ArithmeticError("no Boltzmann-Gibbs mean of a constrained formula system (the manifold's volume element)")


# --- Lie-Poisson formula systems ---------------------------------------------------------------------------
# The largest so(n), su(N) a formula system takes: its formulas name each of the matrix's coordinates (255 for
# su(16)); a larger algebra is a class's (zeitlin.py, su(N) up to 256).
MATRIX_MAX = 16
ALGEBRAS = f"so3, se3, so(n) or su(N) (n, N from 2 to {MATRIX_MAX})"
# A product a x b x .. of those (lie.Product), of at most this many factors.
MAX_FACTORS = 16
_MATRIX = re.compile(r"(so|su)\((\d{1,3})\)")


@dataclasses.dataclass(frozen=True)
class _Chart:
    """An algebra named by its text, with the coordinates its formulas are written in: their symbols, their
    values at a dual element, the state's leaves and the keys of the initial state. ``kind`` is ``so3``
    (R^3, as ``rigid_body``), ``se3`` (two 3-vectors, as ``heavy_top``), ``so`` or ``su`` (n x n matrices)."""
    kind: str
    n: int = 3

    @classmethod
    def of(cls, text) -> _Chart | _ProductChart:
        """The chart of an algebra's text: one algebra, or a product ``so3 x so3`` (no algebra's name has an x)."""
        compact = "".join(text.split()).lower() if isinstance(text, str) else ""
        factors = compact.split("x")
        allowed = f"one of {ALGEBRAS}, or a product a x b x .. of 2 to {MAX_FACTORS} of them (so3 x so3)"
        require("algebra", text, len(factors) <= MAX_FACTORS, allowed)
        charts = []
        for factor in factors:
            matched = _MATRIX.fullmatch(factor)
            require("algebra", text, factor in ("so3", "se3") or (matched is not None and 2 <= int(matched[2]) <= MATRIX_MAX),
                    allowed)
            charts.append(cls(factor) if factor in ("so3", "se3") else cls(matched[1], int(matched[2])))
        return charts[0] if len(charts) == 1 else _ProductChart(tuple(charts))

    @property
    def algebra(self):
        if self.kind in ("so3", "se3"):
            return lie.SO3() if self.kind == "so3" else lie.SE3()
        return lie.MatrixAlgebra(self.n, complex=self.kind == "su")

    @functools.cached_property
    def entries(self) -> tuple[tuple[int, int, bool], ...]:
        """A matrix's coordinates as (row, column, imaginary part?), row by row: so(n) the entries above the
        diagonal; su(N) the real and imaginary parts of those and the imaginary diagonal (traceless)."""
        if self.kind == "so":
            return tuple((i, j, False) for i in range(self.n) for j in range(i + 1, self.n))
        return tuple((i, j, imaginary) for i in range(self.n) for j in range(i, self.n)
                     for imaginary in ((True,) if i == j else (False, True)))

    @functools.cached_property
    def symbols(self) -> tuple[str, ...]:
        """so3: pi1, pi2, pi3; se3: those and gamma1, gamma2, gamma3; so(n): m12, m13, .., m23, ..; su(N): re12,
        im12, .., im11, im22, ..; from n = 10 the indices are apart (m1_10), so no two read the same."""
        if self.kind in ("so3", "se3"):
            return tuple(f"{v}{k}" for v in ("pi", "gamma")[: 1 if self.kind == "so3" else 2] for k in (1, 2, 3))
        sep = "_" if self.n >= 10 else ""
        part = lambda imaginary: "m" if self.kind == "so" else ("im" if imaginary else "re")
        return tuple(f"{part(imaginary)}{i + 1}{sep}{j + 1}" for i, j, imaginary in self.entries)

    @property
    def initial_keys(self) -> tuple[str, ...]:
        return {"so3": ("pi0",), "se3": ("pi0", "gamma0")}.get(self.kind, ("m0",))

    def initial_sizes(self) -> tuple[int, ...]:
        return (3,) * len(self.initial_keys) if self.kind in ("so3", "se3") else (len(self.symbols),)

    @property
    def space(self) -> StateSpace:
        if self.kind in ("so3", "se3"):
            leaves = tuple(Leaf(name, (3,)) for name in ("pi", "gamma")[: len(self.initial_keys)])
            return StateSpace(leaves, bare=len(leaves) == 1)
        return StateSpace((Leaf("M", (self.n, self.n), "complex128" if self.kind == "su" else "float64"),), bare=True)

    def key_symbols(self, key: str) -> tuple[str, ...]:
        """The symbols an initial key's entries give, in order (pi0: pi1 pi2 pi3; m0: every symbol)."""
        return self.symbols if key == "m0" else tuple(s for s in self.symbols if s.startswith(key[:-1]))

    def dual(self, z):
        """The dual element of a state (se3: the pair of its leaves)."""
        return (z["pi"], z["gamma"]) if self.kind == "se3" else z

    def state(self, mu):
        return {"pi": mu[0], "gamma": mu[1]} if self.kind == "se3" else mu

    def initial(self, values: Mapping[str, Sequence]):
        """The dual element of an initial state's entries (float64 scalars by key)."""
        if self.kind in ("so3", "se3"):
            vectors = tuple(jnp.stack(values[k]) for k in self.initial_keys)
            return vectors if self.kind == "se3" else vectors[0]
        # As typed: an su(N) diagonal that sums to 0 at round-off (check) stays so, as every step's commutators
        # keep the trace; subtracting it would move the entries the user gave.
        return self.matrix(values["m0"])

    def su_diagonals(self, mu) -> list[list[float]]:
        """The imaginary diagonal of an su(N) element (whose sum, the trace, must vanish); none elsewhere."""
        return [[float(v) for v in np.imag(np.diagonal(np.asarray(mu)))]] if self.kind == "su" else []

    def values(self, mu) -> list:
        """The coordinates' values at the dual element ``mu`` (real scalars)."""
        if self.kind == "so3":
            return [mu[k] for k in range(3)]
        if self.kind == "se3":
            return [v[k] for v in mu for k in range(3)]
        rows, cols, imaginary = (np.asarray(c) for c in zip(*self.entries))
        x = mu[rows, cols]
        x = jnp.where(imaginary, jnp.imag(x), jnp.real(x)) if self.kind == "su" else x
        return [x[k] for k in range(len(self.entries))]

    def matrix(self, values) -> jax.Array:
        """The so(n) or su(N) matrix of coordinates' values (the inverse of ``values``), in JAX: a random initial
        law's values are traced."""
        m = jnp.zeros((self.n, self.n), jnp.complex128 if self.kind == "su" else jnp.float64)
        for (i, j, imaginary), v in zip(self.entries, values):
            if i == j:
                m = m.at[i, i].set(1j * v)
            elif imaginary:
                m = m.at[i, j].add(1j * v).at[j, i].add(1j * v)
            else:
                m = m.at[i, j].add(v).at[j, i].add(-v)
        return m


@dataclasses.dataclass(frozen=True)
class _ProductChart:
    """A product a x b x .. of charts (``lie.Product``): factor k's symbols are its own with the suffix ``_k``
    (``pi1_1 .. pi3_1, pi1_2 ..``), as ``lie.Product`` names the factors' Casimirs (``C2_1``), so the one rule
    names everything of a factor, and no two factors' symbols read the same. The state's leaves are the factors'
    with that suffix (``pi_1``, ``gamma_2``, ``M_3``). An initial key (``pi0``, ``gamma0``, ``m0``) lists its
    entries for every factor that has the key, factor by factor: the keys stay the system's fields, whatever the
    product."""
    factors: tuple[_Chart, ...]
    kind: ClassVar[str] = "product"

    @property
    def algebra(self):
        return lie.Product([f.algebra for f in self.factors])

    @functools.cached_property
    def symbols(self) -> tuple[str, ...]:
        return tuple(f"{s}_{k}" for k, f in enumerate(self.factors, 1) for s in f.symbols)

    def key_symbols(self, key: str) -> tuple[str, ...]:
        return tuple(f"{s}_{k}" for k, f in enumerate(self.factors, 1) if key in f.initial_keys for s in f.key_symbols(key))

    @property
    def initial_keys(self) -> tuple[str, ...]:
        return tuple(k for k in ("pi0", "gamma0", "m0") if any(k in f.initial_keys for f in self.factors))

    def initial_sizes(self) -> tuple[int, ...]:
        return tuple(len(self.key_symbols(k)) for k in self.initial_keys)

    @property
    def space(self) -> StateSpace:
        return StateSpace(tuple(dataclasses.replace(leaf, name=f"{leaf.name}_{k}")
                                for k, f in enumerate(self.factors, 1) for leaf in f.space.leaves))

    def dual(self, z):
        parts = []
        for k, f in enumerate(self.factors, 1):
            leaves = {leaf.name: z[f"{leaf.name}_{k}"] for leaf in f.space.leaves}
            parts.append(f.dual(f.space.from_leaves(leaves)))
        return tuple(parts)

    def state(self, mu):
        return {f"{name}_{k}": v for k, (f, x) in enumerate(zip(self.factors, mu), 1)
                for name, v in f.space.leaves_of(f.state(x)).items()}

    def initial(self, values: Mapping[str, Sequence]):
        taken, parts = dict.fromkeys(values, 0), []
        for f in self.factors:
            own = {}
            for key, size in zip(f.initial_keys, f.initial_sizes()):
                own[key], taken[key] = values[key][taken[key]: taken[key] + size], taken[key] + size
            parts.append(f.initial(own))
        return tuple(parts)

    def su_diagonals(self, mu) -> list[list[float]]:
        return [d for f, x in zip(self.factors, mu) for d in f.su_diagonals(x)]

    def values(self, mu) -> list:
        return [v for f, x in zip(self.factors, mu) for v in f.values(x)]


@dataclasses.dataclass(frozen=True)
class LiePoissonFormulaSystem(_Formulas, LiePoissonSystem):
    r"""A Lie-Poisson system (``lie_poisson.py``) whose Hamiltonian :math:`h` and noise Hamiltonians
    :math:`h_i` are formulas of the config, on the algebra its text names (config key ``algebra``):

    - ``so3``: :math:`\pi\in\mathbb R^3` (state leaf ``pi``, as ``rigid_body``), symbols ``pi1 pi2 pi3``,
      initial ``pi0``; Casimir C2 = :math:`|\pi|^2`.
    - ``se3``: :math:`(\pi, \gamma)` (leaves ``pi``, ``gamma``, as ``heavy_top``), symbols ``pi1..pi3``,
      ``gamma1..gamma3``, initial ``pi0``, ``gamma0``; Casimirs C1 = :math:`\pi\cdot\gamma`, C2 = :math:`|\gamma|^2`.
    - ``so(n)``: the real antisymmetric n x n matrix M (leaf ``M``), symbols ``m12, m13, .., m23, ..``
      (:math:`M_{ij}` above the diagonal, :math:`M_{ji} = -M_{ij}`), initial ``m0``: their values in that order.
    - ``su(N)``: the skew-Hermitian traceless M (complex leaf ``M``), symbols ``reij``, ``imij`` for i < j
      (:math:`M_{ij} = re_{ij} + i\,im_{ij}`, :math:`M_{ji} = -re_{ij} + i\,im_{ij}`) and ``imkk`` on the
      diagonal (:math:`M_{kk} = i\,im_{kk}`, summing to 0), row by row (``re12 im12 re13 im13 .. im22 ..``
      with ``im11`` first); initial ``m0``: their values in that order.

    - a product ``a x b x ..`` of those (``lie.Product``; ``so3 x so3``: two decoupled or coupled bodies): factor k's
      symbols are its own with the suffix ``_k`` (``pi1_1 .. pi3_2``), as its Casimirs are named (``C2_1``), its
      leaves too (``pi_1``, ``gamma_2``, ``M_3``); ``pi0``, ``gamma0``, ``m0`` list the entries of every factor with
      that key, factor by factor (``_ProductChart``). ``isomp`` fits a product of matrix algebras.

    From n = 10 the indices are apart, ``m1_10``. Every symbol is real, so a formula of them is a real
    function of the matrix: its gradient for the pairing comes from ``jax.grad`` and the projection on the
    algebra (the base's ``gradient``), so a formula in the entries above the diagonal means what it says.
    The Casimirs (:math:`\mathrm{tr}(M^{2k})`, :math:`\mathrm{tr}((iM)^k)`) are the algebra's, real, and
    ``isomp`` keeps them on the matrix algebras (so3 by hat included) as on the built-ins.

    ``algebra`` is the config key, ``algebra_name`` its field: the base's ``algebra`` is the Lie algebra
    itself, which the integrators use. The state carries no attitude (the built-ins' ``R0``): a formula
    system integrates the momentum alone, as papers 001 and 004 do (``lgvi_cayley`` fits so3 and se3 without
    it). Observables: ``H``, the Casimirs, and each coordinate by its symbol."""

    config_name: ClassVar[str] = "custom_lie_poisson"
    KEYS: ClassVar[Mapping[str, str]] = {"algebra": "algebra_name"}

    algebra_name: str = "so3"
    h: Formula = "pi1**2/4 + pi2**2/2 + 3*pi3**2/4"
    noise: tuple[Formula, ...] = ("pi1**2/20", "pi2**2/20", "pi3**2/20")
    pi0: tuple[float | Formula, ...] | None = (0.8912073600614354, 0.0, 0.4535961214255773)
    gamma0: tuple[float | Formula, ...] | None = None
    m0: tuple[float | Formula, ...] | None = None
    parameters: tuple[tuple[str, float | tuple[float, ...]], ...] = ()

    def __post_init__(self):
        for name in ("pi0", "gamma0", "m0"):
            value = getattr(self, name)
            if isinstance(value, (list, tuple)):
                object.__setattr__(self, name, _as_entries(value))
        chart = _Chart.of(self.algebra_name)
        compile, finish = self._compiler(chart.symbols)
        noise = (self.noise,) if isinstance(self.noise, str) else self.noise
        require("noise", self.noise, isinstance(noise, tuple) and len(noise) > 0,
                "a list of one or more noise Hamiltonians h_i")
        hamiltonian = compile("h", self.h)
        noise_hamiltonians = [compile("noise", h) for h in noise]
        self._compile_initial(compile, ("pi0", "gamma0", "m0"))
        finish()
        # Not fields: derived from them, so equality, hashing and pickling (__reduce__) see the texts alone.
        object.__setattr__(self, "_chart", chart)
        object.__setattr__(self, "_functions", (hamiltonian, noise_hamiltonians))

    def check(self):
        chart = self._chart
        for key, size in zip(chart.initial_keys, chart.initial_sizes()):
            value, symbols = getattr(self, key), chart.key_symbols(key) if key == "m0" or chart.kind == "product" else None
            coordinates = (f"{symbols[0]}, {symbols[1]}, .., {symbols[-1]}" if len(symbols) > 3
                           else ", ".join(symbols)) if symbols else None
            require(key, value, isinstance(value, tuple) and len(value) == size,
                    f"{size} numbers: the initial {'pi' if key == 'pi0' else 'gamma' if key == 'gamma0' else 'M'} "
                    f"on {chart.algebra.name}" + (f" ({coordinates}, in that order)" if coordinates else ""))
        for key in ("pi0", "gamma0", "m0"):
            if key not in chart.initial_keys:
                require(key, getattr(self, key), getattr(self, key) is None,
                        f"null with algebra {chart.algebra.name} (its initial state is {', '.join(chart.initial_keys)})")
        for z in self.checked_starts():     # a random law: its draws at fixed keys
            for diagonal in chart.su_diagonals(self.dual(z)):
                n = len(diagonal)
                require("m0", self.m0, abs(sum(diagonal)) <= 1e-12 * max(1.0, *map(abs, diagonal)),
                        f"an su({n}) matrix: its imaginary diagonal im11 + .. + im{n}{n} sums to 0 "
                        f"(traceless), not {sum(diagonal):.3g}")

    @property
    def noises(self) -> int:
        return len(self._functions[1])

    @property
    def algebra(self):
        return self._chart.algebra

    @property
    def space(self) -> StateSpace:
        return self._chart.space

    # --- physics -----------------------------------------------------------------------------
    def _call(self, function, mu):
        # A constant formula is a Python number; every symbol is real, so the value is too (float64).
        return jnp.asarray(function(*self._chart.values(mu), *self._values), dtype=jnp.float64)

    def hamiltonian(self, mu):
        return self._call(self._functions[0], mu)

    def noise_hamiltonians(self, mu):
        return jnp.stack([self._call(h, mu) for h in self._functions[1]])

    def dual(self, z):
        return self._chart.dual(z)

    def state(self, mu, attitude=None):
        """The state of a dual element; ``attitude`` (``lgvi_cayley`` passes the state's) is None here."""
        return self._chart.state(mu)

    def attitude(self, z):
        return None

    def initial_state(self, key):
        return self.state(self._chart.initial(self._initial_values(key)))

    def observables(self) -> dict[str, Callable]:
        """The base's (``H``, the Casimirs, the spectrum on a matrix algebra, the components of ``pi`` and
        ``gamma``), and each matrix coordinate by its symbol (``m12``, ``re12``, ``im11``)."""
        named = super().observables()
        if self._chart.kind == "product":     # by symbol (pi1_2), not by the leaves' components (pi_21: which is which?)
            leaves = [leaf.name for leaf in self.space.leaves]
            named = {k: f for k, f in named.items() if not any(k.startswith(n) and k[len(n):].isdigit() for n in leaves)}
        if self._chart.kind in ("so", "su", "product"):
            named |= {s: (lambda z, k=k: self._chart.values(self.dual(z))[k]) for k, s in enumerate(self._chart.symbols)}
        return named
