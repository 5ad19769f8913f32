"""``LangevinFormulaSystem`` (``custom_langevin``): a Langevin system (``systems.langevin``) whose potential U(q) is
a formula; ``ConstrainedLangevinFormulaSystem`` (``custom_constrained_langevin``) adds k constraints g(q) = 0."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import ClassVar

import jax
import jax.numpy as jnp

from sgi_run.core.errors import require
from sgi_run.systems.formula.base import _Formulas
from sgi_run.systems.formula.initial import InitialLaw, as_entries
from sgi_run.systems.formula.parameters import Compiled, Compiler, Converted, as_parameters
from sgi_run.systems.formula.parse import Formula, state_symbols
from sgi_run.systems.langevin import ConstrainedLangevinSystem, LangevinSystem, _quad


@dataclasses.dataclass(frozen=True)
class LangevinFormulaSystem(_Formulas, LangevinSystem):
    r"""A Langevin system (``langevin.py``: friction ``c``, inverse temperature ``beta``, diagonal ``mass``,
    :math:`\sigma = \sqrt{2c/\beta}`) whose potential :math:`U(q)` is a formula of the config; the splitting
    integrators (SVIA/B/C) fit it as they fit the built-ins.

    The config key ``potential`` is the field ``potential_formula``: ``potential(q)`` is the base's method, which
    its ``hamiltonian`` and ``potential_force`` call. Its Boltzmann-Gibbs means (one degree of freedom) come
    from quadrature of the formula, as the built-ins' do; None where the quadrature does not converge."""

    config_name: ClassVar[str] = "custom_langevin"
    KEY_TO_FIELD: ClassVar[Mapping[str, str]] = {"potential": "potential_formula"}
    MISPLACED_KEYS: ClassVar[Mapping[str, str]] = {
        "constraints": "system=custom_constrained_langevin for a constrained system (custom_langevin is flat space: "
                       "svia, svib, svic)"}

    potential_formula: Formula = "q**2/2"
    dof: int = 1
    q0: float | Formula | tuple[float | Formula, ...] = Converted(0.0, as_entries)  # noqa: RUF009 (a converter)
    p0: float | Formula | tuple[float | Formula, ...] = Converted(0.0, as_entries)  # noqa: RUF009 (a converter)
    parameters: tuple[tuple[str, float | tuple[float, ...]], ...] = Converted((), as_parameters)
    _float_fields: ClassVar[tuple[str, ...]] = ("mass",)      # q0, p0 may be formulas: as_entries

    def __post_init__(self):
        self._check_dof()
        super().__post_init__()
        self._compiled     # noqa: B018 (compiled, or refused, as it is built)

    def _compile(self) -> Compiled:
        positions, momenta = state_symbols(self.dof)
        compile = Compiler(self, positions, reserved=momenta)
        return compile.finish(*self._compile_formulas(compile))

    def _compile_formulas(self, compile: Compiler) -> tuple[dict, InitialLaw]:
        """The functions by key and the initial law (a subclass adds its own), before ``finish`` checks the
        parameters."""
        potential = compile("potential", self.potential_formula)
        return {"potential": potential}, InitialLaw.compile(compile, {"q0": self.q0, "p0": self.p0})

    def initial_state(self, key):
        return self._initial(key)

    @property
    def noises(self) -> int:
        return self.dof

    def potential(self, q):
        """U(q), a scalar."""
        return jnp.asarray(self._functions["potential"](*(q[i] for i in range(self.dof)), *self._values),
                           dtype=q.dtype)

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
    r"""A constrained Langevin system (``langevin.py``; Bou-Rabee & Owhadi (2007), section 6) whose potential
    :math:`U(q)` and constraints :math:`g(q) = 0` (config key ``constraints``: k formulas in the positions,
    k < ``dof``) are formulas; only the constrained integrators (CSVIA/B/C) fit it, with the general SHAKE solve
    (Newton on the k multipliers, the Jacobian G from ``jax.jacfwd`` of the formulas): ``unit_sphere``'s closed
    form is the built-in ``spherical_pendulum``'s optimisation, which a formula cannot claim.

    A config name of its own (``custom_constrained_langevin``), not ``custom_langevin`` with a key: a class's
    ``structure`` says which integrators fit it, and the refusals list the systems of each structure by config
    name (``SYSTEMS``), so a flat and a constrained system are two names, as the built-ins are.
    ``constraints`` is the config key and ``constraint_formulas`` its field: the base's ``constraints`` is k,
    which the integrators read. A q0 off the manifold, or a p0 not tangent to it, is refused by the base's
    ``check``. No Boltzmann-Gibbs reference (the measure on the manifold needs its volume element)."""

    config_name: ClassVar[str] = "custom_constrained_langevin"
    KEY_TO_FIELD: ClassVar[Mapping[str, str]] = LangevinFormulaSystem.KEY_TO_FIELD | {"constraints": "constraint_formulas"}
    MISPLACED_KEYS: ClassVar[Mapping[str, str]] = {}

    potential_formula: Formula = "q3"
    dof: int = 3
    q0: float | Formula | tuple[float | Formula, ...] = Converted((0.0, 0.0, -1.0), as_entries)  # noqa: RUF009 (a converter)
    p0: float | Formula | tuple[float | Formula, ...] = Converted((0.0, 0.0, 0.0), as_entries)  # noqa: RUF009 (a converter)
    constraint_formulas: tuple[Formula, ...] = ("q1**2 + q2**2 + q3**2 - 1",)

    def _compile_formulas(self, compile: Compiler) -> tuple[dict, InitialLaw]:
        functions, law = super()._compile_formulas(compile)
        texts = (self.constraint_formulas,) if isinstance(self.constraint_formulas, str) else self.constraint_formulas
        require("constraints", self.constraint_formulas, isinstance(texts, tuple) and 1 <= len(texts) < self.dof,
                f"a list of 1 to {self.dof - 1} formulas g_j(q) = 0 in the positions (fewer than dof = {self.dof})")
        return functions | {"constraints": [compile("constraints", g) for g in texts]}, law

    @property
    def constraints(self) -> int:
        return len(self._functions["constraints"])

    def constraint(self, q):
        return jnp.stack([jnp.asarray(g(*(q[i] for i in range(self.dof)), *self._values), dtype=q.dtype)
                          for g in self._functions["constraints"]])

    def mean_potential(self) -> float:
        raise ArithmeticError("no Boltzmann-Gibbs mean of a constrained formula system (the manifold's volume element)")
