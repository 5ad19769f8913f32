"""What every system is, whatever its structure (canonical, Lie-Poisson, Lie-group, matrix):

- its **state space** (``space``): the leaves of one path's state (name, shape, dtype), the views a
  user reads back, a distance and a projection (``core.space``);
- its **initial law** (``initial_state(key)``: one path's state from that path's own random stream);
- its **noise**: ``noises`` Wiener processes acting through ``noise_action(state, dw)``, the sum
  :math:`\\sum_i Y_i(z)\\,dw_i` applied directly (a matrix-free operator: Zeitlin's 12288 noises are
  a weight per mode, never a dense Jacobian);
- its **observables**: named functions of one path's state, scalars or arrays of fixed shape;
- where known, exact or limiting means of observables (the figures' references).

A system is a frozen dataclass whose fields are its parameters; ``structure`` says which
integrator families fit it (``Integrator.fits``).
"""
from __future__ import annotations

import dataclasses
from typing import ClassVar
from collections.abc import Callable, Mapping

import jax

from sgi_run.core.space import StateSpace


@dataclasses.dataclass(frozen=True)
class System:
    """The base of every system (module docstring): a frozen dataclass whose fields are its parameters."""
    structure: ClassVar[str]
    noises: ClassVar[int] = 1
    # z' = M(xi) z exactly, from a deterministic z0: the linear oracle gives each method's moments.
    linear: ClassVar[bool] = False
    # Parameters beyond the dataclass's fields, gathered by gather_parameters (a formula system's named
    # numbers): its config may add one with +system.<name>=<value>.
    open_parameters: ClassVar[bool] = False
    # Config keys whose field has another name (config key -> field): the key's own name is a method of the class
    # (a formula system's ``potential`` text beside the ``potential(q)`` every Langevin system has). A refusal names
    # the key (``config_key``), which is what the user typed.
    KEY_TO_FIELD: ClassVar[Mapping[str, str]] = {}

    @property
    def space(self) -> StateSpace:
        raise NotImplementedError

    def initial_state(self, key: jax.Array):
        """z0 for one path; ``key`` is that path's own stream (for random initial conditions)."""
        raise NotImplementedError

    def noise_action(self, z, dw: jax.Array):
        """:math:`\\sum_i Y_i(z)\\,dw_i` for increments ``dw`` of shape (noises,): a state-shaped
        tangent vector."""
        raise NotImplementedError

    def check(self) -> None:
        """Raise ConfigError for parameter values outside the system's domain."""

    def observables(self) -> dict[str, Callable]:
        """Named functions of one path's state: each returns a real scalar or a real array of fixed
        shape (a vector observable: every entry gets its own mean, variance and count)."""
        return {}

    def invariants(self) -> tuple[str, ...]:
        """The observables the exact flow conserves on every path, for these parameters (a Lie-Poisson system's
        Casimirs; H where no forcing or noise changes it): every ensemble run records each one's largest drift over
        its steps and paths (``engine.invariants``), a convergence study with ``plan.invariants=declared`` per step
        size. None by default."""
        return ()

    def reference_mean(self, observable: str) -> Callable | None:
        """The exact mean E[observable] as a numpy function of the time t, where the system knows one."""
        return None

    def ergodic_mean(self, observable: str) -> float | None:
        """The t -> oo limit of E[observable] (the invariant measure's mean), where the system knows it."""
        return None

    @classmethod
    def settle_defaults(cls, parameters: dict) -> dict:
        """The parameters with any ``auto`` default settled to the number it stands for, given the others
        (the config hash hashes that number). None by default; a system with one overrides this."""
        return parameters

    @classmethod
    def gather_parameters(cls, parameters: dict) -> dict:
        """The config's keys as the dataclass's fields. A system whose parameters its class does not fix
        (a formula system: any name its formulas use) gathers them into a field here; the others take the
        keys as they are, and a key that is not a field is refused."""
        return parameters

    @classmethod
    def config_key(cls, field: str) -> str:
        """The config key of a field (its own name, unless ``KEY_TO_FIELD`` renames it)."""
        return {f: k for k, f in cls.KEY_TO_FIELD.items()}.get(field, field)

    @classmethod
    def parameter_names(cls) -> list[str]:
        return [f.name for f in dataclasses.fields(cls)]
