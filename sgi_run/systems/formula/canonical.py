"""``FormulaSystem`` (config name ``custom``): a canonical system whose H, noise Hamiltonians and forcings are
formulas of the config."""
from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from typing import ClassVar

import jax.numpy as jnp

from sgi_run.core.errors import require
from sgi_run.systems.canonical import CanonicalSystem
from sgi_run.systems.formula.base import _Formulas
from sgi_run.systems.formula.initial import InitialLaw, as_entries
from sgi_run.systems.formula.parameters import Compiled, Compiler, Converted, as_parameters
from sgi_run.systems.formula.parse import Formula, state_symbols


@dataclasses.dataclass(frozen=True)
class FormulaSystem(_Formulas, CanonicalSystem):
    r"""A canonical system whose :math:`H`, :math:`h_i`, :math:`F` and :math:`f_i` are formulas of the config.

    The config key ``noise_forcing`` (the formulas :math:`f_i`, one per noise: a text for ``dof`` 1, else a list
    of ``dof`` texts) is the field ``noise_forcing_formulas``: ``noise_forcing(q, p)`` is the base's method, which
    its ``parts`` calls. ``parameters`` is gathered from the config's other keys (``gather_parameters``), never
    given as a key itself."""

    config_name: ClassVar[str] = "custom"
    KEY_TO_FIELD: ClassVar[Mapping[str, str]] = {"noise_forcing": "noise_forcing_formulas"}

    H: Formula = "(p**2 + q**2)/2"
    noise: tuple[Formula, ...] = ("0.1*p",)
    F: Formula | tuple[Formula, ...] | None = None
    noise_forcing_formulas: tuple[Formula | tuple[Formula, ...], ...] | None = None
    dof: int = 1
    q0: float | Formula | tuple[float | Formula, ...] = Converted(1.0, as_entries)  # noqa: RUF009 (a converter)
    p0: float | Formula | tuple[float | Formula, ...] = Converted(0.0, as_entries)  # noqa: RUF009 (a converter)
    parameters: tuple[tuple[str, float | tuple[float, ...]], ...] = Converted((), as_parameters)

    def __post_init__(self):
        self._check_dof()
        self._compiled     # noqa: B018 (compiled, or refused, as it is built)

    def _compile(self) -> Compiled:
        qs, ps = state_symbols(self.dof)
        compile = Compiler(self, qs + ps)
        noise = (self.noise,) if isinstance(self.noise, str) else self.noise
        require("noise", self.noise, isinstance(noise, tuple) and len(noise) > 0,
                "a list of one or more noise Hamiltonians h_i")
        hamiltonian = compile("H", self.H)
        noise_hamiltonians = [compile("noise", h) for h in noise]
        forcing = None if self.F is None else compile.per_dof("F", self.F)
        noise_forcing, texts = None, self.noise_forcing_formulas
        if texts is not None:
            require("noise_forcing", texts, len(texts) == len(noise),
                    f"one forcing f_i per noise Hamiltonian ({len(noise)}), or null")
            noise_forcing = [compile.per_dof("noise_forcing", f) for f in texts]
        law = InitialLaw.compile(compile, {"q0": self.q0, "p0": self.p0})
        return compile.finish({"H": hamiltonian, "noise": noise_hamiltonians, "F": forcing,
                               "noise_forcing": noise_forcing}, law)

    @property
    def noises(self) -> int:
        return len(self._functions["noise"])

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
                  for name, value in self._compiled.parameter_values.items()}
        expressions = self._compiled.expressions
        zero = lambda e: sympy.simplify(e.subs(values)) == 0
        if not all(map(zero, expressions.get("F", []) + expressions.get("noise_forcing", []))):
            return ()
        qs, ps = (sympy.symbols(names, real=True) for names in state_symbols(self.dof))
        [H] = expressions["H"]
        bracket = lambda h: sum(sympy.diff(H, q) * sympy.diff(h, p) - sympy.diff(H, p) * sympy.diff(h, q)
                                for q, p in zip(qs, ps))
        return ("H",) if all(zero(bracket(h)) for h in expressions["noise"]) else ()

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
        return self._call(self._functions["H"], q, p)

    def noise_hamiltonians(self, q, p):
        return jnp.stack([self._call(h, q, p) for h in self._functions["noise"]])

    def forcing(self, q, p):
        if self._functions["F"] is None:
            return jnp.zeros_like(p)
        return jnp.stack([self._call(f, q, p) for f in self._functions["F"]])

    def noise_forcing(self, q, p):
        """(m, dof): the forcings f_i of the noises."""
        if self._functions["noise_forcing"] is None:
            return super().noise_forcing(q, p)
        return jnp.stack([jnp.stack([self._call(f, q, p) for f in row]) for row in self._functions["noise_forcing"]])

    def initial_state(self, key):
        return self._initial(key)
