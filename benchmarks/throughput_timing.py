"""Throughput benchmark, the timing harness: warm every entry up (compile), time them round-robin,
record the CPU other processes used meanwhile, and turn each entry's timings into a result record."""
from __future__ import annotations

import dataclasses
import os
import time

import numpy as np

import jax

from throughput_report import _fmt_load
from throughput_workloads import Entry, Prepared, Stats

from sgi_run.core import jax_setup

jax_setup.configure()   # float64 before any array is made


class _CompileClock:
    """Sums XLA backend-compile durations reported through jax.monitoring."""
    EVENT = "/jax/core/compile/backend_compile_duration"

    def __init__(self):
        self.total = 0.0
        jax.monitoring.register_event_duration_secs_listener(self._listen)

    def _listen(self, event, duration, **kwargs):
        if event == self.EVENT:
            self.total += duration


@dataclasses.dataclass
class _Timing:
    entry: Entry
    prep: Prepared
    first: float
    xla_compile: float
    runs: list = dataclasses.field(default_factory=list)
    cpu: list = dataclasses.field(default_factory=list)
    load: list = dataclasses.field(default_factory=list)
    others: list = dataclasses.field(default_factory=list)
    stats: Stats | None = None

    @property
    def repeats_wanted(self) -> int:
        return self.entry.max_repeats or 10**9


def _load1() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def warm_up(entry: Entry, clock: _CompileClock, log) -> _Timing:
    w = entry.workload
    log(f"[{entry.id}] {entry.setting}: {w.paths} paths x {w.steps} steps: warm-up ...")
    prep = entry.prepare()
    xla0 = clock.total
    t = time.perf_counter()
    prep.warmup()
    first = time.perf_counter() - t
    log(f"[{entry.id}] first call {first:.2f} s")
    return _Timing(entry, prep, first, clock.total - xla0)


def _machine_busy_s() -> float | None:
    """CPU seconds spent by the whole machine (all processes, all cores) since boot, from /proc/stat."""
    try:
        with open("/proc/stat") as fh:
            f = [int(x) for x in fh.readline().split()[1:]]
        return (f[0] + f[1] + f[2] + f[5] + f[6] + (f[7] if len(f) > 7 else 0)) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Stopwatch:
    """``with Stopwatch() as w:``: afterwards ``w.wall`` and ``w.cpu`` (this process) in seconds, and
    ``w.others``, the cores' worth of CPU that other processes used meanwhile (None without /proc/stat)."""

    def __enter__(self) -> Stopwatch:
        self._busy, self._wall, self._cpu = _machine_busy_s(), time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc) -> None:
        self.wall, self.cpu = time.perf_counter() - self._wall, time.process_time() - self._cpu
        busy = _machine_busy_s()
        self.others = (None if busy is None or self._busy is None
                       else max(0.0, (busy - self._busy - self.cpu) / self.wall))


def time_once(tm: _Timing, log) -> None:
    tm.load.append(_load1())
    with Stopwatch() as watch:
        tm.stats = tm.prep.run()
    tm.runs.append(watch.wall)
    tm.cpu.append(watch.cpu)
    tm.others.append(watch.others)
    log(f"[{tm.entry.id}] run {len(tm.runs)}: {tm.runs[-1]:.2f} s wall, {tm.cpu[-1]:.2f} s CPU, "
        f"other processes {_fmt_load(tm.others[-1])} cores "
        f"-> {tm.entry.workload.path_steps / tm.runs[-1]:.3e} path-steps/s")


def result(tm: _Timing) -> dict:
    entry, w, stats = tm.entry, tm.entry.workload, tm.stats
    i = int(np.argmin(tm.runs))
    best = tm.runs[i]
    return {
        "id": entry.id, "group": entry.group, "method": entry.method, "engine": entry.engine,
        "setting": entry.setting, "note": entry.note, "reference": entry.reference, "solver": entry.solver,
        "system": w.system, "params": w.params, "paths": w.paths, "steps": w.steps, "dt": w.dt, "T": w.T,
        "path_steps": w.path_steps,
        "first_call_s": tm.first, "warmup_fraction": tm.prep.warmup_fraction,
        # The warm-up did warmup_fraction of the work, compiling on the way.
        "compile_s": tm.first - tm.prep.warmup_fraction * best,
        "xla_backend_compile_s": tm.xla_compile,
        "run_s": best, "run_s_all": tm.runs, "cpu_s_all": tm.cpu, "cpu_s_best_run": tm.cpu[i],
        "load1_before_runs": tm.load, "other_processes_cores_all": tm.others,
        "other_processes_cores_best_run": tm.others[i],
        "path_steps_per_s": w.path_steps / best,
        "observable": w.observable, "mean_T": stats.mean, "se_T": stats.se, "count": stats.count,
        "newton_iterations": stats.newton_iterations,
        "newton_per_step": (stats.newton_iterations / w.path_steps
                            if stats.newton_iterations is not None else None),
        "newton_max_per_step": stats.newton_max,
        "unconverged_steps": stats.unconverged_steps,
        # Workload.conserved: name -> max over paths of |g(z_T) - g(z_0)| (absent for other workloads)
        **({"conserved_max_change_T": stats.max_change} if stats.max_change is not None else {}),
    }


def measure_all(entries: list[Entry], repeats: int, clock: _CompileClock, log) -> list[dict]:
    """Warm every entry up, then time them round-robin, so that a change in background load
    during the benchmark falls on all entries alike rather than on whichever ran at the time."""
    timings = [warm_up(e, clock, log) for e in entries]
    for _ in range(max(repeats, 1)):
        for tm in timings:
            if len(tm.runs) < min(repeats, tm.repeats_wanted):
                time_once(tm, log)
    return [result(tm) for tm in timings]
