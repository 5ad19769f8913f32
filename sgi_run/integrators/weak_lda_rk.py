r"""Weak Lagrange-d'Alembert stochastic Runge-Kutta methods (paper 000, Def. 3.7, eq. 3.42;
spec 000 section 2.5; SRKw1, SRKw2). One implementation; methods are tableaux.

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
equation is nonzero). Only the stages the update reaches are computed (SRKw2 never needs
:math:`Z^{(1)}_{3,4}`), and they are solved one strongly connected component at a time, in
dependency order: a component that depends on itself is one Newton solve in all its unknowns,
any other is evaluated explicitly. So SRKw1 (lambda = 0) is two sequential 2N solves and SRKw2 one
coupled 12N solve (:math:`a^{(1)}_{14} = 1/3` ties :math:`Z^{(1)}_1` to :math:`Z^{(0)}_4`), with
no per-method code.

Every tableau is checked on construction against the Lagrange-d'Alembert conditions (3.43) and
the weak order conditions of its declared ``weak_order`` (for one noise; ``weak_srk``).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

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
    def from_config(cls, spec, params, key="integrator.tableau") -> "WeakLdATableau":
        s = len(spec["alpha"])
        single_noise = spec.get("b3") is None
        spec = dict(spec, b3=np.zeros((s, s)).tolist()) if single_noise else spec
        arrays = {m: coefficient_array(spec[m], params, f"{key}.{m}", (s, s)) for m in MATRICES}
        arrays.update({w: coefficient_array(spec[w], params, f"{key}.{w}", (s,)) for w in ("alpha", "beta")})
        return cls(**arrays, single_noise=single_noise, weak_order=spec.get("weak_order", 1))

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

    def schedule(self, m: int) -> list[tuple[tuple[tuple[int, int], ...], bool]]:
        """The needed stages in solving order, as components ``((group, stage), ...), implicit``;
        group 0 is the drift stages, group l the stages of noise l (see the module docstring)."""
        s = self.stages
        # depends[u, v]: stage u's equation has a nonzero coefficient on stage v; u = group * s + i.
        depends = np.block([[self.a0] + [self.b0] * m]
                           + [[self.a1] + [self.b1 if r == l else self.b3 for r in range(m)] for l in range(m)]) != 0
        update = np.concatenate([self.alpha] + [self.beta] * m) != 0
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


@dataclasses.dataclass(frozen=True)
class WeakLdARK(ImplicitIntegrator):
    family: ClassVar[str] = "weak_lda_rk"

    @property
    def max_noises(self) -> int | None:
        return 1 if self.tableau.single_noise else None

    @property
    def noise_kind(self) -> str:
        return "three_point"

    def newton_unknowns(self, system) -> int:
        implicit = [len(component) for component, implicit in self.tableau.schedule(system.noises) if implicit]
        return max(implicit, default=0) * 2 * system.dof

    def _stage_values(self, z, dt, i_hat, drift, noise):
        """Right-hand sides of all stage equations, (m + 1, s, 2N), from the field values
        ``drift[j] = X(Z0_j)`` and ``noise[r, j] = Y_r(Z^(r)_j)``."""
        t = self.tableau
        weighted = jnp.einsum("r,rjn->jn", i_hat, noise)      # sum_r I_r Y_r(Z^(r)_j)
        z0 = z + dt * t.a0 @ drift + t.b0 @ weighted
        # Noise l sees its own field through b1 and the others through b3.
        zl = (z + dt * t.a1 @ drift + t.b3 @ weighted)[None] \
            + i_hat[:, None, None] * jnp.einsum("ij,rjn->rin", t.b1 - t.b3, noise)
        return jnp.concatenate([z0[None], zl])

    @staticmethod
    def _with_fields(system, component, values, drift, noise):
        """Field arrays with the fields at the component's stage values filled in, one vmapped
        evaluation per group (drift, or noise l)."""
        groups = np.array([g for g, _ in component])
        stages = np.array([i for _, i in component])
        for g in np.unique(groups):
            at = groups == g
            if g == 0:
                drift = drift.at[stages[at]].set(jax.vmap(system.drift)(values[at]))
            else:
                noise = noise.at[g - 1, stages[at]].set(jax.vmap(system.noise_fields)(values[at])[:, g - 1])
        return drift, noise

    def advance(self, system, z, dt, xi):
        t, m, d = self.tableau, system.noises, z.shape[0]
        i_hat = xi[0]
        # Fields of the stages solved so far; the others stay zero, and no equation solved
        # before them has a nonzero coefficient on them.
        drift, noise = jnp.zeros((t.stages, d)), jnp.zeros((m, t.stages, d))
        stats = SolverStats.none()
        for component, implicit in t.schedule(m):
            rows = tuple(np.array(component).T)

            def equations(x, component=component, rows=rows, drift=drift, noise=noise):
                fields = self._with_fields(system, component, x.reshape(-1, d), drift, noise)
                return self._stage_values(z, dt, i_hat, *fields)[rows].ravel()

            x = jnp.tile(z, len(component))
            if implicit:
                sol = self.solve.fixed_point(equations, x)
                x, stats = sol.x, stats.add(sol)
            else:
                x = equations(x)   # the right-hand side involves solved stages only
            drift, noise = self._with_fields(system, component, x.reshape(-1, d), drift, noise)

        z_next = z + dt * t.alpha @ drift + t.beta @ jnp.einsum("r,rjn->jn", i_hat, noise)
        return z_next, stats
