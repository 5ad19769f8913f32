r"""Weak Lagrange-d'Alembert stochastic Runge-Kutta methods (Kraus & Tyranowski 2021, Def. 3.7, eq. 3.42;
SRKw1, SRKw2). One implementation; methods are tableaux.

Drift stages :math:`Z^{(0)}_i` and, for each noise :math:`l = 1..m`, noise stages :math:`Z^{(l)}_i`,
with :math:`X` the full drift and :math:`Y_r` the full noise fields (forcing included) and the
three-point variables :math:`\hat I_r`:

.. math::
    Z^{(0)}_i = z + \Delta t\sum_j a^{(0)}_{ij}X(Z^{(0)}_j) + \sum_r\hat I_r\sum_j b^{(0)}_{ij}Y_r(Z^{(r)}_j)

    Z^{(l)}_i = z + \Delta t\sum_j a^{(1)}_{ij}X(Z^{(0)}_j) + \hat I_l\sum_j b^{(1)}_{ij}Y_l(Z^{(l)}_j)
                + \sum_{r\ne l}\hat I_r\sum_j b^{(3)}_{ij}Y_r(Z^{(r)}_j)

    z^+ = z + \Delta t\sum_i\alpha_iX(Z^{(0)}_i) + \sum_r\hat I_r\sum_i\beta_iY_r(Z^{(r)}_i)

Tableau (3.44): ``a0 | b0`` over ``a1 | b1 | b3`` over ``alpha | beta``. A tableau without ``b3`` is
a single-noise method (the paper's "b3 = 0 for m = 1", SRKw2) and refuses systems with m > 1.

Solving: the stages form a dependency graph (stage u depends on v when v's coefficient in u's
equation is nonzero and the field evaluated at v depends on the state). Only the stages the update
reaches are computed (SRKw2 never needs :math:`Z^{(1)}_{3,4}`), and they are solved one strongly
connected component at a time, in dependency order: a component that depends on itself is one
solve in its unknowns alone, any other is evaluated explicitly. The tableau alone gives SRKw1
(lambda = 0) two sequential 2N solves and SRKw2 one coupled 12N solve (:math:`a^{(1)}_{14} = 1/3`
ties :math:`Z^{(1)}_1` to :math:`Z^{(0)}_4`, whose :math:`b^{(0)}` row ties it back). A field that
does not depend on the state (additive noise, read off the system's jaxpr) ties no stage to
another, so its stages are never needed: with additive noise SRKw2 is four sequential 2N solves
(:math:`a^{(0)}` is lower triangular in Kraus & Tyranowski's (2021) eq. 3.49) and SRKw1 one. No per-method code.

Every tableau is checked on construction against the Lagrange-d'Alembert conditions (3.43) and
the weak order conditions of its declared ``weak_order`` (for one noise; ``weak_srk``).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.extend.core import Var

from sgi_run.core.tableau import coefficient_array, variational_residual
from sgi_run.integrators.base import ImplicitIntegrator, SolverStats
from sgi_run.integrators.weak_srk import weak_order_conditions

MATRICES = ("a0", "b0", "a1", "b1", "b3")

# (3.43): w1_i X_ij + w2_j Y_ji = w1_i w2_j for the pairs ((w1, X), (w2, Y)).
_LDA_PAIRS = [(("alpha", "a0"), ("alpha", "a0")), (("alpha", "b0"), ("beta", "a1")),
              (("beta", "b1"), ("beta", "b1")), (("beta", "b3"), ("beta", "b3"))]


@dataclasses.dataclass(frozen=True, eq=False)
class WeakLdATableau:
    a0: np.ndarray
    b0: np.ndarray
    a1: np.ndarray
    b1: np.ndarray
    b3: np.ndarray          # zeros when the method is for one noise
    alpha: np.ndarray
    beta: np.ndarray
    single_noise: bool      # b3 not given
    weak_order: int

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> WeakLdATableau:
        s = len(spec["alpha"])
        single_noise = spec.get("b3") is None
        spec = dict(spec, b3=np.zeros((s, s)).tolist()) if single_noise else spec
        arrays = {m: coefficient_array(spec[m], params, f"{key}.{m}", (s, s)) for m in MATRICES}
        arrays.update({w: coefficient_array(spec[w], params, f"{key}.{w}", (s,)) for w in ("alpha", "beta")})
        return cls(**arrays, single_noise=single_noise, weak_order=spec.get("weak_order", 1))

    def config(self) -> dict:
        """The mapping ``from_config`` reads back to this tableau (``single_noise``: no b3)."""
        spec = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "single_noise"}
        spec = {k: v.tolist() if isinstance(v, np.ndarray) else v for k, v in spec.items()}
        return spec | {"b3": None} if self.single_noise else spec

    @property
    def stages(self) -> int:
        return len(self.alpha)

    def conditions(self) -> dict[str, float]:
        """Residuals of (3.43) and of the weak order conditions; all zero for a valid tableau."""
        res = {}
        for (w1, x), (w2, y) in _LDA_PAIRS:
            if x == "b3" and self.single_noise:
                continue    # (3.43d) couples different noises; it says nothing about m = 1
            W1, X, W2, Y = (getattr(self, n) for n in (w1, x, w2, y))
            res[f"(3.43) {w1}*{x} + {w2}*{y}"] = variational_residual(W1, X, W2, Y)
        res.update(weak_order_conditions(self.a0, self.b0, self.a1, self.b1, self.alpha, self.beta,
                                         self.weak_order))
        return res

    def schedule(self, m: int, constant_drift: bool = False, constant_noise: bool = False
                 ) -> list[tuple[tuple[tuple[int, int], ...], bool]]:
        """The needed stages in solving order, as components ``((group, stage), ...), implicit``;
        group 0 is the drift stages, group l the stages of noise l (see the module docstring).
        ``constant_drift``, ``constant_noise``: that field does not depend on the state."""
        s = self.stages
        # depends[u, v]: stage u's equation has a nonzero coefficient on stage v; u = group * s + i.
        depends = np.block([[self.a0] + [self.b0] * m]
                           + [[self.a1] + [self.b1 if r == l else self.b3 for r in range(m)] for l in range(m)]) != 0
        update = np.concatenate([self.alpha] + [self.beta] * m) != 0
        # A constant field has the same value at every stage: nothing depends on where it is evaluated.
        constant = np.repeat([constant_drift] + [constant_noise] * m, s)
        depends[:, constant] = False
        update[constant] = False
        n = len(update)
        reach = depends | np.eye(n, dtype=bool)   # u reaches v: the reflexive-transitive closure,
        for _ in range(n.bit_length()):            # by squaring (paths double in length each time)
            reach = reach | (reach @ reach)
        needed = [v for v in range(n) if (update & reach[:, v]).any()]
        # A component reaches strictly fewer stages than any component that depends on it, so
        # sorting by the number of stages reached is a dependency order.
        components = []
        for u in sorted(needed, key=lambda u: reach[u].sum()):
            component = tuple(v for v in needed if reach[u, v] and reach[v, u])
            if component not in [c for c, _ in components]:
                implicit = bool(depends[np.ix_(component, component)].any())
                components.append((component, implicit))
        return [(tuple(divmod(v, s) for v in c), implicit) for c, implicit in components]


def _depends_on_argument(f, x) -> bool:
    """Whether ``f(x)`` depends on ``x``, read off its jaxpr: an operation with an input that
    depends on ``x`` is taken to have outputs that do (conservative: never a false no)."""
    jaxpr = jax.make_jaxpr(f)(x).jaxpr
    dependent = set(jaxpr.invars)
    for eqn in jaxpr.eqns:
        if any(isinstance(v, Var) and v in dependent for v in eqn.invars):
            dependent.update(eqn.outvars)
    return any(isinstance(v, Var) and v in dependent for v in jaxpr.outvars)


def _plus_weighted(start, weights, fields):
    """``start + sum_v weights[v] * fields[v]``."""
    for v, w in weights.items():
        start = start + w * fields[v]
    return start


@dataclasses.dataclass(frozen=True)
class WeakLdARK(ImplicitIntegrator):
    family: ClassVar[str] = "weak_lda_rk"

    @property
    def max_noises(self) -> int | None:
        return 1 if self.tableau.single_noise else None

    @property
    def noise_kind(self) -> str:
        return "three_point"

    @staticmethod
    def constant_fields(system) -> tuple[bool, bool]:
        """Whether the system's drift, and its noise fields, do not depend on the state."""
        # Read off the fields' jaxprs (_depends_on_argument, the one place), not declared by the system (System
        # has no additive_noise): every system answers without declaring anything, a formula's and one of one's
        # own included, and never with a false "constant", which would skip stages the update reads (wrong
        # numbers). A declaration could be missing (other stages solved: other numbers) or wrong.
        z = system.space.zeros()
        return not _depends_on_argument(system.drift, z), not _depends_on_argument(system.noise_fields, z)

    def schedule(self, system, constant: tuple[bool, bool] | None = None):
        """The tableau's schedule on ``system``, knowing which of its fields are constant
        (``constant_fields``, read off the system unless given)."""
        return self.tableau.schedule(system.noises, *(constant or self.constant_fields(system)))

    def newton_unknowns(self, system) -> int:
        implicit = [len(component) for component, implicit in self.schedule(system) if implicit]
        return max(implicit, default=0) * 2 * system.dof

    def advance(self, system, z, dt, xi):
        constant = self.constant_fields(system)
        return self._advance_in_order(self.schedule(system, constant), constant, system, z, dt, xi)

    def _weights(self, dt, i_hat, group, i) -> dict[tuple[int, int], jax.Array]:
        """Stage ``(group, i)``'s equation as ``Z = z + sum_v weights[v] * field(Z_v)``, over the
        stages v = (h, j) with a nonzero coefficient: ``dt a_ij`` on ``X(Z0_j)`` and ``I_h b_ij`` on
        ``Y_h(Z^(h)_j)``, where b is b0 for a drift stage, b1 (own noise) or b3 for a noise stage."""
        t = self.tableau
        a = t.a0 if group == 0 else t.a1
        weights = {(0, j): dt * a[i, j] for j in range(t.stages) if a[i, j] != 0}
        for h in range(1, len(i_hat) + 1):
            b = t.b0 if group == 0 else t.b1 if h == group else t.b3
            weights.update({(h, j): i_hat[h - 1] * b[i, j] for j in range(t.stages) if b[i, j] != 0})
        return weights

    @staticmethod
    def _fields_at(system, component, values):
        """``{(group, stage): field}`` at the component's stage values ``values`` (one row each):
        ``X(Z0_i)`` for group 0, ``Y_l(Z^(l)_i)`` for group l."""
        return {(g, i): system.drift(v) if g == 0 else system.noise_fields(v)[g - 1]
                for (g, i), v in zip(component, values)}

    def _advance_in_order(self, schedule, constant, system, z, dt, xi):
        """One step, solving the stages component by component in ``schedule``'s order (the
        tableau's schedule, or, for tests, any order that puts every stage after what it reads);
        ``constant``: ``constant_fields(system)``."""
        t, m, d = self.tableau, system.noises, z.shape[0]
        i_hat = xi[0]
        # A constant field is evaluated once, for every stage: the schedule then needs no stage of it.
        fields = {}
        constant_drift, constant_noise = constant
        if constant_drift:
            drift = system.drift(z)
            fields.update({(0, j): drift for j in range(t.stages)})
        if constant_noise:
            noise = system.noise_fields(z)
            fields.update({(r, j): noise[r - 1] for r in range(1, m + 1) for j in range(t.stages)})
        stats = SolverStats.none()
        for component, implicit in schedule:
            weights = [self._weights(dt, i_hat, *u) for u in component]
            # The terms in stages solved before stay fixed during this component's solve.
            known = [_plus_weighted(z, {v: w for v, w in ws.items() if v not in component}, fields)
                     for ws in weights]
            own = [{v: w for v, w in ws.items() if v in component} for ws in weights]

            def right_hand_sides(x, component=component, known=known, own=own):
                trial = self._fields_at(system, component, x.reshape(-1, d))
                return jnp.concatenate([_plus_weighted(k, ws, trial) for k, ws in zip(known, own)])

            if implicit:
                sol = self.solve.fixed_point(right_hand_sides, jnp.tile(z, len(component)))
                x, stats = sol.x, stats.add(sol)
            else:   # no stage of the component weighs one of its own
                x = jnp.concatenate(known)
            fields = {**fields, **self._fields_at(system, component, x.reshape(-1, d))}

        update = {(0, j): dt * t.alpha[j] for j in range(t.stages) if t.alpha[j] != 0}
        update.update({(r, j): i_hat[r - 1] * t.beta[j]
                       for r in range(1, m + 1) for j in range(t.stages) if t.beta[j] != 0})
        return _plus_weighted(z, update, fields), stats
