"""The memory budget of a run: what it holds at its peak, and a plan settled to fit the memory there is.

``fit_to_memory`` is the one call: it settles ``plan.shard_size: auto`` for the device and the host's memory
(``engine.device.auto_shard_size``) and for the largest array XLA indexes right (``ARRAY_ELEMENTS_MAX``),
then refuses, before any compute, a plan that still cannot fit, with one ``ConfigError`` line naming the
plan key to change (or the integrator, when one path alone does not fit). The host's limit is
``$SGI_RUN_MEMORY_LIMIT``, else the memory available now.
"""
from __future__ import annotations

import dataclasses
import math
import os

from sgi_run.core import noise
from sgi_run.core.errors import ConfigError
from sgi_run.engine import device
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.device import MEMORY_SHARE
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import BLOCK_VALUES, observable_shapes

MEMORY_LIMIT_ENV = "SGI_RUN_MEMORY_LIMIT"   # bytes, or e.g. 4GiB: for tests and shared machines
_UNITS = {"": 1, "B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "KB": 10**3, "MB": 10**6,
          "GB": 10**9, "TB": 10**12}


def fit_to_memory(system, integrator, plan: Plan | ConvergencePlan,
                  reference_integrator=None) -> Plan | ConvergencePlan:
    """The plan with ``shard_size: auto`` settled for the memory there is; refused where it cannot fit. A
    study's fine reference method (``plan.reference_method``) is ``reference_integrator`` (None: its own)."""
    limit = memory_limit()     # read once: the shard is fitted to and checked against the same number
    plan = fit_shard_size(system, integrator, plan, host_bytes=limit[0], reference_integrator=reference_integrator)
    _check_memory(memory_estimate(system, integrator, plan, reference_integrator), plan, system, integrator, limit,
                  reference_integrator)
    _check_array_size(plan, system, integrator, reference_integrator)
    return plan


def fitting_shards(system, integrator, plan, reference_integrator=None) -> int:
    """How many shards of the plan fit in memory at once (at least one): each on the device, the rest of
    the run once (executor=local's ``shards_at_once``)."""
    estimate, limit = memory_estimate(system, integrator, plan, reference_integrator), memory_limit()[0]
    shard = estimate.parts["plan.shard_size"]
    fits = 1 + max(0, limit - estimate.total) // max(shard, 1)
    free = device.free_bytes()
    return int(fits if free is None else min(fits, max(1, free // max(shard, 1))))


def memory_limit() -> tuple[int, str]:
    """(bytes a run may use, where that number comes from): $SGI_RUN_MEMORY_LIMIT, else the memory
    this machine has available now."""
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if text:
        number = text.rstrip("BKMGTibkmgt ")
        unit = text[len(number):].strip().upper()
        try:
            limit = float(number) * _UNITS[unit]
        except (ValueError, KeyError):
            limit = math.nan
        if not (math.isfinite(limit) and limit >= 1):     # 1e400GiB is inf; -5GiB would blame a plan key
            raise ConfigError(MEMORY_LIMIT_ENV, text, f"a size of at least 1 byte, e.g. 4GiB (a number of bytes, "
                              f"or with a unit: {', '.join(u.replace('I', 'i') for u in _UNITS if len(u) > 1)})")
        return int(limit), MEMORY_LIMIT_ENV
    try:
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
        return available, "available on this machine"
    except (OSError, StopIteration, ValueError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "on this machine"


# --- what a run holds ----------------------------------------------------------------------------
def state_words(space) -> int:
    """float64 words of one path's state (a complex entry is two)."""
    return sum(leaf.size * (2 if leaf.dtype == "complex128" else 1) for leaf in space.leaves)


@dataclasses.dataclass(frozen=True)
class MemoryEstimate:
    """Bytes a run holds at its peak, by what drives them (each part names the plan key that scales it)."""
    parts: dict[str, int]      # plan key -> bytes

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    @property
    def largest(self) -> str:
        return max(self.parts, key=self.parts.get)

    def describe(self) -> str:
        return f"about {format_bytes(self.total)} of memory"


def format_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.3g} {unit}"
        n /= 1024


def memory_estimate(system, integrator, plan: Plan | ConvergencePlan, reference_integrator=None) -> MemoryEstimate:
    """What ``Simulator`` and ``engine.ensemble.run_shards`` allocate, in float64 words:

    - per shard on the device: paths x ``_words_per_path`` (state, keys, an implicit solver's Jacobian
      and temporaries) and the block of random numbers (at most BLOCK_VALUES, and at least one step of
      every path), DRAW_COPIES times while it is drawn;
    - every shard's statistics (times x observables x 3), kept until the merge, then merged;
    - kept paths (kept x times x (d + observables)), snapshots (snapshot times x paths x d) and
      per-path time averages (paths x observables): once per shard result, once merged, once read
      back when the file is written and verified.

    A convergence study: see ``_convergence_estimate``.
    """
    if isinstance(plan, ConvergencePlan):
        return _convergence_estimate(system, integrator, plan, reference_integrator)
    d, n_times = state_words(system.space), plan.outputs + 1
    n_obs = sum(math.prod(shape) for shape in observable_shapes(system, plan.observables).values())
    copies = 3
    words = {
        "plan.shard_size": _shard_words(system, integrator, plan, reference_integrator),
        "plan.output_dt": (plan.shard_count + copies) * n_times * (3 * n_obs + 3),
        "plan.keep_paths": copies * plan.keep_paths * n_times * (d + n_obs),
        "plan.snapshots": copies * len(plan.snapshots) * plan.paths * d,
        "plan.time_average": copies * plan.paths * n_obs if plan.time_average is not None else 0,
    }
    return MemoryEstimate({key: 8 * n for key, n in words.items()})


# Copies of a block of random numbers a shard holds while it is drawn. A convergence study's draws (fine
# increments, summed onto every level) hold the most: at 2 copies Ephrati et al. Figure 5's weak study was
# estimated at 0.97 of what XLA allocates; at 3, the estimates of tests/engine/test_budget.py's cases are
# 1.25-2.6 times XLA's memory analysis. (4 while threefry was a loop of passes over memory on the CPU, each
# holding the block's bits: ``core.noise`` now unrolls it.)
DRAW_COPIES = 3


def _shard_layout_words(system, integrator, plan, reference_integrator=None) -> tuple[int, int, int]:
    """(words one path of a shard holds on the device besides its random numbers, random-number words one
    path draws per step, and per output interval), for an ensemble or a convergence study
    (``memory_estimate``, ``_convergence_estimate``)."""
    if isinstance(plan, ConvergencePlan):
        return _lock_step_words(system, integrator, plan, reference_integrator)
    per_step = noise.NOISE_KINDS[integrator.noise_kind] * system.noises * plan.brownian_refine
    return _words_per_path(system, integrator), per_step, per_step * plan.steps_per_output


def _lock_step_words(system, integrator, plan: ConvergencePlan, reference_integrator=None) -> tuple[int, int, int]:
    """``_shard_layout_words`` of a study's lock-step (``engine.lock_step.LockStep``): every level's and
    the reference's state, one implicit solve's temporaries (the levels are stepped one after another),
    every level's variables of a coarse step laid end to end and the reference's, and for a strong study
    the reference path over the coarse step (a fine run's states, held twice: the scan's output and its
    stacked copy; or the exact solution at the grid times)."""
    from sgi_run.engine.lock_step import lock_step     # the lock-step imports the engine this module sizes
    d, u = state_words(system.space), integrator.jacobian_unknowns(system)
    step = lock_step(system, integrator, plan, reference_integrator)
    if reference_integrator is not None:
        u = max(u, reference_integrator.jacobian_unknowns(system))
    n, rows = step.grid_steps, noise.NOISE_KINDS[step.drawn_kind] * system.noises
    variables = rows * (sum(n // step.refine(dt) for dt in plan.dts) + n)
    reference_path = (2 if plan.reference == "fine" else 1) * n * d if plan.error == "strong" else 0
    per_path = (len(plan.dts) + 1) * 10 * d + _solve_words(d, u) + variables + reference_path
    return per_path, step.values_per_step, step.values_per_step


def _block_words(paths: int, per_step: int, drawn: int) -> int:
    """Words of one block of random numbers: up to BLOCK_VALUES, and never less than one step of every
    path (``engine.simulate.Simulator.block_steps``)."""
    return max(min(BLOCK_VALUES, paths * drawn), paths * per_step)


def _paths_per_shard(plan) -> int:
    """Paths in a shard of an ensemble, or of a study (run as the ensemble of its grid plan)."""
    return (plan.grid_plan(["error"]) if isinstance(plan, ConvergencePlan) else plan).paths_per_shard


def _shard_key(plan) -> str:
    """The plan key that sets a shard's size: plan.shards when it is a number, else plan.shard_size."""
    return "plan.shard_size" if plan.shards == "auto" else "plan.shards"


def _shard_words(system, integrator, plan, reference_integrator=None) -> int:
    """Device words of one shard: its paths and its block of random numbers as the draws hold it."""
    per_path, per_step, drawn = _shard_layout_words(system, integrator, plan, reference_integrator)
    paths = _paths_per_shard(plan)
    return paths * per_path + DRAW_COPIES * _block_words(paths, per_step, drawn)


def path_bytes(system, integrator, plan, reference_integrator=None) -> int:
    """Bytes one path of a shard holds on the device, its share of a block's random numbers included (a
    block of BLOCK_VALUES grows no further with the paths, but one step of every path does): what no
    shard size can make smaller."""
    per_path, per_step, _ = _shard_layout_words(system, integrator, plan, reference_integrator)
    return 8 * (per_path + DRAW_COPIES * per_step)


# A shard's largest array, counted as ``array_elements_per_path`` times its paths, stays under this many
# elements. Why: past 2^31 elements XLA's GPU code indexed an array with 32-bit integers and gave wrong
# numbers with no error. Ephrati et al. (2024) Figure 5 at 10^7 paths on an H100 (jax 0.11.2): a
# lock-step shard of 476191 paths drawing 1536 values a path a step (7.3 x 10^8) gave 440358 wrong paths
# of 476191, and every weak error the same -0.0021; 360000 paths (5.5 x 10^8) were right, and so were
# the same paths in small shards and on a CPU. Its programs hold arrays a few times the draws (each
# increment as a 3 x 3 matrix, 2.2 x 10^9 elements), so the bound leaves a factor 8 below 2^31.
ARRAY_ELEMENTS_MAX = 2**28


def array_elements_per_path(system, integrator, plan, reference_integrator=None) -> int:
    """Elements one path adds to a shard's largest array, as counted against ``ARRAY_ELEMENTS_MAX``: its
    state, or the random numbers it draws in one step (a block holds at least one step of every path)."""
    _, per_step, _ = _shard_layout_words(system, integrator, plan, reference_integrator)
    return max(state_words(system.space), per_step)


def max_shard_paths(system, integrator, plan, reference_integrator=None) -> int:
    """The most paths a shard may have (``ARRAY_ELEMENTS_MAX``)."""
    return max(1, ARRAY_ELEMENTS_MAX // array_elements_per_path(system, integrator, plan, reference_integrator))


def fit_shard_size(system, integrator, plan, host_bytes: int | None = None, reference_integrator=None):
    """The plan (ensemble or convergence study) with ``shard_size: auto`` settled for this device
    (``engine.device.auto_shard_size``; ``host_bytes``: the memory a run may use on the host) and for
    ``ARRAY_ELEMENTS_MAX``."""
    if plan.shard_size != "auto":
        return plan
    fits = device.auto_shard_size(path_bytes(system, integrator, plan, reference_integrator), plan.paths, host_bytes)
    most = max_shard_paths(system, integrator, plan, reference_integrator)
    return dataclasses.replace(plan, shard_size=min(fits, most))


def _words_per_path(system, integrator) -> int:
    """Device memory of one path in float64 words, as measured (peak resident memory on a CPU, per
    10^6 paths: Heun 17, midpoint 49, SRKw2 383 words for d = 2): the state and its start, keys,
    increments and observables (~10 d), and an implicit solve's temporaries (``_solve_words``)."""
    d, u = state_words(system.space), integrator.jacobian_unknowns(system)
    return 10 * d + _solve_words(d, u)


def _solve_words(d: int, u: int) -> int:
    """An implicit solve's Jacobians and forward-mode temporaries for u unknowns solved together (~24 + d^2 +
    3 u^2), and the u (u + 1) entries of its elimination, counted for every u: above ``core.linalg.FUSED_MAX``
    unknowns they are held at once, apart from the step (SRKw2's 12: XLA's account then exceeded 3 u^2). None
    for fixed-point iteration: an N x N matrix state of d = 2 N^2 words is never squared."""
    return 24 + d * d + 3 * u * u + u * (u + 1) if u else 0


def _convergence_estimate(system, integrator, plan: ConvergencePlan, reference_integrator=None) -> MemoryEstimate:
    """What a convergence study (``engine.convergence``, run by this engine) allocates, in float64 words:

    - per shard on the device: per path, ``_lock_step_words``, and the coarse step's random numbers
      (every fine increment of it: a block is at least one coarse step of every path);
    - per path, when the order gets a bootstrap interval: its final error at every level, and a weak
      observable's (plan.weak_observable) (three copies, as an ensemble's time averages).
    """
    words = {"plan.shard_size": _shard_words(system, integrator, plan, reference_integrator)}
    if plan.bootstrap:
        weak = len(plan.dts) if plan.weak_observable is not None else 0     # its per-path differences too
        words["plan.paths"] = 3 * plan.paths * (len(plan.dts) + 1 + weak)
    return MemoryEstimate({key: 8 * n for key, n in words.items()})


# --- what does not fit -------------------------------------------------------------------------------
_MEMORY_ADVICE = {
    "plan.shard_size": "fewer paths per shard (a smaller plan.shard_size, or more plan.shards)",
    "plan.shards": "fewer paths per shard (more plan.shards)",
    "plan.output_dt": "fewer output times (a larger plan.output_dt or a shorter plan.T) or fewer shards",
    "plan.keep_paths": "fewer kept paths (plan.keep_paths) or output times",
    "plan.snapshots": "fewer snapshot times (plan.snapshots) or paths",
    "plan.time_average": "fewer paths",
    "plan.paths": "fewer plan.paths, or plan.bootstrap=0 (every path's final errors are kept for the bootstrap)",
}


def _check_array_size(plan: Plan | ConvergencePlan, system, integrator, reference_integrator=None) -> None:
    most = max_shard_paths(system, integrator, plan, reference_integrator)
    paths = _paths_per_shard(plan)
    if paths <= most:
        return
    shard_key = _shard_key(plan)
    raise ConfigError(shard_key, getattr(plan, shard_key.split(".", 1)[1]),
                      f"shards of at most {most} paths for this run "
                      f"({array_elements_per_path(system, integrator, plan, reference_integrator)} "
                      f"numbers a path in a shard's largest array, kept under 2^28 elements: past 2^31, XLA's GPU "
                      f"code gave wrong numbers); use {_MEMORY_ADVICE[shard_key]}")


def _check_memory(estimate, plan: Plan | ConvergencePlan, system, integrator, memory: tuple[int, str],
                  reference_integrator=None) -> None:
    shard_key = _shard_key(plan)
    on_device, free = estimate.parts["plan.shard_size"], device.free_bytes()
    one_path = path_bytes(system, integrator, plan, reference_integrator)
    if free is not None and one_path > free:
        raise _one_path_too_big(system, integrator, one_path, f"{device.describe()} has {format_bytes(free)} free")
    if free is not None and on_device > free:
        raise ConfigError(shard_key, getattr(plan, shard_key.split(".", 1)[1]),
                          f"a shard that fits on the device: one needs {format_bytes(on_device)} and "
                          f"{device.describe()} has {format_bytes(free)} free; use {_MEMORY_ADVICE[shard_key]}")
    limit, source = memory
    if estimate.total <= limit:
        return
    if estimate.largest == "plan.shard_size" and one_path > MEMORY_SHARE * limit:
        raise _one_path_too_big(system, integrator, one_path, f"{format_bytes(limit)} is {source}")
    key = shard_key if estimate.largest == "plan.shard_size" else estimate.largest
    value = getattr(plan, key.split(".", 1)[1])
    raise ConfigError(key, value, f"a run that fits in memory: this one needs {format_bytes(estimate.total)} "
                      f"({format_bytes(estimate.parts[estimate.largest])} for {key}) and "
                      f"{format_bytes(limit)} is {source}; use {_MEMORY_ADVICE[key]}")


def _one_path_too_big(system, integrator, one_path: int, where: str) -> ConfigError:
    """Even a shard of one path does not fit: only a cheaper path can (a smaller state, no dense Jacobian)."""
    unknowns = integrator.jacobian_unknowns(system)
    cheaper = (f"integrator.solver=fixed_point (it builds no Jacobian of the {unknowns} unknowns), or "
               if unknowns and getattr(integrator, "solver", None) in ("newton", "chord") else "")
    return ConfigError("integrator", integrator.name,
                       f"an integrator whose path fits in memory with {type(system).__name__}: one path alone needs "
                       f"{format_bytes(one_path)} and {where}; use {cheaper}another integrator, or a smaller system "
                       f"(its state is {state_words(system.space)} numbers)")
