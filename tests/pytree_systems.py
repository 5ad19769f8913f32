"""Test-only systems and integrator whose states are pytrees (no paper physics): what the Lie-group
issues will put on the engine, exercised before any of them exists.

- ``TumblingBody``: a state ``{R: (3, 3), Pi: (3,)}``, a vector observable (sorted momenta);
- ``SkewHermitianFlow``: a complex n x n skew-Hermitian state ``W`` under commutator flows, noise
  as a diagonal weight applied directly (never a dense Jacobian), its sorted spectrum observed;
- ``EulerOnLeaves``: Euler-Maruyama applied leaf by leaf, ``z + dt f(z) + sum_i Y_i(z) dW_i``;
- ``MidpointOnLeaves``: the implicit midpoint rule leaf by leaf, by whichever solver is configured.

``registered`` puts them in the config registries for tests that go through ``sgi_run.run``.
"""
from __future__ import annotations

import contextlib
import dataclasses
from typing import ClassVar

import jax
import jax.numpy as jnp
from omegaconf import OmegaConf

from sgi_run.core.lie import hat
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.integrators.base import ImplicitIntegrator, Integrator, SolverStats
from sgi_run.systems.base import System

STRUCTURE = "test_pytree"


@dataclasses.dataclass(frozen=True)
class TumblingBody(System):
    structure: ClassVar[str] = STRUCTURE
    noises: ClassVar[int] = 3
    sigma: float = 0.1

    inertia = jnp.array([1.0, 2.0, 3.0])

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("R", (3, 3)), Leaf("Pi", (3,))))

    def initial_state(self, key):
        pi = jnp.array([1.0, 0.5, -0.3]) + 0.1 * jax.random.normal(key, (3,))
        return {"R": jnp.eye(3), "Pi": pi}

    def drift(self, z):
        omega = z["Pi"] / self.inertia
        return {"R": z["R"] @ hat(omega), "Pi": jnp.cross(z["Pi"], omega)}

    def noise_action(self, z, dw):
        return {"R": jnp.zeros((3, 3)), "Pi": self.sigma * dw}

    def observables(self):
        return {"energy": lambda z: 0.5 * jnp.sum(z["Pi"] ** 2 / self.inertia),
                "Pi_sorted": lambda z: jnp.sort(z["Pi"]),
                "orthogonality": lambda z: jnp.linalg.norm(z["R"].T @ z["R"] - jnp.eye(3))}


@dataclasses.dataclass(frozen=True)
class SkewHermitianFlow(System):
    structure: ClassVar[str] = STRUCTURE
    noises: ClassVar[int] = 2
    n: int = 32
    sigma: float = 0.2

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("W", (self.n, self.n), "complex128"),))

    def _weights(self):
        k = jnp.arange(self.n)
        return 1j * jnp.stack([jnp.cos(k), jnp.sin(k) / self.n])       # two diagonal skew-Hermitian weights

    def initial_state(self, key):
        re, im = jax.random.normal(key, (2, self.n, self.n))
        a = (re + 1j * im) / self.n
        return {"W": a - a.conj().T}

    def drift(self, z):
        p = 1j * jnp.arange(self.n) / self.n
        w = z["W"]
        return {"W": p[:, None] * w - w * p[None, :]}      # [diag(p), W]

    def noise_action(self, z, dw):
        d = dw @ self._weights()                              # sum_i dW_i B_i, B_i diagonal
        w = z["W"]
        return {"W": self.sigma * (d[:, None] * w - w * d[None, :])}

    def observables(self):
        return {"spectrum": lambda z: jnp.linalg.eigvalsh(1j * z["W"]),
                "casimir": lambda z: jnp.real(jnp.trace(z["W"] @ z["W"]))}


@dataclasses.dataclass(frozen=True)
class NoCoefficients:
    @classmethod
    def from_config(cls, spec, params, key="integrator.tableau"):
        return cls()

    def conditions(self) -> dict[str, float]:
        return {}


@dataclasses.dataclass(frozen=True)
class EulerOnLeaves(Integrator):
    family: ClassVar[str] = "test_euler"
    fits: ClassVar[tuple[str, ...]] = (STRUCTURE,)

    @property
    def noise_kind(self) -> str:
        return "gaussian"

    def advance(self, system, z, dt, xi):
        f, g = system.drift(z), system.noise_action(z, xi[0])
        return jax.tree.map(lambda z, f, g: z + dt * f + g, z, f, g), SolverStats.none()


SYSTEMS = {"tumbling_body": TumblingBody, "skew_hermitian_flow": SkewHermitianFlow}
EULER = {"name": "test_euler", "family": "test_euler", "tableau": {}}


@contextlib.contextmanager
def registered():
    """The test systems and integrator in the config registries, for as long as the block runs."""
    from sgi_run import integrators, systems
    saved = dict(systems.SYSTEMS), dict(integrators.FAMILIES)
    systems.SYSTEMS.update(SYSTEMS)
    integrators.FAMILIES["test_euler"] = (EulerOnLeaves, NoCoefficients)
    integrators.FAMILIES["test_midpoint"] = (MidpointOnLeaves, NoCoefficients)
    try:
        yield
    finally:
        systems.SYSTEMS.clear()
        systems.SYSTEMS.update(saved[0])
        integrators.FAMILIES.clear()
        integrators.FAMILIES.update(saved[1])


def config(runs_root: list[str], system: dict, plan: dict, integrator: dict = EULER):
    """A composed config with a test system, a test integrator and the plan keys given."""
    import sgi_run
    cfg = sgi_run.compose(runs_root)
    cfg.system = OmegaConf.create(system)
    cfg.integrator = OmegaConf.create(integrator)
    for key, value in plan.items():
        OmegaConf.update(cfg, f"plan.{key}", value)
    return cfg


@dataclasses.dataclass(frozen=True)
class MidpointOnLeaves(ImplicitIntegrator):
    """The stochastic implicit midpoint rule leaf by leaf: ``m = z + (dt f(m) + sum_i Y_i(m) dW_i) / 2``,
    solved by the integrator's solver, then ``z' = 2 m - z``."""
    family: ClassVar[str] = "test_midpoint"
    fits: ClassVar[tuple[str, ...]] = (STRUCTURE,)

    @property
    def noise_kind(self) -> str:
        return "gaussian"

    def newton_unknowns(self, system) -> int:
        return sum(leaf.size for leaf in system.space.leaves)

    def advance(self, system, z, dt, xi):
        def g(m):
            f, y = system.drift(m), system.noise_action(m, xi[0])
            return jax.tree.map(lambda z, f, y: z + 0.5 * (dt * f + y), z, f, y)
        sol = self.solve.fixed_point(g, z)
        return jax.tree.map(lambda m, z: 2 * m - z, sol.x, z), SolverStats.none().add(sol)
