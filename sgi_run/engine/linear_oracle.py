r"""Exact moments of a *numerical method* on a linear system, without sampling.

For a linear SDE (the damped Kubo oscillator) every method's step is :math:`z_{k+1} = M(\xi_k)\,z_k`
with a random matrix built from the step's random variables :math:`\xi_k`. Then
:math:`\mathrm{vec}\,S_{k+1} = E[M\otimes M]\,\mathrm{vec}\,S_k` for :math:`S_k = E[z_kz_k^T]`, and
the fourth moments evolve by :math:`E[M^{\otimes 4}]`. With :math:`H = \tfrac12 z^TGz`:

.. math:: E[H_k] = \tfrac12\,\mathrm{tr}(G S_k),\qquad
          E[H_k^2] = \tfrac14\sum G_{ij}G_{kl}\,E[z_iz_jz_kz_l].

Expectations over :math:`\xi` are exact sums for the three-point law and Gauss-Hermite
quadrature for Gaussians (a tensor grid over :math:`(\chi,\eta)` for the pair
:math:`(\Delta W,\Delta Z)`). The matrix :math:`M(\xi)` is read off the integrator's own step
(applied to the unit vectors), so this checks the implementation, not a re-derivation
(not in Kraus & Tyranowski (2021): the project's exact reference for the linear Kubo problem of its Figures 4.1-4.2).
"""
from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from numpy.polynomial.hermite_e import hermegauss

from sgi_run.engine import programs
from sgi_run.engine.plan import Plan


@dataclasses.dataclass
class MethodMoments:
    t: np.ndarray
    mean_H: np.ndarray     # E[H](t) of the method
    var_H: np.ndarray      # Var[H](t) of the method

    def expected_sem(self, paths: int) -> np.ndarray:
        """The Monte Carlo standard error an ensemble of ``paths`` paths should show."""
        return np.sqrt(np.maximum(self.var_H, 0.0) / paths)


def _nodes(kind: str, dt: float, gauss_nodes: int, pair_nodes: int):
    """Quadrature nodes xi (n, rows, 1) and weights (n,) for one step's random variables."""
    if kind == "three_point":
        a = np.sqrt(3 * dt)
        return np.array([-a, 0.0, a]).reshape(3, 1, 1), np.array([1 / 6, 2 / 3, 1 / 6])
    if kind == "gaussian":
        x, w = hermegauss(gauss_nodes)
        return (np.sqrt(dt) * x).reshape(-1, 1, 1), w / w.sum()
    x, w = hermegauss(pair_nodes)
    chi, eta = (g.ravel() for g in np.meshgrid(x, x, indexing="ij"))
    weights = np.outer(w, w).ravel()
    dw = np.sqrt(dt) * chi
    dz = 0.5 * dt**1.5 * (chi + eta / np.sqrt(3.0))
    return np.stack([dw, dz], axis=1)[:, :, None], weights / weights.sum()


def step_matrices(system, integrator, dt: float, xi: np.ndarray) -> np.ndarray:
    """M(xi) for each node: the step applied to the unit vectors, as columns. (n, d, d) The step size is
    an argument of the program, so a process traces it once per system and method (``engine.programs``)."""
    def build():
        eye = jnp.eye(2 * system.dof)
        columns = lambda x, dt: jax.vmap(lambda e: integrator.step(system, e, dt, x)[0])(eye).T
        return jax.jit(jax.vmap(columns, in_axes=(0, None)))

    program = programs.shared("linear oracle step matrices", (system, integrator), build)
    return np.asarray(program(jnp.asarray(xi), jnp.float64(dt)))


def applies(system, plan) -> bool:
    """Whether ``method_moments`` is exact for this system and plan (linear, plain increments)."""
    return system.linear and plan.brownian_refine == 1 and plan.truncate is None


def method_moments(system, integrator, plan: Plan, gauss_nodes: int = 120, pair_nodes: int = 30) -> MethodMoments:
    if plan.brownian_refine != 1 or plan.truncate is not None:
        raise ValueError("the oracle covers plain increments (brownian_refine = 1, no truncation)")
    z0 = np.asarray(system.initial_state(jax.random.key(0)))
    G = np.asarray(jax.hessian(system.energy)(jnp.asarray(z0)))
    xi, w = _nodes(integrator.noise_kind, plan.dt, gauss_nodes, pair_nodes)
    M = step_matrices(system, integrator, plan.dt, xi)
    d = M.shape[1]
    second = np.einsum("n,nai,nbj->abij", w, M, M).reshape(d**2, d**2)
    fourth = np.einsum("n,nai,nbj,nck,ndl->abcdijkl", w, M, M, M, M).reshape(d**4, d**4)
    second = np.linalg.matrix_power(second, plan.steps_per_output)
    fourth = np.linalg.matrix_power(fourth, plan.steps_per_output)

    s2, s4 = np.einsum("i,j->ij", z0, z0).ravel(), np.einsum("i,j,k,l->ijkl", z0, z0, z0, z0).ravel()
    g2, g4 = G.ravel() / 2, np.einsum("ij,kl->ijkl", G, G).ravel() / 4
    mean, square = [g2 @ s2], [g4 @ s4]
    for _ in range(plan.outputs):
        s2, s4 = second @ s2, fourth @ s4
        mean.append(g2 @ s2)
        square.append(g4 @ s4)
    mean, square = np.array(mean), np.array(square)
    return MethodMoments(plan.times, mean, square - mean**2)
