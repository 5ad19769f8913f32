"""What a method costs at a step size, measured honestly: the engine's own run of a shard, compiled apart,
then timed several times, every method in one series in this process on this device.

A *cell* is one method at one step size: an ensemble of ``paths`` paths from 0 to T at that dt, on the
same seed and truncation as its convergence study, run by the engine's ``Simulator`` as a run's shard is
(the draws, the steps, the statistics of one observable at T), so its time is what a user's run of that
method pays per path. Each cell is run once untimed first (``first_call_s``: compilation and one run;
JAX compiles a program per shape, so per step size), then ``repeats`` times in rounds: every round times
each cell once, in an order rotated from round to round so that no method always follows the same one
(a warm cache or a clock ramp then favours none). The spread of the repeats is kept, not only their median.

Timing is never part of a test's assertion (it varies with the machine and its load): it is measured
here and reported with the device it ran on.
"""
from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence

import numpy as np

from sgi_run.engine.plan import Plan


@dataclasses.dataclass(frozen=True)
class Cell:
    """One method at one step size: what is timed."""
    method: str          # the run id of its convergence study
    dt: float
    system: object
    integrator: object
    plan: Plan           # the timed ensemble: paths, T, dt, seed, truncation

    @property
    def path_steps(self) -> int:
        return self.plan.paths * self.plan.steps


def cells_of(method: str, system, integrator, study_plan, paths: int) -> list[Cell]:
    """The cells of one convergence study: its step sizes, its T, seed and truncation, ``paths`` paths in one
    shard (the cost of one shard's program, not of the shard layout)."""
    observables = system.observables()
    observed = ("H",) if "H" in observables else (next(iter(observables)),)
    return [Cell(method, float(dt), system, integrator,
                 Plan(paths=paths, dt=float(dt), T=study_plan.T, output_dt=study_plan.T, observables=observed,
                      keep_paths=0, seed=study_plan.seed, shards=1, shard_size=paths, truncate=study_plan.truncate))
            for dt in study_plan.dts]


@dataclasses.dataclass
class Timings:
    """Every cell's times: ``first_call_s`` (cells,) and ``seconds`` (cells, rounds done)."""
    first_call_s: np.ndarray
    seconds: np.ndarray

    @classmethod
    def empty(cls, cells: int) -> Timings:
        return cls(np.full(cells, np.nan), np.zeros((cells, 0)))


def measure(cells: Sequence[Cell], repeats: int, done: Timings | None = None,
            on_round: Callable[[Timings], None] | None = None, log: Callable[[str], None] = lambda s: None) -> Timings:
    """Time every cell ``repeats`` times in rounds (continuing ``done``'s rounds: an interrupted series resumes),
    handing each finished round's ``Timings`` to ``on_round`` (to be kept)."""
    from sgi_run.engine.simulate import Simulator

    timings = done or Timings.empty(len(cells))
    simulators = [Simulator(c.system, c.integrator, c.plan) for c in cells]
    for i, (cell, sim) in enumerate(zip(cells, simulators)):
        started = time.perf_counter()
        sim.run_shard(0)
        if np.isnan(timings.first_call_s[i]):
            timings.first_call_s[i] = time.perf_counter() - started
        log(f"    compiled {cell.method} at dt={cell.dt:g} ({time.perf_counter() - started:.1f} s with one run)")
    for r in range(timings.seconds.shape[1], repeats):
        times = np.full(len(cells), np.nan)
        for j in np.roll(np.arange(len(cells)), -r):
            started = time.perf_counter()
            simulators[j].run_shard(0)       # returns host arrays: the device has finished
            times[j] = time.perf_counter() - started
        timings = Timings(timings.first_call_s, np.column_stack([timings.seconds, times]))
        log(f"    timing round {r + 1}/{repeats}: {np.sum(times):.1f} s")
        if on_round is not None:
            on_round(timings)
    return timings
