"""A formula system's named parameters and the compiler of its formulas.

Every key of a formula system's config that is not a field is a named parameter (``system.beta: 0.5``), gathered
into the field ``parameters``: a finite number, or a list of n of them (``inertia: [2, 1, 2/3]``, as the
built-ins' tuples), which the formulas read as ``inertia1 .. inertian``. The ``Compiler`` turns each formula of a
system into a JAX function of the state's symbols and the parameters' values, and refuses a parameter no formula
uses.
"""
from __future__ import annotations

import dataclasses
import keyword
import re
from collections.abc import Callable, Mapping, Sequence

from sgi_run.core.errors import ConfigError, require
from sgi_run.core.expressions import CONSTANTS, FUNCTIONS
from sgi_run.core.fields import is_real
from sgi_run.systems.formula.initial import RANDOM, InitialLaw
from sgi_run.systems.formula.parse import free_names, jax_function, parse

# The most numbers a list parameter may have (each is a symbol of every formula's generated function).
MAX_VECTOR = 1000



def as_floats(value):
    if isinstance(value, (list, tuple)):
        return tuple(float(v) for v in value)
    return float(value)


def as_parameters(parameters) -> tuple[tuple[str, float | tuple[float, ...]], ...]:
    """The field ``parameters`` as it is kept (hashed): (name, number or tuple of numbers) pairs, a list given from
    Python (the config's are tuples already) as a tuple."""
    return tuple((name, as_floats(value)) for name, value in parameters)


def parameter_symbols(name: str, value) -> list[str]:
    """The formula symbols of a parameter: its name for a number, ``<name>1 .. <name>n`` for a list of n
    numbers (``inertia: [2, 1, 2/3]`` gives ``inertia1``, ``inertia2``, ``inertia3``, as the built-ins' tuples)."""
    return [f"{name}{i}" for i in range(1, len(value) + 1)] if isinstance(value, tuple) else [name]


def _shown(name: str, value) -> str:
    symbols = parameter_symbols(name, value)
    return name if len(symbols) == 1 else f"{name} ({symbols[0]} .. {symbols[-1]})"


class Converted:
    """A dataclass field's default that converts the value the constructor is given before it is kept (the
    dataclass's ``__init__`` sets a field through it): a frozen system keeps its fields in one form (an initial
    state's entries as floats and texts, ``parameters`` as tuples) without being changed after construction.

        q0: float | Formula | tuple[float | Formula, ...] = Converted(1.0, as_entries)
    """

    def __init__(self, default, convert: Callable):
        self.default, self.convert = default, convert

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        return self.default if instance is None else instance.__dict__[self.name]

    def __set__(self, instance, value):
        instance.__dict__[self.name] = self.convert(value)


def gathered(cls, config: Mapping) -> dict:
    """The config's keys that are not fields of ``cls``, gathered into ``parameters`` (each a finite number or a
    list of finite numbers); a key that belongs to a sibling config name (``cls.MISPLACED_KEYS``) or names a field apart
    from its key (``cls.KEY_TO_FIELD``) refused by name."""
    for key, instead in cls.MISPLACED_KEYS.items():
        if key in config:
            raise ConfigError(key, config[key], instead)
    for key, field in cls.KEY_TO_FIELD.items():
        if field in config:
            raise ConfigError(field, config[field], f"the key {key} (system.{key}), not {field}")
    config = {cls.KEY_TO_FIELD.get(k, k): v for k, v in config.items()}
    fields = {f.name for f in dataclasses.fields(cls)}
    if "parameters" in config:
        raise ConfigError("parameters", config["parameters"],
                          "the parameters as keys of their own (system.beta: 0.5), not a mapping")
    named = {k: v for k, v in config.items() if k not in fields}
    for name, value in named.items():
        vector = isinstance(value, (list, tuple)) and 1 <= len(value) <= MAX_VECTOR and all(map(is_real, value))
        require(name, value, is_real(value) or vector,
                f"a finite number, or a list of 1 to {MAX_VECTOR} finite numbers (a parameter a formula uses: "
                f"a list's are {name}1, {name}2, ...)")
    kept = {k: v for k, v in config.items() if k in fields}
    return kept | {"parameters": tuple((k, as_floats(v)) for k, v in sorted(named.items()))}


@dataclasses.dataclass(frozen=True)
class Compiled:
    """A system's formulas compiled: its functions by config key (a system's own layout: a function, a list of
    them, None), its initial law, and what every generated function takes after the state's symbols."""
    functions: Mapping[str, object]
    law: InitialLaw
    values: tuple[float, ...]                     # the parameters' values, symbol by symbol
    # The sympy expressions by key, and the parameters' values by symbol: what ``invariants`` reasons on.
    expressions: Mapping[str, list]
    parameter_values: Mapping[str, float]


class Compiler:
    """``compiler(key, text)`` is the text's JAX function of the symbols and the parameters' values (a list
    parameter's one by one); ``compiler.finish(functions, law)`` refuses a parameter no compiled formula used, and
    gives the ``Compiled``. A parameter's symbols cannot be the state's symbols, ``reserved`` (names the formulas
    cannot use, as the Langevin momenta), a function, a constant, or another's."""

    def __init__(self, system, symbols: Sequence[str], reserved: Sequence[str] = ()):
        self.system = system
        taken = set(symbols) | set(reserved) | set(FUNCTIONS) | set(CONSTANTS)
        owners, values = {}, {}     # each parameter's symbol -> its parameter's name, its number
        for name, value in system.parameters:
            require(name, value, name.isidentifier() and not keyword.iskeyword(name) and not name.startswith("_")
                    and name not in taken, f"a parameter named as a formula names it (not one of {sorted(taken)})")
            for symbol, number in zip(parameter_symbols(name, value), value if isinstance(value, tuple) else (value,)):
                owner = ("the state's or a function's" if symbol in taken else f"{owners[symbol]}'s" if symbol in owners
                         else "an initial law's random variable" if RANDOM.fullmatch(symbol) else None)
                require(name, value, owner is None, f"a parameter whose formula symbols are its own ({symbol} is "
                        f"also {owner})")
                owners[symbol], values[symbol] = name, number
        self.owners, self.values = owners, values
        self.names = list(symbols) + list(values)
        self.used: set[str] = set()
        self.expressions: dict[str, list] = {}

    def __call__(self, key, text, leading=None, shown=None):
        """``leading``: the symbols before the parameters' where not the state's (an initial law's random
        variables), ``shown`` as a refusal lists them."""
        here = self.names if leading is None else list(leading) + list(self.values)
        try:
            expression = parse(key, text, here, None if shown is None else [*shown, *self.values])
        except ConfigError:
            self._refuse_misshapen(text, here)
            raise
        self.used.update(self.owners[name] for name in free_names(expression) if name in self.owners)
        self.expressions.setdefault(key, []).append(expression)
        return jax_function(expression, here)

    def per_dof(self, key, formulas):
        """A formula per degree of freedom (one text for ``dof`` 1), each compiled."""
        dof = self.system.dof
        texts = (formulas,) if not isinstance(formulas, (list, tuple)) else tuple(formulas)
        require(key, formulas, len(texts) == dof,
                f"{'a formula' if dof == 1 else f'a list of {dof} formulas'} (one per degree of freedom)")
        return [self(key, text) for text in texts]

    def finish(self, functions: Mapping[str, object], law) -> Compiled:
        system = self.system
        keys = ", ".join(system.config_key(f.name) for f in dataclasses.fields(system) if f.name != "parameters")
        shown = ", ".join(_shown(name, value) for name, value in system.parameters if name in self.used)
        for name, value in system.parameters:
            require(name, value, name in self.used, f"a key of {system.config_name} ({keys}) or a parameter its "
                    f"formulas use ({shown or 'none'})")
        return Compiled(dict(functions), law, tuple(self.values.values()), self.expressions, dict(self.values))

    def _refuse_misshapen(self, text, names):
        """A formula that names a list parameter's entries (inertia1) where it is a number, or a number parameter
        where it is a list, is refused on the parameter's key: that key was typed (system.inertia=2), not the
        formula's."""
        unknown = set(re.findall(r"[A-Za-z_]\w*", text if isinstance(text, str) else "")) - set(names)
        for name, value in self.system.parameters:
            if isinstance(value, tuple):
                require(name, value, name not in unknown, f"a number: the formulas use {name}")
            else:
                entries = sorted(u for u in unknown if re.fullmatch(rf"{re.escape(name)}\d+", u))
                require(name, value, not entries, f"a list of numbers: the formulas use {', '.join(entries)}")
