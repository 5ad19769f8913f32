"""The ensemble simulator of one (system, integrator, plan).

Paths are ``vmap``ped, steps are a ``lax.scan`` through a block of drawn variables, and the statistics
at each output time are reduced on the device, so only (times x observable entries) numbers come back.
Shards all have the same padded shape, so each program compiles once per run; padding paths are
masked out of every statistic. The step size is an argument of the programs, never a constant in
them, and the draws and the statistics are programs of their own: a step-size scan, or runs that
share a noise or a system, compile them once (JAX's compilation cache holds them across runs).

A path's state is a pytree described by the system's space (``core.space``): every leaf keeps its
shape and dtype (complex included) from the initial state to the kept paths and snapshots. An
observable is a real scalar or a real array of fixed shape (a vector observable, e.g. a sorted
spectrum): the engine reduces the concatenation of their entries, so every entry gets its own
count, mean and variance.

Observables are the system's named functions of the state, plus ``<name>_change`` for each:
its change since t = 0 on the same path, :math:`g(z_t) - g(z_0)`. Its mean is the drift of
:math:`E(g)` with the *paired* standard error, far smaller than that of the difference of two
means when the initial ensemble is random (Kraus & Tyranowski 2021, Figure 4.11).

A system that declares invariants (``System.invariants``) has their drift recorded whatever the observables: each
path carries the running sup of :math:`|I(z_k) - I(z_0)|` over every step beside its state, and each output time
gets the largest over the paths still finite there (``engine.invariants``).
"""
from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import noise
from sgi_run.engine import device, invariants, programs
from sgi_run.engine.moments import Moments
from sgi_run.engine.plan import Plan

# Random numbers drawn ahead per block of steps: at most this many (32 MiB of float64).
BLOCK_VALUES = 2**22
CHANGE_SUFFIX = "_change"


def observable_functions(system, names) -> list[Callable]:
    """``f(z, z0)`` for each observable name; refuses an unknown name (one line, allowed names)."""
    from sgi_run.core.errors import ConfigError

    base = system.observables()
    functions = []
    for name in names:
        root = name[: -len(CHANGE_SUFFIX)] if name.endswith(CHANGE_SUFFIX) else name
        if root not in base:
            allowed = list(base) + [f"{n}{CHANGE_SUFFIX}" for n in base]
            raise ConfigError("plan.observables", name, f"observables of {type(system).__name__}: {allowed}")
        g = base[root]
        functions.append((lambda z, z0, g=g: g(z) - g(z0)) if root != name else (lambda z, z0, g=g: g(z)))
    return functions


def observable_shapes(system, names) -> dict[str, tuple[int, ...]]:
    """The shape of each observable's value (``()`` for a scalar); refuses a complex or non-numeric one."""
    from sgi_run.core.errors import ConfigError

    space = system.space
    example = space.from_leaves({leaf.name: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for leaf in space.leaves})
    shapes = {}
    for name, f in zip(names, observable_functions(system, names)):
        value = jax.eval_shape(f, example, example)
        if not jnp.issubdtype(value.dtype, jnp.floating) and not jnp.issubdtype(value.dtype, jnp.integer):
            raise ConfigError("plan.observables", name, f"real-valued observables ({name} is {value.dtype}: "
                              "observe its real and imaginary parts, or its modulus)")
        shapes[name] = tuple(value.shape)
    return shapes


# The axis of the paths in a block of draws: the last. A step's m noises are then m arrays over the paths, as
# the steps consume them; with the m noises last, the transform that makes them ran element by element (three
# noises took three times one noise's time each).
PATHS_AXIS = -1


def _draw_block(draw, noise_keys, first_step, length: int, dt, bound):
    """Every path's variables of steps ``first_step .. first_step + length - 1``, (length, ..., paths), where
    ``draw(key, step, dt, bound)`` gives one path's (``PATHS_AXIS``)."""
    one_step = lambda step: jax.vmap(lambda key: draw(key, step, dt, bound), out_axes=PATHS_AXIS)(noise_keys)
    return jax.vmap(one_step)(first_step + jnp.arange(length))


def _steps_through(system, integrator, carry, z0, xi, valid, dt):
    """Every path's steps through one block of variables ``xi`` from ``carry`` (the state, the running sup of each
    declared invariant's drift from ``z0``'s, then the solver counters: iterations summed, the most in one step,
    unconverged and stagnated steps)."""
    step_all = jax.vmap(lambda z, x: integrator.advance(system, z, dt, x), in_axes=(0, PATHS_AXIS))
    invariants_of = invariants.of_paths(system)
    initial = invariants_of(z0)

    def one_step(carry, x):
        z, drift, it_sum, it_max, unconverged, stagnated = carry
        z, stats = step_all(z, x)
        iterations = jnp.where(valid, stats.iterations, 0)
        return (z, invariants.running_sup(drift, invariants_of(z), initial), it_sum + iterations.sum(),
                jnp.maximum(it_max, iterations.max()), unconverged + (valid & stats.unconverged).sum(),
                stagnated + (valid & stats.stagnated).sum()), None

    return jax.lax.scan(one_step, carry, xi)[0]


def _statistics(system, names, z, z0, valid, drift):
    """The observables' count, mean and sum of squared deviations over the valid paths with finite
    values, the valid paths whose state is not finite, every path's values, and the largest drift of
    each declared invariant over the valid paths whose drift is finite (``drift``: every path's running
    sups, which the state ``z``'s own drift completes at t = 0)."""
    functions = observable_functions(system, names)
    values = jax.vmap(lambda z, z0: jnp.concatenate([jnp.ravel(f(z, z0)) for f in functions]))(z, z0)  # (S, entries)
    finite = jnp.isfinite(values) & valid[:, None]
    count = finite.sum(axis=0)
    mean = jnp.where(finite, values, 0.0).sum(axis=0) / jnp.maximum(count, 1)
    m2 = jnp.where(finite, (values - mean) ** 2, 0.0).sum(axis=0)
    nonfinite = (valid & ~jax.vmap(system.space.is_finite)(z)).sum()
    invariants_of = invariants.of_paths(system)
    drift = invariants.running_sup(drift, invariants_of(z), invariants_of(z0))
    return count, mean, m2, nonfinite, values, invariants.largest(drift, valid[:, None])


@dataclasses.dataclass
class SolverCounts:
    """Per output time (the interval ending there): solver iterations summed over paths and steps, the
    most one path took in one step, the steps whose solve failed (unconverged), and the steps whose
    fixed-point solve stopped at its round-off floor (stagnated: reported, not failed)."""
    iterations: np.ndarray
    max_iterations: np.ndarray
    unconverged_steps: np.ndarray
    stagnated_steps: np.ndarray

    @classmethod
    def zeros(cls, n_times: int) -> SolverCounts:
        return cls(*(np.zeros(n_times, np.int64) for _ in dataclasses.fields(cls)))

    def merge(self, other: SolverCounts) -> SolverCounts:
        return SolverCounts(self.iterations + other.iterations, np.maximum(self.max_iterations, other.max_iterations),
                            self.unconverged_steps + other.unconverged_steps,
                            self.stagnated_steps + other.stagnated_steps)


@dataclasses.dataclass
class ShardResult:
    shard: int
    first_path: int
    paths: int
    moments: Moments              # (times, observable entries)
    nonfinite: np.ndarray         # (times,) paths whose state is not finite
    solver: SolverCounts
    kept: dict[str, np.ndarray]   # name -> (kept paths, times, *shape): state views and observables
    wall_time: float
    snapshots: dict[str, np.ndarray]   # the state's leaves by name, each (plan.snapshots, paths of the shard, *leaf shape)
    time_averages: np.ndarray | None = None  # (paths of the shard, observable entries) over plan.time_average
    device: str = ""              # what computed it (engine.device.describe)
    # (times, invariants): each declared invariant's largest drift over the shard's paths finite at the output time
    # and their steps up to it (NaN: none finite; engine.invariants)
    invariant_drift: np.ndarray | None = None


class ShardStopped(Exception):
    """A shard abandoned at an output time because its run was stopped (another shard's thread saw Ctrl-C)."""


class Simulator:
    def __init__(self, system, integrator, plan: Plan):
        self.system, self.integrator, self.plan = system, integrator, plan
        self.space = system.space
        self.solver_name = integrator.solver_name(system)
        self.observable_names = list(plan.observables)
        self.observable_shapes = observable_shapes(system, self.observable_names)
        self.invariant_names = tuple(system.invariants())
        self.kept_count = min(plan.keep_paths, plan.paths_per_shard)
        # The step size and the truncation bound are arguments of the compiled programs, not constants in
        # them: the runs of a step-size scan share their programs (JAX's compilation cache finds them).
        self.dt = jnp.float64(plan.dt)
        bound = noise.truncation_bound(plan.truncate, plan.dt)
        self.bound = None if bound is None else jnp.float64(bound)
        if hasattr(integrator, "draw"):
            # A stepper that draws its own variables (a convergence study's lock-step: every fine
            # increment of a coarse step): one path's variables of step k, addressed as every draw is.
            per_step, drawn_by = integrator.values_per_step, (integrator,)
            draw = lambda key, step, dt, bound: integrator.draw(key, step)
        else:
            kind, noises, refine = integrator.noise_kind, system.noises, plan.brownian_refine
            per_step, drawn_by = noise.NOISE_KINDS[kind] * noises * refine, (kind, noises, refine)
            draw = lambda key, step, dt, bound: noise.increments(kind, key, step, dt, noises, refine, bound)
        self.block_steps = int(max(1, min(plan.steps_per_output, BLOCK_VALUES // (plan.paths_per_shard * per_step))))
        # Four programs, each compiled once per run: the initial states, a block's draws, the steps through
        # a block, the statistics at an output time. Apart, the draws (the same for every run with the same
        # noise and shapes) and the statistics (for every run of the system) are compiled once for all of
        # them; and within a process the runs of one system and method share the program objects
        # (engine.programs), so a step-size scan traces each once.
        names = tuple(self.observable_names)
        self._draws = programs.shared("draws", drawn_by, lambda: jax.jit(functools.partial(_draw_block, draw),
                                                                         static_argnums=2))
        self._steps = programs.shared("steps", (system, integrator),
                                      lambda: jax.jit(functools.partial(_steps_through, system, integrator)))
        self._statistics_of = programs.shared("statistics", (system, names),
                                              lambda: jax.jit(functools.partial(_statistics, system, names)))
        self._initial_states = programs.shared("initial states", (system,), lambda: jax.jit(jax.vmap(
            lambda k: system.initial_state(noise.init_key(k)))))
        self._no_counts = tuple(jnp.zeros((), jnp.int64) for _ in dataclasses.fields(SolverCounts))
        self._no_drift = jnp.zeros((plan.paths_per_shard, len(self.invariant_names)))

    @property
    def observable_slices(self) -> dict[str, tuple[slice, tuple[int, ...]]]:
        """Where each observable's entries sit among the reduced values, and its shape."""
        out, start = {}, 0
        for name, shape in self.observable_shapes.items():
            size = math.prod(shape)
            out[name], start = (slice(start, start + size), shape), start + size
        return out

    def split_entries(self, values: np.ndarray, axis_count: int) -> dict[str, np.ndarray]:
        """Observable entries on the last axis -> name -> (*leading axes, *observable shape)."""
        lead = values.shape[:axis_count]
        return {name: values[..., where].reshape(lead + shape) for name, (where, shape) in self.observable_slices.items()}

    def views(self, states) -> dict[str, np.ndarray]:
        """The space's named views of states with two leading axes (e.g. paths, times)."""
        functions = self.space.view_functions()
        view = jax.vmap(jax.vmap(lambda z: {name: f(z) for name, f in functions.items()}))
        return {name: np.asarray(v) for name, v in view(states).items()}

    def calls_libraries(self) -> bool:
        """Whether a shard's programs call a library (LAPACK on a CPU: dense solves above UNROLL_MAX unknowns,
        eigenvalues) rather than being XLA's own code: two such programs at once deadlocked XLA's CPU runtime
        (SRKw2 on Kubo, jax 0.10.2), so they run one shard at a time. Read from the programs as lowered for a
        shard (a trace, no compile)."""
        size = self.plan.paths_per_shard
        keys, noise_keys = self._keys(0, size)
        valid = jax.ShapeDtypeStruct((size,), jnp.bool_)
        z = jax.eval_shape(self._initial_states, keys)
        xi = jax.eval_shape(lambda k: self._draws(k, 0, self.block_steps, self.dt, self.bound), noise_keys)
        lowered = [self._steps.lower((z, self._no_drift, *self._no_counts), z, xi, valid, self.dt),
                   self._statistics_of.lower(z, z, valid, self._no_drift), self._initial_states.lower(keys)]
        return any("custom_call" in program.as_text() for program in lowered)

    def _keys(self, first: int, size: int):
        """The path keys of paths ``first .. first + size - 1`` and the keys their variables are drawn from
        (an integrator that draws its own, a convergence study's lock-step, addresses them itself)."""
        keys = noise.path_keys(self.plan.seed, first, size)
        if hasattr(self.integrator, "noise_keys"):
            return keys, self.integrator.noise_keys(self.plan.seed, first, size)
        return keys, jax.vmap(noise.noise_key)(keys)

    def _initial(self, path_keys, valid):
        z0 = self._initial_states(path_keys)
        return z0, self._statistics_of(z0, z0, valid, self._no_drift)

    def _advance(self, z, drift, z0, noise_keys, valid, start_step):
        """One output interval: its steps block by block (a block's variables drawn at once, then stepped
        through: ~1.5x faster on a CPU than drawing inside each step; the variables are addressed by global
        step index, so the block length never changes a number), then the statistics at its end. The loop
        is over blocks of up to BLOCK_VALUES variables, not over steps: its calls are dispatched
        asynchronously, each behind a block of work. (state, the invariants' running sups, statistics, counts)"""
        carry, done = (z, drift, *self._no_counts), 0
        while done < self.plan.steps_per_output:
            length = min(self.block_steps, self.plan.steps_per_output - done)
            xi = self._draws(noise_keys, start_step + done, length, self.dt, self.bound)
            carry = self._steps(carry, z0, xi, valid, self.dt)
            done += length
        z, drift, *counts = carry
        return z, drift, self._statistics_of(z, z0, valid, drift), counts

    # --- one shard ------------------------------------------------------------------------------
    def run_shard(self, shard: int, on_output: Callable[[int], None] | None = None,
                  resume: dict[str, np.ndarray] | None = None,
                  on_progress: Callable[[dict[str, np.ndarray]], None] | None = None,
                  stopped: Callable[[], bool] = lambda: False) -> ShardResult:
        """Every path of ``shard``. Every ``plan.checkpoint_every`` output times (0: never) it hands
        ``on_progress`` the shard so far (host arrays: the state, its start, every statistic); given
        back as ``resume``, the shard continues from there to the same numbers. ``stopped()`` is asked
        at each output time: true, the shard is abandoned (``ShardStopped``; its last progress is kept)."""
        plan, space = self.plan, self.space
        start = time.perf_counter()
        first, count = plan.shard_paths(shard)
        size = plan.paths_per_shard
        keys, noise_keys = self._keys(first, size)
        valid = jnp.arange(size) < count
        n_times = plan.outputs + 1
        entries = sum(math.prod(shape) for shape in self.observable_shapes.values())

        moments = Moments.empty((n_times, entries))
        nonfinite = np.zeros(n_times, np.int64)
        invariant_drift = np.zeros((n_times, len(self.invariant_names)))
        solver = SolverCounts.zeros(n_times)
        kept_here = max(0, min(self.kept_count, plan.keep_paths - first, count))
        kept_states = space.zeros((kept_here, n_times))
        kept_values = np.zeros((kept_here, n_times, entries))
        snapshot_at = {i: j for j, i in enumerate(plan.snapshot_indices)}
        snapshots = space.zeros((len(snapshot_at), count))
        averaged = plan.time_average_indices
        # A path that is non-finite at any averaged time gets a non-finite average (NaN), never a
        # partial one.
        path_sums = np.zeros((count, entries))
        # Every host buffer by name: what a mid-shard checkpoint holds besides the state.
        held = {"count": moments.count, "mean": moments.mean, "m2": moments.m2, "nonfinite": nonfinite,
                "kept_values": kept_values, "path_sums": path_sums, "invariant_drift": invariant_drift}
        held |= {f"solver/{f.name}": getattr(solver, f.name) for f in dataclasses.fields(SolverCounts)}
        held |= {f"kept_states/{k}": v for k, v in space.leaves_of(kept_states).items()}
        held |= {f"snapshots/{k}": v for k, v in space.leaves_of(snapshots).items()}

        def put(buffers, index, z, paths):
            """Copy the first ``paths`` paths of the state ``z`` into host buffers at ``index``."""
            jax.tree.map(lambda buffer, x: buffer.__setitem__(index, np.asarray(x[:paths])), buffers, z)

        def record(i, z, stats):
            c, mean, m2, nf, drift = jax.device_get(stats[:4] + stats[5:])
            moments.count[i], moments.mean[i], moments.m2[i], nonfinite[i], invariant_drift[i] = c, mean, m2, nf, drift
            if kept_here:
                put(kept_states, (slice(None), i), z, kept_here)
                kept_values[:, i] = np.asarray(stats[4][:kept_here])
            if i in snapshot_at:
                put(snapshots, snapshot_at[i], z, count)
            if i in averaged:
                values = np.asarray(stats[4][:count])
                path_sums[:] += np.where(np.isfinite(values), values, np.nan)

        def state_arrays(prefix, z):
            return {f"{prefix}/{k}": np.asarray(v) for k, v in space.leaves_of(z).items()}

        def state_from(arrays, prefix):
            return space.from_leaves({k.split("/", 1)[1]: jnp.asarray(v) for k, v in arrays.items()
                                      if k.startswith(prefix + "/")})

        if resume is None:
            z0, stats = self._initial(keys, valid)
            record(0, z0, stats)
            z, drift, done, earlier = z0, self._no_drift, 0, 0.0
        else:
            for name, buffer in held.items():
                np.copyto(buffer, resume[name])
            z0, z = state_from(resume, "z0"), state_from(resume, "z")
            drift = jnp.asarray(resume["sup_drift"])
            done, earlier = int(resume["done"]), float(resume["wall_time"])
            if on_output is not None:
                on_output(count * done)
        every = plan.checkpoint_every
        for i in range(done + 1, n_times):
            if stopped():
                raise ShardStopped(shard)
            z, drift, stats, counts = self._advance(z, drift, z0, noise_keys, valid, (i - 1) * plan.steps_per_output)
            record(i, z, stats)
            for field, c in zip(dataclasses.fields(SolverCounts), counts):
                getattr(solver, field.name)[i] = int(c)
            if on_output is not None:
                on_output(count)
            if every and on_progress is not None and i % every == 0 and i < n_times - 1:
                on_progress(held | state_arrays("z", z) | state_arrays("z0", z0) | {"sup_drift": np.asarray(drift)}
                            | {"done": np.array(i), "wall_time": np.array(earlier + time.perf_counter() - start)})

        kept = self.views(kept_states) if kept_here else {
            name: np.zeros((0, n_times) + spec.shape, spec.dtype) for name, spec in space.view_specs().items()}
        kept.update(self.split_entries(kept_values, 2))
        return ShardResult(shard, first, count, moments, nonfinite, solver, kept,
                           earlier + time.perf_counter() - start, space.leaves_of(snapshots),
                           path_sums / len(averaged) if len(averaged) else None, device.describe(),
                           invariant_drift if self.invariant_names else None)
