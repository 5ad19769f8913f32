"""What the rigid body and the heavy top share: a body on SO(3) whose state may also carry its attitude R."""
from __future__ import annotations

import dataclasses
from typing import ClassVar

import jax.numpy as jnp
import numpy as np

from sgi_run.core.errors import require
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.lie_poisson import LiePoissonSystem


def require_vector(key: str, value, n: int = 3) -> None:
    """Refuse a parameter that is not a vector of n numbers (one line)."""
    require(key, value, np.ndim(value) == 1 and len(value) == n, f"{n} numbers")


# How far from orthogonal an initial attitude may be (a rotation typed with 16 digits is within 1e-15).
ROTATION_TOL = 1e-12


@dataclasses.dataclass(frozen=True)
class AttitudeCarrier(LiePoissonSystem):
    """A body on SO(3) whose state may also carry its attitude R (body to space; Gay-Balmaz & Wu (2024)): with ``R0`` set the
    state is the momentum leaves and ``R``, which only the Lie-group variational integrator evolves (its
    reconstruction); without it, the momentum alone, as Luesink et al. (2023) and Ephrati et al. (2024) integrate it."""
    R0: tuple[tuple[float, ...], ...] | None = None

    momentum_leaves: ClassVar[tuple[str, ...]]

    def check(self):
        if self.R0 is not None:
            r, shown = np.asarray(self.R0), [list(row) for row in self.R0]
            require("R0", shown, r.ndim == 2 and r.shape == (3, 3), "a 3 x 3 rotation matrix (three rows of three), or null")
            require("R0", shown, np.abs(r.T @ r - np.eye(3)).max() <= ROTATION_TOL and np.linalg.det(r) > 0,
                    f"a rotation matrix: R^T R = I (to {ROTATION_TOL:g}) and det R = +1")

    @property
    def carries_attitude(self) -> bool:
        return self.R0 is not None

    @property
    def space(self) -> StateSpace:
        leaves = tuple(Leaf(name, (3,)) for name in self.momentum_leaves)
        if self.carries_attitude:
            leaves += (Leaf("R", (3, 3)),)
        return StateSpace(leaves, bare=len(leaves) == 1)

    def dual(self, z):
        names = self.momentum_leaves
        if len(names) == 1:
            return z[names[0]] if self.carries_attitude else z       # a bare leaf without the attitude
        return tuple(z[name] for name in names)

    def state(self, mu, attitude=None):
        names = self.momentum_leaves
        z = dict(zip(names, (mu,) if len(names) == 1 else mu))
        if self.carries_attitude:
            z["R"] = attitude
        return z if len(z) > 1 else z[names[0]]

    def attitude(self, z):
        return z["R"] if self.carries_attitude else None

    def initial_momentum(self):
        raise NotImplementedError

    def initial_state(self, key):
        r0 = None if self.R0 is None else jnp.asarray(self.R0, dtype=jnp.float64)
        return self.state(self.initial_momentum(), r0)
