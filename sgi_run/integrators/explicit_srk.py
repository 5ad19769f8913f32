r"""Explicit stochastic Runge-Kutta methods for one Stratonovich noise, Burrage "SERK" form
(Kraus & Tyranowski's (2021) comparison methods, coefficients not in Kraus & Tyranowski (2021); Heun, R2, E1). One implementation; methods are tableaux.

With drift :math:`a = X` and noise field :math:`b = Y_1`:

.. math::
    Z_i = z + \sum_{j<i}\Big[\Delta t A_{ij}a(Z_j) + \big(\Delta W B_{ij} + \tfrac{\Delta Z}{\Delta t}B^{(2)}_{ij}\big)b(Z_j)\Big]

    z^+ = z + \Delta t\sum_i\alpha_i a(Z_i) + \sum_i\big(\Delta W\beta_i + \tfrac{\Delta Z}{\Delta t}\gamma_i\big)b(Z_i)

A tableau with nonzero :math:`B^{(2)}` or :math:`\gamma` consumes the pair :math:`(\Delta W, \Delta Z)`.
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import numpy as np

from sgi_run.core.tableau import coefficient_array
from sgi_run.integrators.base import Integrator, SolverStats, combine


@dataclasses.dataclass(frozen=True, eq=False)
class SERKTableau:
    A: np.ndarray
    B: np.ndarray
    B2: np.ndarray
    alpha: np.ndarray
    beta: np.ndarray
    gamma: np.ndarray

    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau") -> SERKTableau:
        s = len(spec["alpha"])
        zeros_m, zeros_v = np.zeros((s, s)).tolist(), np.zeros(s).tolist()
        mat = lambda m, default=None: coefficient_array(spec.get(m, default), params, f"{key}.{m}", (s, s))
        vec = lambda w, default=None: coefficient_array(spec.get(w, default), params, f"{key}.{w}", (s,))
        return cls(A=mat("A"), B=mat("B"), B2=mat("B2", zeros_m),
                   alpha=vec("alpha"), beta=vec("beta"), gamma=vec("gamma", zeros_v))

    @property
    def uses_dz(self) -> bool:
        return bool(np.any(self.B2) or np.any(self.gamma))

    def conditions(self) -> dict[str, float]:
        """Explicitness, consistency and the strong order-1 condition for one noise."""
        e = np.ones(len(self.alpha))
        return {
            "explicit (strictly lower triangular A, B, B2)":
                float(max(np.abs(np.triu(m)).max() for m in (self.A, self.B, self.B2))),
            "sum alpha = 1": float(self.alpha.sum() - 1),
            "sum beta = 1": float(self.beta.sum() - 1),
            "sum gamma = 0": float(self.gamma.sum()),
            "beta^T B e = 1/2": float(self.beta @ self.B @ e - 0.5),
        }


@dataclasses.dataclass(frozen=True)
class ExplicitSRK(Integrator):
    family: ClassVar[str] = "explicit_srk"
    max_noises: ClassVar[int | None] = 1

    @property
    def noise_kind(self) -> str:
        return "gaussian_pair" if self.tableau.uses_dz else "gaussian"

    def advance(self, system, z, dt, xi):
        t = self.tableau
        dw = xi[0, 0]
        dz_over_dt = xi[1, 0] / dt if t.uses_dz else 0.0
        noise_part = lambda b, b2, noises: dw * combine(b, noises) + dz_over_dt * combine(b2, noises)
        drifts, noises = [], []
        for i in range(len(t.alpha)):
            zi = z + dt * combine(t.A[i, :i], drifts) + noise_part(t.B[i, :i], t.B2[i, :i], noises)
            drifts.append(system.drift(zi))
            noises.append(system.noise_fields(zi)[0])
        z_next = z + dt * combine(t.alpha, drifts) + noise_part(t.beta, t.gamma, noises)
        return z_next, SolverStats.none()
