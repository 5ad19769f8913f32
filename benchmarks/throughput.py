"""Throughput benchmark: path-steps per second of sgi-run's engine against diffrax, same machine, same run.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/throughput.py``). Writes
``outputs/bench/throughput.json`` and ``outputs/bench/throughput.md``. Workloads (``--workload``, default
all, one markdown table each, 10^5 paths): ``kubo`` (sgi-run heun and midpoint against diffrax Heun),
``van_der_pol`` (every canonical integrator in conf/integrator/ against diffrax Heun),
``langevin_double_well`` (SVIA/B/C against diffrax Heun), ``spherical_pendulum`` (CSVIA/B/C; CSVIA's
SHAKE in closed form and by Newton) and ``circle_pendulum`` (CSVIA/B/C, Newton SHAKE for two
constraints).

What is measured
----------------
* sgi-run: the ensemble engine itself, ``sgi_run.engine.simulate.Simulator.run_shard`` called for
  every shard of the plan, with the shard moments merged (no HDF5, no config composition). The
  engine's statistics are reduced on the device and fetched with ``device_get``, so each call has
  finished when it returns. Newton iterations per path-step (mean, and the most in one step of any
  path) come from the engine's counters.
* diffrax: ``jax.jit(jax.vmap(solve))`` over per-path keys, where ``solve`` is one
  ``diffrax.diffeqsolve`` of ``MultiTerm(ODETerm(drift), ControlTerm(diffusion, brownian))`` with
  ``diffrax.Heun()`` (converges to the Stratonovich solution), a constant step ``dt0 = dt``, and
  ``SaveAt(t1=True)``; the result is ``block_until_ready``-ed.

Each entry is run once to compile (the warm-up); then all entries are timed round-robin,
``--repeats`` rounds, and the best repeat is the reported run time. The runs use every core, so
other load distorts them; the CPU used by other processes during each run is recorded (from
/proc/stat) and the markdown warns when it exceeds 0.2 cores. "compile s" is the first call's wall time minus the run time of the same amount
of work (for the sharded engine the warm-up is shard 0 alone, so the best run's per-shard share is
subtracted). The XLA backend-compile time seen by ``jax.monitoring`` is stored in the JSON as a
cross-check.

Adding a benchmark
------------------
``build_entries()`` returns a list of ``Entry`` objects: one per (engine, method, setting). Use
``sgi_entries(workload, "<integrator yaml name>")`` for sgi-run integrators (it adds one entry per
shard layout; the faster one is reported), ``sgi_entry`` for the default layout alone, and
``diffrax_entry(...)`` for diffrax peers. A new system needs a line in ``WORKLOADS`` and, for a
diffrax peer, nothing else (the generic vector fields come from the sgi-run system; hand-written
ones can be registered in ``DIFFRAX_FIELDS``).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime as _dt
import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import yaml

import sgi_run.core  # noqa: F401  (enables float64 before any array is made)
import jax
import jax.numpy as jnp

from sgi_run.engine.moments import Moments
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.integrators import make_integrator
from sgi_run.systems import SYSTEMS

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"
SCHEMA = "sgi-run/bench/throughput/2"


# ------------------------------------------------------------------------------------------------
# The problem
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Workload:
    """One SDE problem at one size: a sgi-run system with parameters, paths, dt, T. The system's
    name is the workload's name (``--workload``); ``id_prefix`` keeps entry ids unique across them."""
    system: str
    params: dict
    paths: int
    dt: float
    T: float
    sde: str = ""
    id_prefix: str = ""
    observable: str = "H"

    @property
    def steps(self) -> int:
        return round(self.T / self.dt)

    @property
    def path_steps(self) -> int:
        return self.paths * self.steps

    def make_system(self):
        return SYSTEMS[self.system](**self.params)

    def describe(self) -> str:
        p = ", ".join(f"{k}={v}" for k, v in self.params.items())
        return f"{self.system} ({p}), {self.paths} paths x {self.steps} steps, dt={self.dt}, T={self.T}"


@dataclasses.dataclass
class Stats:
    """What one timed call returns: the observable's mean and standard error at T, and extras."""
    mean: float
    se: float
    count: int
    newton_iterations: int | None = None   # summed over paths and steps
    newton_max: int | None = None          # most any path took in one step


@dataclasses.dataclass
class Prepared:
    """A ready-to-time workload: ``warmup()`` compiles (doing ``warmup_fraction`` of the work),
    ``run()`` does all the work and returns only once it is finished."""
    warmup: Callable[[], object]
    run: Callable[[], Stats]
    warmup_fraction: float = 1.0


@dataclasses.dataclass
class Entry:
    id: str
    group: str            # entries of one group are variants of one method; the fastest is reported
    method: str           # display name
    engine: str           # "sgi-run" | "diffrax"
    setting: str          # layout / Brownian path, named in the output
    workload: Workload
    prepare: Callable[[], Prepared]
    reference: bool = False   # the peer that ratios are taken against
    note: str = ""
    max_repeats: int | None = None   # cap on timed runs for slow, secondary entries


# ------------------------------------------------------------------------------------------------
# sgi-run entries
# ------------------------------------------------------------------------------------------------
def _integrator_cfg(name: str) -> dict:
    with open(CONF / "integrator" / f"{name}.yaml") as fh:
        return yaml.safe_load(fh)


def sgi_entry(w: Workload, integrator: str, shards: int | str = "auto", shard_size: int = 10000,
              options: dict | None = None) -> Entry:
    """``options``: integrator keys to change (e.g. ``{"shake": "newton"}``); they name the entry."""
    options = options or {}
    variant = "".join(f"-{v}" for v in options.values())
    plan = Plan(paths=w.paths, dt=w.dt, T=w.T, output_dt=w.T, observables=(w.observable,),
                keep_paths=0, seed=0, shards=shards, shard_size=shard_size)
    setting = (f"shard_size={plan.paths_per_shard} ({plan.shard_count} shards)" if plan.shard_count > 1
               else f"one shard of {plan.paths_per_shard} paths")

    def prepare() -> Prepared:
        sim = Simulator(w.make_system(), make_integrator({**_integrator_cfg(integrator), **options}), plan)

        def run() -> Stats:
            total, newton, newton_max = None, 0, 0
            for shard in range(plan.shard_count):
                r = sim.run_shard(shard)     # returns host numpy: the device work is finished
                total = r.moments if total is None else total.merge(r.moments)
                newton, newton_max = newton + int(r.newton_iterations.sum()), max(newton_max, int(r.newton_max.max()))
            return Stats(float(total.mean[-1, 0]), float(total.sem[-1, 0]), int(total.count[-1, 0]),
                         newton, newton_max)

        # Every shard has the same padded shape, so shard 0 alone compiles everything.
        return Prepared(warmup=lambda: sim.run_shard(0), run=run, warmup_fraction=1.0 / plan.shard_count)

    return Entry(id=f"{w.id_prefix}sgi-{integrator}{variant}-{'auto' if shards == 'auto' else f'{shards}shard'}",
                 group=f"sgi-run {integrator}{variant}", method=f"sgi-run {integrator}"
                 + "".join(f" ({k}={v})" for k, v in options.items()), engine="sgi-run",
                 setting=setting, workload=w, prepare=prepare,
                 note="engine only: Simulator.run_shard over all shards, moments merged")


def sgi_entries(w: Workload, integrator: str) -> list[Entry]:
    """Both shard layouts: the default (10000 paths per shard) and all paths in one shard."""
    out = [sgi_entry(w, integrator, "auto", 10000)]
    if w.paths > 10000:
        out.append(sgi_entry(w, integrator, 1))
    return out


# ------------------------------------------------------------------------------------------------
# diffrax entries
# ------------------------------------------------------------------------------------------------
def _kubo_fields(system):
    """Hand-written Kubo fields, as a diffrax user would write them: X = (p, -q - nu p), Y = beta X."""
    beta, nu = system.beta, system.nu

    def drift(t, y, args):
        return jnp.stack([y[1], -y[0] - nu * y[1]])

    def diffusion(t, y, args):
        return beta * drift(t, y, args)[:, None]          # (2, 1): one noise

    return drift, diffusion


def _generic_fields(system):
    """sgi-run's own fields (autodiff of the Hamiltonians), for systems without hand-written ones."""
    return (lambda t, y, args: system.drift(y)), (lambda t, y, args: system.noise_fields(y).T)


def _van_der_pol_fields(system):
    """Hand-written van der Pol fields: X = (p, -q + nu (1 - q^2) p), Y = (0, sigma) (additive)."""
    nu, sigma = system.nu, system.sigma
    drift = lambda t, y, args: jnp.stack([y[1], -y[0] + nu * (1 - y[0] ** 2) * y[1]])
    return drift, (lambda t, y, args: jnp.array([[0.0], [sigma]]))


DIFFRAX_FIELDS = {"kubo": _kubo_fields, "van_der_pol": _van_der_pol_fields}


def diffrax_entry(w: Workload, brownian: str = "unsafe", reference: bool = False, solver: str = "Heun",
                  max_repeats: int | None = None) -> Entry:
    import diffrax

    label = {"unsafe": "UnsafeBrownianPath", "vbt": f"VirtualBrownianTree(tol=dt/2={w.dt / 2:g})"}[brownian]

    def prepare() -> Prepared:
        system = w.make_system()
        drift, diffusion = DIFFRAX_FIELDS.get(w.system, _generic_fields)(system)
        # The peer must solve the same SDE: check its fields against sgi-run's at a few points.
        pts = jax.random.normal(jax.random.key(7), (5, 2 * system.dof))
        for z in pts:
            assert np.allclose(drift(0.0, z, None), system.drift(z), rtol=1e-13, atol=1e-13)
            assert np.allclose(diffusion(0.0, z, None), system.noise_fields(z).T, rtol=1e-13, atol=1e-13)
        m = system.noises
        y0 = system.initial_state(jax.random.key(0))
        observe = system.observables()[w.observable]
        t0, t1, steps = 0.0, w.T, w.steps

        def solve(key):
            if brownian == "unsafe":
                bm = diffrax.UnsafeBrownianPath(shape=(m,), key=key)
            else:
                bm = diffrax.VirtualBrownianTree(t0, t1, tol=w.dt / 2, shape=(m,), key=key)
            terms = diffrax.MultiTerm(diffrax.ODETerm(drift), diffrax.ControlTerm(diffusion, bm))
            sol = diffrax.diffeqsolve(
                terms, getattr(diffrax, solver)(), t0, t1, w.dt, y0,
                saveat=diffrax.SaveAt(t1=True), stepsize_controller=diffrax.ConstantStepSize(),
                # UnsafeBrownianPath only supports forward mode; used for both paths for like-for-like.
                adjoint=diffrax.ForwardMode(), max_steps=steps)
            return observe(sol.ys[-1]), sol.stats["num_steps"]

        batched = jax.jit(jax.vmap(solve))
        # Different random numbers from sgi-run (on purpose): the cross-check compares mean +- SE.
        keys = jax.random.split(jax.random.key(20240601), w.paths)

        def run() -> Stats:
            values, nsteps = jax.block_until_ready(batched(keys))
            values, nsteps = np.asarray(values), np.asarray(nsteps)
            assert np.all(nsteps == steps), f"diffrax took {set(nsteps.tolist())} steps, expected {steps}"
            finite = values[np.isfinite(values)]
            n = finite.size
            return Stats(float(finite.mean()), float(finite.std(ddof=1) / math.sqrt(n)), int(n))

        return Prepared(warmup=run, run=run, warmup_fraction=1.0)

    return Entry(id=f"{w.id_prefix}diffrax-{solver.lower()}-{brownian}" + ("" if reference else f"-{w.paths}"),
                 group=f"diffrax {solver} {brownian}", method=f"diffrax {solver}", engine="diffrax",
                 setting=label, workload=w, prepare=prepare, reference=reference,
                 note="jit(vmap(diffeqsolve)), ConstantStepSize, SaveAt(t1=True), ForwardMode adjoint",
                 max_repeats=max_repeats)


# ------------------------------------------------------------------------------------------------
# The list of benchmarks
# ------------------------------------------------------------------------------------------------
# name (= sgi-run system) -> parameters, dt, default steps, the SDE as printed, entry-id prefix
WORKLOADS = {
    "kubo": (dict(beta=0.5, nu=0.001, q0=2.0, p0=0.0), 0.01, 1000,
             "Stratonovich SDE dq = p (dt + beta∘dW), dp = (-q - nu p)(dt + beta∘dW)", ""),
    # The paper's parameters (conf/system/van_der_pol.yaml). 100 steps keep srkw2 (~0.2 M path-steps/s
    # on the 2-core development machine) under a minute per timed run.
    "van_der_pol": (dict(nu=0.001, sigma=0.05, q0=1.0, p0=1.0), 0.02, 100,
                    "SDE dq = p dt, dp = (-q + nu (1 - q²) p) dt + sigma dW (additive noise: Itô = Stratonovich)",
                    "vdp-"),
    # Paper 003's protocols (Fig. 2.1: h = 0.25; Fig. 2.2: h = 0.1) at c = 1, 200 steps: throughput,
    # not the figures (conf/system/*.yaml; experiments/bou_rabee_owhadi/).
    "langevin_double_well": (dict(c=1.0, beta=1.0), 0.25, 200,
                             "Langevin dq = p dt, dp = (q - q³ - c p) dt + sqrt(2c/beta) dW", "dw-"),
    "spherical_pendulum": (dict(c=1.0, beta=1.0), 0.1, 200,
                           "Langevin on |q| = 1 in R^3, U = q3, 3-d ambient noise (SHAKE/RATTLE)", "sph-"),
    "circle_pendulum": (dict(c=1.0, beta=1.0, mass=(1.0, 3.0, 2.0)), 0.05, 200,
                        "Langevin on |q| = 1, q3 = 0 in R^3 (two constraints), U = q2, M = diag(1, 3, 2)", "circ-"),
}
# Every integrator in conf/integrator/: implicit (Newton) LDA methods, explicit strong, then weak.
VDP_INTEGRATORS = ("midpoint", "stormer_verlet", "dirk", "heun", "r2", "e1", "srkw1", "srkw2", "rs1", "rs2")


def make_workload(name: str, args) -> Workload:
    params, dt, steps, sde, prefix = WORKLOADS[name]
    return Workload(name, params, args.paths, dt, (args.steps or steps) * dt, sde, prefix)


def build_entries(args) -> list[Entry]:
    entries = []
    if "kubo" in args.workload:
        kubo = make_workload("kubo", args)
        entries += [diffrax_entry(kubo, "unsafe", reference=True), *sgi_entries(kubo, "heun"),
                    *sgi_entries(kubo, "midpoint")]
        if args.vbt_paths > 0:
            # VirtualBrownianTree costs a tree descent per step: about 30x slower than UnsafeBrownianPath
            # on the 2-core development machine, so 10^5 paths would take minutes. It is timed on fewer
            # paths, once, as an indication only (its path-steps/s also depends on the batch size).
            entries.append(diffrax_entry(dataclasses.replace(kubo, paths=min(args.vbt_paths, args.paths)), "vbt",
                                         max_repeats=1))
    if "van_der_pol" in args.workload:
        # Every integrator in its default layout only (shards of 10^4 paths): the layouts are compared
        # on the Kubo workload, and a second srkw2 layout would add ~3 minutes.
        vdp = make_workload("van_der_pol", args)
        entries += [diffrax_entry(vdp, "unsafe", reference=True), *(sgi_entry(vdp, i) for i in VDP_INTEGRATORS)]
    if "langevin_double_well" in args.workload:
        # diffrax Heun solves the same SDE (the system is also canonical: additive noise).
        well = make_workload("langevin_double_well", args)
        entries += [diffrax_entry(well, "unsafe", reference=True), *(sgi_entry(well, i) for i in ("svia", "svib", "svic"))]
    if "spherical_pendulum" in args.workload:
        # No diffrax peer (no constrained solver there): the closed-form CSVIA is the reference.
        sphere = make_workload("spherical_pendulum", args)
        entries += [dataclasses.replace(sgi_entry(sphere, "csvia"), reference=True),
                    sgi_entry(sphere, "csvia", options={"shake": "newton"}),
                    *(sgi_entry(sphere, i) for i in ("csvib", "csvic"))]
    if "circle_pendulum" in args.workload:
        circle = make_workload("circle_pendulum", args)
        entries += [sgi_entry(circle, i) for i in ("csvia", "csvib", "csvic")]
    return entries


# ------------------------------------------------------------------------------------------------
# Measurement
# ------------------------------------------------------------------------------------------------
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


def time_once(tm: _Timing, log) -> None:
    tm.load.append(_load1())
    busy0 = _machine_busy_s()
    t, c = time.perf_counter(), time.process_time()
    tm.stats = tm.prep.run()
    tm.runs.append(time.perf_counter() - t)
    tm.cpu.append(time.process_time() - c)
    busy1 = _machine_busy_s()
    # Cores' worth of CPU used by other processes while this run was timed.
    tm.others.append(None if busy0 is None or busy1 is None
                     else max(0.0, (busy1 - busy0 - tm.cpu[-1]) / tm.runs[-1]))
    log(f"[{tm.entry.id}] run {len(tm.runs)}: {tm.runs[-1]:.2f} s wall, {tm.cpu[-1]:.2f} s CPU, "
        f"other processes {_fmt_load(tm.others[-1])} cores "
        f"-> {tm.entry.workload.path_steps / tm.runs[-1]:.3e} path-steps/s")


def result(tm: _Timing) -> dict:
    entry, w, stats = tm.entry, tm.entry.workload, tm.stats
    i = int(np.argmin(tm.runs))
    best = tm.runs[i]
    return {
        "id": entry.id, "group": entry.group, "method": entry.method, "engine": entry.engine,
        "setting": entry.setting, "note": entry.note, "reference": entry.reference,
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


# ------------------------------------------------------------------------------------------------
# Machine description
# ------------------------------------------------------------------------------------------------
def machine() -> dict:
    def cpuinfo(key):
        try:
            for line in open("/proc/cpuinfo"):
                if line.split(":")[0].strip() == key:
                    return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return None

    def meminfo_gib():
        try:
            for line in open("/proc/meminfo"):
                if line.startswith("MemTotal:"):
                    return round(int(line.split()[1]) / 1024**2, 2)
        except OSError:
            return None

    def os_name():
        try:
            for line in open("/etc/os-release"):
                if line.startswith("PRETTY_NAME="):
                    return line.split("=", 1)[1].strip().strip('"')
        except OSError:
            pass
        return platform.system()

    def version(mod):
        try:
            return __import__(mod).__version__
        except Exception:  # noqa: BLE001
            return None

    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    return {
        "cpu_model": cpuinfo("model name") or platform.processor(),
        "cpu_cores_logical": os.cpu_count(),
        "cpu_cores_usable": usable,
        "memory_gib": meminfo_gib(),
        "os": f"{os_name()} (kernel {platform.release()}, {platform.machine()})",
        "python": platform.python_version(),
        "jax": version("jax"), "jaxlib": version("jaxlib"), "diffrax": version("diffrax"),
        "equinox": version("equinox"), "numpy": np.__version__,
        "jax_backend": jax.default_backend(),
        "jax_devices": [str(d) for d in jax.devices()],
        "jax_enable_x64": bool(jax.config.jax_enable_x64),
        "XLA_FLAGS": os.environ.get("XLA_FLAGS"),
        "date_utc": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        **_code_version(),
    }


def _code_version() -> dict:
    """The sgi-run commit benchmarked, and whether the engine's sources differ from it."""
    import subprocess

    def git(*a):
        try:
            return subprocess.run(["git", *a], cwd=ROOT, capture_output=True, text=True, timeout=10).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return ""
    commit = git("rev-parse", "HEAD") or None
    dirty = git("status", "--porcelain", "--", "sgi_run", "conf") if commit else ""
    return {"git_commit": commit, "sgi_run_uncommitted_changes": bool(dirty)}


# ------------------------------------------------------------------------------------------------
# Reporting
# ------------------------------------------------------------------------------------------------
def _z(a: dict, b: dict) -> float:
    return (a["mean_T"] - b["mean_T"]) / math.sqrt(a["se_T"] ** 2 + b["se_T"] ** 2)


def summarize(results: list[dict], workload_exact: Callable | None) -> dict:
    """The summary of one workload's results: ratios, the fastest entry per group, cross-checks."""
    ref = next((r for r in results if r["reference"]), None)
    for r in results:
        r["ratio_vs_reference"] = r["path_steps_per_s"] / ref["path_steps_per_s"] if ref else None
    best_by_group: dict[str, dict] = {}
    for r in results:
        g = best_by_group.get(r["group"])
        if g is None or r["path_steps_per_s"] > g["path_steps_per_s"]:
            best_by_group[r["group"]] = r
    primary = [r["id"] for r in best_by_group.values()]

    checks = []
    sgi_heun = best_by_group.get("sgi-run heun")
    for r in results:
        if r["engine"] == "diffrax" and r["method"] == "diffrax Heun" and sgi_heun is not None:
            z = _z(r, sgi_heun)
            checks.append({"a": r["id"], "b": sgi_heun["id"], "what": f"E({r['observable']})(T)",
                           "a_mean": r["mean_T"], "a_se": r["se_T"], "b_mean": sgi_heun["mean_T"],
                           "b_se": sgi_heun["se_T"], "difference": r["mean_T"] - sgi_heun["mean_T"],
                           "z": z, "agree_within_3se": abs(z) < 3.0})
    # Shard layouts address random numbers by path index, so both layouts give the same mean.
    for g in {r["group"] for r in results if r["engine"] == "sgi-run"}:
        rs = [r for r in results if r["group"] == g]
        if len(rs) > 1:
            checks.append({"a": rs[0]["id"], "b": rs[1]["id"], "what": "same random numbers, different layout",
                           "a_mean": rs[0]["mean_T"], "b_mean": rs[1]["mean_T"],
                           "difference": rs[0]["mean_T"] - rs[1]["mean_T"],
                           "agree_within_1e-12": abs(rs[0]["mean_T"] - rs[1]["mean_T"]) < 1e-12})
    # Many methods on one problem: the spread of their E(H)(T) (weak bias at this dt plus noise).
    sgi = [r for r in best_by_group.values() if r["engine"] == "sgi-run"]
    if len(sgi) > 2:
        lo, hi = min(sgi, key=lambda r: r["mean_T"]), max(sgi, key=lambda r: r["mean_T"])
        checks.append({"what": "spread over sgi-run methods", "a": lo["id"], "b": hi["id"], "methods": len(sgi),
                       "a_mean": lo["mean_T"], "b_mean": hi["mean_T"], "difference": hi["mean_T"] - lo["mean_T"],
                       "se_max": max(r["se_T"] for r in sgi)})
    exact = None
    if workload_exact is not None and results:
        exact = float(workload_exact(results[0]["T"]))
        for r in results:
            r["exact_mean_T"] = exact
    return {"reference": ref["id"] if ref else None, "primary": primary, "crosschecks": checks,
            "exact_mean_T": exact}


def _fmt_rate(x: float) -> str:
    return f"{x / 1e6:.2f} M"


def _fmt_load(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _fmt_ratio(x) -> str:
    return "n/a" if x is None else f"{x:.2f}"


def _fmt_newton(r: dict) -> str:
    if r.get("newton_per_step") is None:
        return "n/a"
    return "explicit" if not r["newton_iterations"] else f"{r['newton_per_step']:.3f} / {r['newton_max_per_step']}"


def _workload_markdown(doc: dict, wl: dict) -> list[str]:
    s, by_id = wl["summary"], {r["id"]: r for r in doc["results"]}
    res = [r for r in doc["results"] if r["system"] == wl["system"]]
    p = ", ".join(f"{k}={v}" for k, v in wl["params"].items())
    lines = [f"## {wl['system']}", "",
             f"System `{wl['system']}` ({p}); {wl['paths']:,} paths x {wl['steps']:,} steps, "
             f"dt = {wl['dt']:g}, T = {wl['T']:g}.",
             f"{wl['sde']}; observable H (the system's energy) at T."
             + (f" Exact E(H)(T) = {s['exact_mean_T']:.6f} (paper eq. 4.2-4.3)." if s["exact_mean_T"]
                else " No exact E(H)(T) is known: the E(H)(T) column is a cross-check between methods."), ""]
    ref = by_id.get(s["reference"])
    head = ("| method | setting | paths | steps | compile s | run s | path-steps/s | ratio vs reference "
            "| Newton it./step mean / max | E(H)(T) ± SE |")
    rule = "|---|---|---:|---:|---:|---:|---:|---:|---:|---|"

    def row(r):
        return (f"| {r['method']} | {r['setting']} | {r['paths']:,} | {r['steps']:,} | {r['compile_s']:.2f} "
                f"| {r['run_s']:.2f} | {_fmt_rate(r['path_steps_per_s'])} | {_fmt_ratio(r['ratio_vs_reference'])} "
                f"| {_fmt_newton(r)} | {r['mean_T']:.6f} ± {r['se_T']:.1e} |")

    lines += ["### Results (fastest setting of each method)", "",
              f"Ratio is path-steps/s over that of {ref['method']} ({ref['setting']})." if ref else "", "",
              head, rule, *(row(by_id[i]) for i in s["primary"]), ""]
    for i in s["primary"]:
        r = by_id[i]
        if r["paths"] != wl["paths"]:
            lines.append(f"- {r['method']} ({r['setting']}) was timed on {r['paths']:,} paths, not "
                         f"{wl['paths']:,}, and {len(r['run_s_all'])} time(s): an indication of its cost, "
                         "not a like-for-like figure.")
    lines += ["- Newton it./step: Newton iterations per path-step, mean over all paths and steps / most in "
              "one step of any path (summed over a step's implicit stage solves).", ""]
    lines += ["### All measured settings", "",
              head + " first call s | all runs s (wall) | all runs s (process CPU) | others, cores |",
              rule + "---:|---|---|---|"]
    lines += [row(r) + f" {r['first_call_s']:.2f} | {', '.join(f'{x:.2f}' for x in r['run_s_all'])} "
              f"| {', '.join(f'{x:.2f}' for x in r['cpu_s_all'])} "
              f"| {', '.join(_fmt_load(x) for x in r['other_processes_cores_all'])} |" for r in res]
    lines += [""]
    lines += ["### Cross-checks", ""]
    for c in s["crosschecks"]:
        if "z" in c:
            lines.append(f"- {c['what']}: {c['a']} = {c['a_mean']:.6f} ± {c['a_se']:.1e} vs {c['b']} = "
                         f"{c['b_mean']:.6f} ± {c['b_se']:.1e}; difference {c['difference']:+.2e} = "
                         f"{c['z']:+.2f} combined SE -> {'agree' if c['agree_within_3se'] else 'DISAGREE'} "
                         "(independent random numbers; same scheme, so the same expectation).")
        elif "se_max" in c:
            lines.append(f"- E(H)(T) over the {c['methods']} sgi-run methods: from {c['a_mean']:.6f} ({c['a']}) "
                         f"to {c['b_mean']:.6f} ({c['b']}), spread {c['difference']:.1e} = "
                         f"{c['difference'] / c['se_max']:.1f} x the largest SE (weak bias at this dt; "
                         "methods with the same noise kind share random numbers).")
        else:
            lines.append(f"- {c['what']}: {c['a']} and {c['b']} means differ by {c['difference']:.1e} "
                         f"-> {'identical' if c['agree_within_1e-12'] else 'DIFFERENT'}.")
    return lines + [""]


def markdown(doc: dict) -> str:
    if doc.get("schema") != SCHEMA:
        raise SystemExit(f"{doc.get('schema')}: not {SCHEMA}; rerun the benchmark")
    m, res = doc["machine"], doc["results"]
    lines = ["# Throughput: sgi-run engine vs diffrax", ""]
    lines += [f"Generated by `benchmarks/throughput.py` (`make bench`) on {m['date_utc']}. "
              "Workloads: " + ", ".join(f"{w['system']} ({w['paths']:,} paths x {w['steps']:,} steps, "
                                        f"dt = {w['dt']:g})" for w in doc["workloads"]) + ".", ""]
    lines += ["## Machine", "",
              f"- CPU: {m['cpu_model']}, {m['cpu_cores_logical']} logical cores "
              f"({m['cpu_cores_usable']} usable by this process)",
              f"- Memory: {m['memory_gib']} GiB",
              f"- OS: {m['os']}",
              f"- Python {m['python']}; jax {m['jax']}, jaxlib {m['jaxlib']}, diffrax {m['diffrax']}, "
              f"equinox {m['equinox']}, numpy {m['numpy']}",
              f"- JAX backend: {m['jax_backend']}; devices: {', '.join(m['jax_devices'])}; "
              f"float64: {m['jax_enable_x64']}; XLA_FLAGS: {m['XLA_FLAGS'] or '(unset)'}",
              f"- sgi-run commit {(m.get('git_commit') or 'unknown')[:12]}"
              f"{' (with uncommitted changes to sgi_run/ or conf/)' if m.get('sgi_run_uncommitted_changes') else ''}",
              f"- 1-minute load average: {_fmt_load(m.get('load1_at_start'))} before the benchmark started, "
              f"{_fmt_load(m.get('load1_at_end'))} at its end (per run in the JSON)",
              ""]
    best_others = [r["other_processes_cores_best_run"] or 0.0 for r in res]
    all_others = [x for r in res for x in r["other_processes_cores_all"] if x is not None]
    if best_others and max(best_others) > 0.2:
        lines += [f"**Warning:** other processes used up to {max(best_others):.2f} of the "
                  f"{m['cpu_cores_usable']} cores during reported (best) runs (column 'others, cores'); "
                  "those wall times are inflated, and not alike for all entries (they use the second core "
                  "to different degrees), so the ratios are not reliable either. Rerun on a quiet machine.", ""]
    elif all_others and max(all_others) > 0.2:
        lines += [f"Note: other processes used up to {max(all_others):.2f} cores during some timed runs, "
                  "but not during any reported (best) run (at most "
                  f"{max(best_others):.2f} cores); see 'others, cores'.", ""]
    lines += ["## Method", "",
              f"Timing: one warm-up (compile) call, then best of {doc['settings']['repeats']} timed runs "
              "(see 'all runs s'; secondary entries may be timed once). "
              "sgi-run is timed as its engine (`Simulator.run_shard` over every shard, moments merged; "
              "no HDF5). diffrax is `jit(vmap(diffeqsolve))` with `MultiTerm(ODETerm, ControlTerm)`, "
              "`Heun()`, `ConstantStepSize` dt0 = dt, `SaveAt(t1=True)`, `ForwardMode` adjoint; "
              "results `block_until_ready`. path-steps/s = paths x steps / run s. "
              "compile s = first-call wall time minus the run time of the same work. "
              "'process CPU' is this process's CPU time (all its threads); 'others, cores' is the "
              "CPU used by other processes during the run, in cores (from /proc/stat).", ""]
    for wl in doc["workloads"]:
        lines += _workload_markdown(doc, wl)
    lines += [f"Total benchmark wall time: {doc['total_s']:.0f} s.", ""]
    return "\n".join(lines)


# ------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", nargs="+", choices=[*WORKLOADS, "all"], default=["all"],
                    help="workloads to run (default: all)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per entry after the warm-up (best is kept)")
    ap.add_argument("--paths", type=int, default=100_000, help="paths (the reported benchmark uses 10^5)")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps for every workload (default: kubo 1000, van_der_pol 100, the Langevin ones 200; smaller for a smoke run)")
    ap.add_argument("--vbt-paths", type=int, default=2_000,
                    help="paths for the diffrax VirtualBrownianTree entry (0 to skip)")
    ap.add_argument("--only", nargs="*", default=None, help="entry ids to run (default: all)")
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench")
    ap.add_argument("--render-only", action="store_true",
                    help="rewrite throughput.md from an existing throughput.json in --out; measure nothing")
    args = ap.parse_args(argv)
    if "all" in args.workload:
        args.workload = list(WORKLOADS)
    if args.render_only:
        doc = json.loads((args.out / "throughput.json").read_text())
        (args.out / "throughput.md").write_text(markdown(doc))
        print(markdown(doc))
        return 0

    log = lambda msg: print(msg, file=sys.stderr, flush=True)
    start = time.perf_counter()
    clock = _CompileClock()
    entries = build_entries(args)
    if args.only:
        entries = [e for e in entries if e.id in args.only]
    load_start = _load1()
    results = measure_all(entries, args.repeats, clock, log)
    workloads = []
    for name in args.workload:
        mine = [r for r in results if r["system"] == name]
        if not mine:
            continue
        # The workload as configured: the first entry's (a secondary entry may use fewer paths).
        w = next(e.workload for e in entries if e.workload.system == name)
        workloads.append({"system": name, "params": w.params, "paths": w.paths, "steps": w.steps, "dt": w.dt,
                          "T": w.T, "sde": w.sde, "description": w.describe(),
                          "summary": summarize(mine, w.make_system().reference_mean(w.observable))})
    doc = {
        "schema": SCHEMA,
        "machine": machine(),
        "settings": {"workloads": args.workload, "repeats": args.repeats, "paths": args.paths,
                     "steps": args.steps, "vbt_paths": args.vbt_paths},
        "workloads": workloads,
        "results": results,
    }
    doc["total_s"] = time.perf_counter() - start
    doc["machine"]["load1_at_start"] = load_start
    doc["machine"]["load1_at_end"] = _load1()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "throughput.json").write_text(json.dumps(doc, indent=2) + "\n")
    md = markdown(doc)
    (args.out / "throughput.md").write_text(md)
    print(md)
    log(f"wrote {args.out / 'throughput.json'} and {args.out / 'throughput.md'}")
    return 0

if __name__ == "__main__":
    sys.exit(main())
