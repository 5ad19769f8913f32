r"""Explicit weak stochastic Runge-Kutta methods of Rößler (2007) for one Stratonovich noise
(Tables 5.2/5.3 there, Kraus & Tyranowski's (2021) comparison methods, coefficients not in Kraus & Tyranowski (2021); RS1, RS2). One implementation; methods are tableaux.

With drift :math:`a = X`, noise field :math:`b = Y_1` and the three-point variable :math:`\hat I`:

.. math::
    H^{(0)}_i = z + \Delta t\sum_{j<i}A^{(0)}_{ij}a(H^{(0)}_j) + \hat I\sum_{j<i}B^{(0)}_{ij}b(H^{(1)}_j)

    H^{(1)}_i = z + \Delta t\sum_{j<i}A^{(1)}_{ij}a(H^{(0)}_j) + \hat I\sum_{j<i}B^{(1)}_{ij}b(H^{(1)}_j)

    z^+ = z + \Delta t\sum_i\alpha_i a(H^{(0)}_i) + \hat I\sum_i\beta^{(1)}_i b(H^{(1)}_i)

Rößler's :math:`B^{(2)}, B^{(3)}, \beta^{(2)}` terms and the two-point :math:`\tilde I` vanish for
one noise (Rößler 2007 with m = 1), so they are not part of the tableau and the family takes m = 1.

This module also states the weak order conditions of this stage structure for one noise
(``weak_order_conditions``); the weak Lagrange-d'Alembert family (``weak_lda_rk``) has the same
structure for m = 1 and checks its tableaux against them too.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from sgi_run.core.fields import integer
from sgi_run.core.tableau import coefficient_array
from sgi_run.integrators.base import Integrator, SolverStats, combine


def weak_order_conditions(A0, B0, A1, B1, alpha, beta, order: int) -> dict[str, float]:
    r"""Residuals of the weak order conditions (order 1 or 2) for one Stratonovich noise.

    Derived for this note by matching the moments :math:`E[\Delta^{\otimes k}]`, :math:`k\le4`, of
    one step to :math:`O(\Delta t^3)` with those of the Stratonovich-Taylor expansion (Milstein's
    local weak order theorem), for an increment with :math:`E\hat I = E\hat I^3 = 0`,
    :math:`E\hat I^2 = \Delta t`, :math:`E\hat I^4 = 3\Delta t^2` (three-point or Gaussian). Each
    condition is labelled with the elementary differential it governs. RS1, RS2 and SRKw2 satisfy
    all of them exactly; SRKw1 only the order-1 ones (its :math:`\alpha^Td_0 = \lambda`).
    """
    integer("integrator.tableau.weak_order", order, "1 or 2 (the orders stated here for one noise)", at_least=1, at_most=2)
    e = np.ones(len(alpha))
    c0, d0, c1, d1 = A0 @ e, B0 @ e, A1 @ e, B1 @ e
    conditions = [
        ("alpha^T e = 1  [a]", alpha @ e, 1),
        ("beta^T e = 1  [b]", beta @ e, 1),
        ("beta^T B1 e = 1/2  [b'b, the Stratonovich correction]", beta @ d1, 1 / 2),
    ]
    if order >= 2:
        conditions += [
            ("alpha^T A0 e = 1/2  [a'a]", alpha @ c0, 1 / 2),
            ("alpha^T B0 e = 1/2  [a'b]", alpha @ d0, 1 / 2),
            ("beta^T A1 e = 1/2  [b'a]", beta @ c1, 1 / 2),
            ("beta^T B1 d1 = 1/6  [b'b'b]", beta @ B1 @ d1, 1 / 6),
            ("beta^T d1^2 = 1/3  [b''(b,b)]", beta @ d1**2, 1 / 3),
            ("alpha^T B0 d1 = 1/4  [a'b'b]", alpha @ B0 @ d1, 1 / 4),
            ("alpha^T d0^2 = 1/2  [a''(b,b)]", alpha @ d0**2, 1 / 2),
            ("beta^T B1 c1 = 1/4  [b'b'a]", beta @ B1 @ c1, 1 / 4),
            ("beta^T A1 d0 = 0  [b'a'b]", beta @ A1 @ d0, 0),
            ("beta^T (d1 c1) = 1/4  [b''(b,a)]", beta @ (d1 * c1), 1 / 4),
            ("beta^T B1 d1^2 = 1/12  [b'b''(b,b)]", beta @ B1 @ d1**2, 1 / 12),
            ("beta^T B1 B1 d1 = 1/24  [b'b'b'b]", beta @ B1 @ B1 @ d1, 1 / 24),
            ("beta^T (d1 B1 d1) = 1/8  [b''(b,b'b)]", beta @ (d1 * (B1 @ d1)), 1 / 8),
            ("beta^T d1^3 = 1/4  [b'''(b,b,b)]", beta @ d1**3, 1 / 4),
        ]
    # (c0, d0, c1, d1 = A0 e, B0 e, A1 e, B1 e; powers and products of vectors are elementwise.)
    return {f"weak order {order}: {name}": float(value - target) for name, value, target in conditions}


@dataclasses.dataclass(frozen=True, eq=False)
class WeakSRKTableau:
    A0: np.ndarray
    B0: np.ndarray
    A1: np.ndarray
    B1: np.ndarray
    alpha: np.ndarray
    beta1: np.ndarray
    weak_order: int = 2

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> WeakSRKTableau:
        s = len(spec["alpha"])
        mat = lambda m: coefficient_array(spec[m], params, f"{key}.{m}", (s, s))
        vec = lambda w: coefficient_array(spec[w], params, f"{key}.{w}", (s,))
        return cls(A0=mat("A0"), B0=mat("B0"), A1=mat("A1"), B1=mat("B1"), alpha=vec("alpha"),
                   beta1=vec("beta1"), weak_order=spec.get("weak_order", 2))

    def conditions(self) -> dict[str, float]:
        """Explicitness and the weak order conditions for one noise."""
        res = {"explicit (strictly lower triangular A0, B0, A1, B1)":
               float(max(np.abs(np.triu(m)).max() for m in (self.A0, self.B0, self.A1, self.B1)))}
        res.update(weak_order_conditions(self.A0, self.B0, self.A1, self.B1, self.alpha, self.beta1,
                                         self.weak_order))
        return res


@dataclasses.dataclass(frozen=True)
class WeakSRK(Integrator):
    family: ClassVar[str] = "weak_srk"
    max_noises: ClassVar[int | None] = 1

    @property
    def noise_kind(self) -> str:
        return "three_point"

    def advance(self, system, z, dt, xi):
        t = self.tableau
        i_hat = xi[0, 0]
        drifts, noises = [], []   # a(H0_j), b(H1_j)
        for i in range(len(t.alpha)):
            h0 = z + dt * combine(t.A0[i, :i], drifts) + i_hat * combine(t.B0[i, :i], noises)
            h1 = z + dt * combine(t.A1[i, :i], drifts) + i_hat * combine(t.B1[i, :i], noises)
            drifts.append(system.drift(h0))
            noises.append(system.noise_fields(h1)[0])
        z_next = z + dt * combine(t.alpha, drifts) + i_hat * combine(t.beta1, noises)
        return z_next, SolverStats.none()
