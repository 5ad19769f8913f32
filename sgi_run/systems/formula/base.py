"""What every formula system shares: its named parameters (the config's keys that are not fields, gathered into
the field ``parameters``), its formulas compiled once, at construction, and its initial law."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import ClassVar

import jax
import jax.numpy as jnp

from sgi_run.core.fields import integer
from sgi_run.systems.formula.initial import CHECKED_DRAWS
from sgi_run.systems.formula.parameters import Compiled, gathered
from sgi_run.systems.formula.parse import state_symbols


class _Formulas:
    """The base of the formula systems: ``_compile`` (a system's own) compiles its formulas into a ``Compiled``,
    asked for once as the system is built (so a formula is refused before any compute) and kept beside the fields:
    derived from them, so equality, hashing and pickling (``__reduce__``) see the texts alone.

    A formula's text is a field named apart from its config key (``System.KEY_TO_FIELD``) where the key's own name is the
    base class's method (a Langevin system's ``potential(q)``, a canonical one's ``noise_forcing(q, p)``, a
    Lie-Poisson one's ``algebra``): the base's derived physics then calls the formula system's methods as it
    calls a built-in's."""

    open_parameters: ClassVar[bool] = True
    # A key that belongs to a sibling config name (config key -> what to use instead): refused by name, before
    # it is read as a parameter (a list of formulas is no parameter's value).
    MISPLACED_KEYS: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def gather_parameters(cls, config: Mapping) -> dict:
        """The config's keys that are not fields, gathered into ``parameters`` (each a finite number or a
        list of finite numbers)."""
        return gathered(cls, config)

    def _compile(self) -> Compiled:
        raise NotImplementedError

    @functools.cached_property
    def _compiled(self) -> Compiled:
        return self._compile()

    @property
    def _functions(self) -> Mapping[str, object]:
        return self._compiled.functions

    @property
    def _values(self) -> tuple[float, ...]:
        """The parameters' values, symbol by symbol: the last arguments of every generated function."""
        return self._compiled.values

    def _check_dof(self):
        integer("dof", self.dof, "an integer from 1 to 1000", at_least=1, at_most=1000)

    @property
    def coordinates(self) -> tuple[str, ...]:
        """The state's entries by their formula symbols (q1..qn, p1..pn): the observables' names and the views'
        (the class default, ("q", "p"), names one degree of freedom only)."""
        positions, momenta = state_symbols(self.dof)
        return tuple(positions + momenta)

    def __reduce__(self):
        # Rebuilt from its texts: the compiled functions are generated code, which pickle cannot carry.
        return type(self), tuple(getattr(self, f.name) for f in dataclasses.fields(self))

    # --- the initial law ----------------------------------------------------------------------------
    @property
    def random_initial(self) -> bool:
        """Whether the initial law draws (a formula names xi<k> or u<k>); else every path starts alike."""
        return self._compiled.law.random

    def _initial_values(self, key) -> dict:
        """Each initial key's entries (float64 scalars), drawn from the path's ``key``."""
        if self.random_initial and key is None:
            raise ValueError(f"{type(self).__name__}: a random initial law is drawn from a path's key, not None")
        return self._compiled.law.values(key, self._values)

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
