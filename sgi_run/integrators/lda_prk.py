r"""Mean-square Lagrange-d'Alembert partitioned stochastic Runge-Kutta methods
(Kraus & Tyranowski 2021, Def. 3.3, eq. 3.15). One implementation; methods are tableaux.

Stages, with the Hamiltonian parts evaluated at :math:`(Q_j, P_j)`:

.. math::
    Q_i = q + \Delta t\sum_j a_{ij}\partial_pH + \sum_r\Delta W^r\sum_j b_{ij}\partial_ph_r

    P_i = p - \Delta t\sum_j\bar a_{ij}\partial_qH - \sum_r\Delta W^r\sum_j\bar b_{ij}\partial_qh_r
          + \Delta t\sum_j\hat a_{ij}F + \sum_r\Delta W^r\sum_j\hat b_{ij}f_r

and the update with weights :math:`(\alpha, \alpha, \hat\alpha, \beta, \beta, \hat\beta)`.
Implicit stages are solved by the integrator's solver (``core.solvers``: Newton by default). When all six matrices are lower
triangular (DIRK, Stormer-Verlet) the stages are solved one after another, each stage only in its
own unknowns; otherwise all stages are solved together.

Every tableau is checked on construction against the variational conditions (3.16) and the
mean-square order-1 conditions (3.27).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core.tableau import coefficient_array, variational_residual
from sgi_run.integrators.base import ImplicitIntegrator, SolverStats

MATRICES = ("a", "abar", "ahat", "b", "bbar", "bhat")
WEIGHTS = ("alpha", "alphahat", "beta", "betahat")

# (3.16): w1_i X_ij + w2_j Y_ji = w1_i w2_j for the pairs ((w1, X), (w2, Y)).
_VARIATIONAL_PAIRS = [
    (("alpha", "abar"), ("alpha", "a")), (("beta", "bbar"), ("beta", "b")),
    (("beta", "abar"), ("alpha", "b")), (("alpha", "bbar"), ("beta", "a")),
    (("alpha", "ahat"), ("alphahat", "a")), (("alpha", "bhat"), ("betahat", "a")),
    (("beta", "ahat"), ("alphahat", "b")), (("beta", "bhat"), ("betahat", "b")),
]


@dataclasses.dataclass(frozen=True, eq=False)
class LdAPRKTableau:
    a: np.ndarray
    abar: np.ndarray
    ahat: np.ndarray
    b: np.ndarray
    bbar: np.ndarray
    bhat: np.ndarray
    alpha: np.ndarray
    alphahat: np.ndarray
    beta: np.ndarray
    betahat: np.ndarray

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> LdAPRKTableau:
        s = len(spec["alpha"])
        arrays = {m: coefficient_array(spec[m], params, f"{key}.{m}", (s, s)) for m in MATRICES}
        arrays.update({w: coefficient_array(spec[w], params, f"{key}.{w}", (s,)) for w in WEIGHTS})
        return cls(**arrays)

    @property
    def stages(self) -> int:
        return len(self.alpha)

    def conditions(self) -> dict[str, float]:
        """Residuals of (3.16) and (3.27); all zero for a valid tableau."""
        res = {}
        for (w1, x), (w2, y) in _VARIATIONAL_PAIRS:
            W1, X, W2, Y = (getattr(self, n) for n in (w1, x, w2, y))
            res[f"(3.16) {w1}*{x} + {w2}*{y}"] = variational_residual(W1, X, W2, Y)
        for w in WEIGHTS:
            res[f"(3.27) sum {w} = 1"] = float(getattr(self, w).sum() - 1)
        e = np.ones(self.stages)
        for w in ("beta", "betahat"):
            for m in ("b", "bbar", "bhat"):
                res[f"(3.27) {w}^T {m} e = 1/2"] = float(getattr(self, w) @ getattr(self, m) @ e - 0.5)
        return res

    @property
    def lower_triangular(self) -> bool:
        return all(np.allclose(np.triu(getattr(self, m), 1), 0) for m in MATRICES)

    def explicit_stage(self, i: int) -> bool:
        return all(getattr(self, m)[i, i] == 0 for m in MATRICES)


def _stack(parts_list):
    """Stage parts (one per stage) stacked along a leading stage axis."""
    return jax.tree.map(lambda *xs: jnp.stack(xs), *parts_list)


@dataclasses.dataclass(frozen=True)
class LdAPartitionedRK(ImplicitIntegrator):
    family: ClassVar[str] = "lda_prk"

    @property
    def noise_kind(self) -> str:
        return "gaussian"

    def newton_unknowns(self, system) -> int:
        t, d = self.tableau, 2 * system.dof
        if not t.lower_triangular:
            return t.stages * d          # all stages together
        return d if not all(t.explicit_stage(i) for i in range(t.stages)) else 0

    # -- stage algebra ----------------------------------------------------------------------
    @staticmethod
    def _increment(coeffs, parts, dt, dw):
        """Coefficients (six rows, or six matrices) contracted with the stage parts -> (dq, dp)."""
        a, abar, ahat, b, bbar, bhat = coeffs
        c = parts
        noise = lambda g: jnp.einsum("r,jrn->jn", dw, g)  # sum_r dW_r g_r at each stage j
        dq = dt * a @ c.dH_dp + b @ noise(c.dh_dp)
        dp = (-dt * abar @ c.dH_dq - bbar @ noise(c.dh_dq)
              + dt * ahat @ c.force + bhat @ noise(c.noise_force))
        return dq, dp

    def advance(self, system, z, dt, xi):
        t = self.tableau
        s, n = t.stages, system.dof
        q, p = system.split(z)
        dw = xi[0]
        matrices = tuple(getattr(t, m) for m in MATRICES)

        if t.lower_triangular:
            # Stage i depends on stages j <= i only: solve it in its own 2N unknowns, with the
            # contribution of the solved stages computed once.
            solved, stats = [], SolverStats.none()
            for i in range(s):
                dq0, dp0 = (0.0, 0.0) if i == 0 else self._increment(
                    tuple(m[i, :i] for m in matrices), _stack(solved), dt, dw)
                diagonal = tuple(m[i, i:i + 1] for m in matrices)

                def stage_value(x, dq0=dq0, dp0=dp0, diagonal=diagonal):
                    dq, dp = self._increment(diagonal, _stack([system.parts(x[:n], x[n:])]), dt, dw)
                    return jnp.concatenate([q + dq0 + dq, p + dp0 + dp])

                x = jnp.concatenate([q, p])
                if t.explicit_stage(i):
                    x = stage_value(x)
                else:
                    sol = self.solve.fixed_point(stage_value, x)
                    x, stats = sol.x, stats.add(sol)
                solved.append(system.parts(x[:n], x[n:]))
            parts = _stack(solved)
        else:
            def all_stages(x):
                Q, P = x[: s * n].reshape(s, n), x[s * n:].reshape(s, n)
                dq, dp = self._increment(matrices, jax.vmap(system.parts)(Q, P), dt, dw)
                return jnp.concatenate([(q + dq).ravel(), (p + dp).ravel()])
            x0 = jnp.concatenate([jnp.tile(q, s), jnp.tile(p, s)])
            sol = self.solve.fixed_point(all_stages, x0)
            Q, P = sol.x[: s * n].reshape(s, n), sol.x[s * n:].reshape(s, n)
            parts, stats = jax.vmap(system.parts)(Q, P), SolverStats.none().add(sol)

        weights = (t.alpha, t.alpha, t.alphahat, t.beta, t.beta, t.betahat)
        dq, dp = self._increment(weights, parts, dt, dw)
        return jnp.concatenate([q + dq, p + dp]), stats
