"""The suite's cells: every (system, integrator) pair, and whether it fits.

A pair fits when sgi-run builds it: the integrator's family fits the system's structure and noise count
(``Integrator.check_fits``, and a family's own rule such as the Langevin splittings' need of a Langevin system),
the same rule ``sgi-run`` refuses a pair by. The integrators are every option of the ``integrator`` config group
(the registry), never a hand-kept list; a pair that does not fit is a cell too, with the refusal's words.

What a claim is checked against is read off the system, not declared for it:

- its **noise class** (``noise_class``): ``additive`` when no noise field depends on the state, ``commutative``
  when the fields' Lie brackets vanish (every one-noise system), else ``general``; each tested at two states
  (the initial state and a displaced one) with JAX's forward derivatives;
- which of its declared invariants are **quadratic** (``quadratic_invariants``): an invariant whose third
  difference along random lines through the initial state vanishes.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.composition import ConfigSource, group_options
from sgi_run.config import compose_setup
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError

NOISE_CLASSES = ("additive", "commutative", "general")
# Relative size below which a difference of noise fields, a bracket or a third difference counts as zero
# (round-off of the derivatives of fields of order one).
ZERO = 1e-9
# At most this many pairs of noises are tested for commuting (Zeitlin's su(N) has N^2 - 1 noises).
MOST_PAIRS = 40


@dataclasses.dataclass(frozen=True)
class Cell:
    """One (system, integrator) pair: whether it fits, and why not when it does not."""
    system: str
    integrator: str
    fits: bool
    reason: str = ""          # the refusal's words, when it does not fit
    noise_kind: str = ""      # the method's random variables (core.noise.NOISE_KINDS), when it fits

    @property
    def error_kind(self) -> str:
        """What the cell's study measures: strong errors (and the weak error on the same paths) for a method driven
        by Gaussian increments; weak errors only for one driven by three-point variables (no Brownian path)."""
        return "weak" if self.noise_kind == "three_point" else "strong"


def integrator_options(source: ConfigSource = ConfigSource()) -> list[str]:
    """Every integrator of the registry (the ``integrator`` config group's options)."""
    return group_options("integrator", source)


def cells_of(system_name: str, system_overrides: Sequence[str], integrators: Sequence[str],
             source: ConfigSource = ConfigSource()) -> list[Cell]:
    """Every pair of the system (its overrides) with each integrator option: built, or refused with its reason."""
    cells = []
    for option in integrators:
        try:
            _, setup = compose_setup([*system_overrides, f"integrator={option}"], source)
        except ConfigError as err:
            if not err.key.startswith(("integrator", "system")):
                raise
            cells.append(Cell(system_name, option, False, str(err)))
            continue
        cells.append(Cell(system_name, option, True, noise_kind=setup.integrator.noise_kind))
    return cells


def _leaves(system, state) -> dict:
    """The state's leaves by name (``core.space``), a leaf a tangent leaves out (None: the rigid body's attitude,
    which its noise does not move) as zeros."""
    return {leaf.name: (jnp.zeros(leaf.shape, leaf.dtype) if value is None else jnp.asarray(value))
            for leaf, value in zip(system.space.leaves, system.space.leaves_of(state).values())}


def _states(system) -> tuple[dict, dict]:
    """The leaves of the system's initial state and of one displaced from it along a random direction (the fields
    are compared at two states: a deterministic initial law gives one)."""
    z0 = _leaves(system, system.initial_state(jax.random.key(0)))
    keys = jax.random.split(jax.random.key(1), len(z0))
    return z0, {name: leaf + 0.3 * jax.random.normal(key, leaf.shape).astype(leaf.dtype)
                for (name, leaf), key in zip(z0.items(), keys)}


def _norm(tree) -> float:
    return float(jnp.sqrt(sum(jnp.sum(jnp.abs(leaf) ** 2) for leaf in jax.tree.leaves(tree))))


def _minus(a, b):
    return jax.tree.map(lambda x, y: x - y, a, b)


@jax_setup.scope()    # the fields are compared in float64
def noise_class(system) -> str:
    """``additive``, ``commutative`` or ``general`` (module docstring)."""
    m = system.noises
    field = lambda i: (lambda z: _leaves(system, system.noise_action(system.space.from_leaves(z),
                                                                       jnp.zeros(m).at[i].set(1.0))))
    states = _states(system)
    fields = [field(i) for i in range(m)]
    if all(_norm(_minus(f(states[0]), f(states[1]))) <= ZERO * max(1.0, _norm(f(states[0]))) for f in fields):
        return "additive"
    if m == 1:
        return "commutative"
    pairs = [(i, j) for i in range(m) for j in range(i + 1, m)]
    if len(pairs) > MOST_PAIRS:
        rng = np.random.default_rng(0)
        pairs = [pairs[k] for k in rng.choice(len(pairs), MOST_PAIRS, replace=False)]
    for z in states:
        for i, j in pairs:
            yi, yj = fields[i](z), fields[j](z)
            _, dj_yi = jax.jvp(fields[j], (z,), (yi,))
            _, di_yj = jax.jvp(fields[i], (z,), (yj,))
            if _norm(_minus(dj_yi, di_yj)) > ZERO * max(1.0, _norm(dj_yi), _norm(di_yj)):
                return "general"
    return "commutative"


@jax_setup.scope()
def quadratic_invariants(system) -> tuple[str, ...]:
    """The system's declared invariants that are quadratic functions of its state."""
    observables = system.observables()
    z0 = _states(system)[0]
    quadratic = []
    for name in system.invariants():
        f = lambda leaves: observables[name](system.space.from_leaves(leaves))
        flat = True
        for seed in (2, 3):
            keys = jax.random.split(jax.random.key(seed), len(z0))
            direction = {n: jax.random.normal(k, x.shape).astype(x.dtype) for (n, x), k in zip(z0.items(), keys)}
            value = lambda s: float(jnp.real(f({n: x + s * direction[n] for n, x in z0.items()})))
            g = [value(s) for s in (-1.0, 0.0, 1.0, 2.0)]
            third = g[3] - 3 * g[2] + 3 * g[1] - g[0]
            flat &= abs(third) <= ZERO * max(1.0, *map(abs, g))
        if flat:
            quadratic.append(name)
    return tuple(quadratic)


@dataclasses.dataclass(frozen=True)
class SystemFacts:
    """What the claims of a cell are checked against, read off the built system."""
    structure: str
    noises: int
    noise_class: str
    invariants: tuple[str, ...]
    quadratic: tuple[str, ...]
    invariant_sizes: dict        # |I(z0)| of each invariant at the first path's initial state

    @classmethod
    @jax_setup.scope()
    def of(cls, system) -> SystemFacts:
        z0 = system.initial_state(jax.random.key(0))
        observables = system.observables()
        sizes = {name: abs(float(jnp.real(observables[name](z0)))) for name in system.invariants()}
        return cls(system.structure, system.noises, noise_class(system), tuple(system.invariants()),
                   quadratic_invariants(system), sizes)


def _built_system(overrides: Sequence[str], source: ConfigSource):
    """The system of ``overrides`` and the cells of every integrator with it (a system is built with one that fits)."""
    cells = cells_of("", overrides, integrator_options(source), source)
    fitting = [c for c in cells if c.fits]
    if not fitting:
        raise ConfigError("--system", " ".join(overrides), "a system some integrator fits: " + cells[0].reason)
    return compose_setup([*overrides, f"integrator={fitting[0].integrator}"], source)[1].system, fitting


def default_observable(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> str:
    """A system of one's own: its weak errors' observable, H where it has one, else its first."""
    observables = list(_built_system(overrides, source)[0].observables())
    return "H" if "H" in observables else observables[0]


def default_reference(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> str:
    """A system of one's own: exact where it knows its exact path, else the fitting method driven by Gaussian
    increments that claims the highest strong order for the system's noise class (the first such option on a tie)."""
    from sgi_run.engine.convergence_plan import has_exact_state
    from sgi_run.integrators.claims import claims_of

    system, fitting = _built_system(overrides, source)
    if has_exact_state(system):
        return "exact"
    noise = noise_class(system)
    strong = [(claims_of(c.integrator, source).order("strong", noise) or 0.0, -n, c.integrator)
              for n, c in enumerate(fitting) if c.error_kind == "strong"]
    if not strong:
        raise ConfigError("--reference", "auto", "a method's name: no fitting method is driven by Gaussian increments")
    return max(strong)[2]
