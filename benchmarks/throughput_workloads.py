"""Throughput benchmark, the workloads: the SDE problems (``WORKLOADS``) and the entries timed on them,
sgi-run's engine (``sgi_entry``, ``sgi_entries``) and diffrax peers (``diffrax_entry``); ``build_entries``
lists them for the command line of ``throughput.py``."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from collections.abc import Callable

import numpy as np
import yaml

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree

from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.integrators import make_integrator
from sgi_run.systems import SYSTEMS

from sgi_run.core import jax_setup

jax_setup.configure()   # float64 before any array is made

ROOT = Path(__file__).resolve().parents[1]
CONF = ROOT / "conf"


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
    # Observables conserved by the SDE (Casimirs): each entry reports its largest change over paths at T,
    # max |g(z_T) - g(z_0)|, from every path's final state.
    conserved: tuple[str, ...] = ()

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
    # The solver's iterations (Newton, chord, fixed-point, SHAKE), summed over paths and steps; the name
    # is historical (the JSON keys keep it).
    newton_iterations: int | None = None
    newton_max: int | None = None          # most any path took in one step
    unconverged_steps: int | None = None   # steps whose solve failed (on_fail: count keeps the iterate)
    # Workload.conserved: name -> max over finite paths of |g(z_T) - g(z_0)| (NaN if no path is finite)
    max_change: dict[str, float] | None = None


def _max_abs(values: np.ndarray) -> list[float]:
    """Per column: the largest |value| over the finite rows (NaN where none is finite)."""
    values = np.abs(np.asarray(values, dtype=np.float64).reshape(len(values), -1))
    finite = np.isfinite(values)
    return [float(values[finite[:, j], j].max()) if finite[:, j].any() else math.nan for j in range(values.shape[1])]


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
    solver: str = ""          # an implicit sgi-run method's solver (newton, chord, fixed_point), as configured


# ------------------------------------------------------------------------------------------------
# sgi-run entries
# ------------------------------------------------------------------------------------------------
def _integrator_cfg(name: str) -> dict:
    with open(CONF / "integrator" / f"{name}.yaml") as fh:
        return yaml.safe_load(fh)


def sgi_entry(w: Workload, integrator: str, shards: int | str = "auto", shard_size: int = 10000,
              options: dict | None = None, max_repeats: int | None = None) -> Entry:
    """``options``: integrator keys to change (e.g. ``{"shake": "newton"}``); they name the entry.

    ``w.conserved``: the plan also observes ``<name>_change`` (g(z) - g(z_0) on each path) with a
    per-path "time average" over the single output time T, so the engine hands back every path's
    change at T (``ShardResult.time_averages``) and the largest |change| is taken over all paths."""
    options = options or {}
    variant = "".join(f"-{v}" for v in options.values())
    changes = tuple(f"{name}_change" for name in w.conserved)
    plan = Plan(paths=w.paths, dt=w.dt, T=w.T, output_dt=w.T, observables=(w.observable, *changes),
                keep_paths=0, seed=0, shards=shards, shard_size=shard_size,
                time_average=(w.T, w.T) if changes else None)
    setting = (f"shard_size={plan.paths_per_shard} ({plan.shard_count} shards)" if plan.shard_count > 1
               else f"one shard of {plan.paths_per_shard} paths")

    cfg = {**_integrator_cfg(integrator), **options}

    def prepare() -> Prepared:
        sim = Simulator(w.make_system(), make_integrator(cfg), plan)

        def run() -> Stats:
            total, newton, newton_max, unconverged, largest = None, 0, 0, 0, None
            for shard in range(plan.shard_count):
                r = sim.run_shard(shard)     # returns host numpy: the device work is finished
                total = r.moments if total is None else total.merge(r.moments)
                newton, newton_max = newton + int(r.solver.iterations.sum()), max(newton_max, int(r.solver.max_iterations.max()))
                unconverged += int(r.solver.unconverged_steps.sum())
                if changes:     # every path's change at T: (paths of the shard, 1 + len(changes))
                    here = _max_abs(r.time_averages[:, 1:])
                    largest = here if largest is None else [float(np.fmax(a, b)) for a, b in zip(largest, here)]
            return Stats(float(total.mean[-1, 0]), float(total.sem[-1, 0]), int(total.count[-1, 0]),
                         newton, newton_max, unconverged,
                         dict(zip(w.conserved, largest)) if changes else None)

        # Every shard has the same padded shape, so shard 0 alone compiles everything.
        return Prepared(warmup=lambda: sim.run_shard(0), run=run, warmup_fraction=1.0 / plan.shard_count)

    return Entry(id=f"{w.id_prefix}sgi-{integrator}{variant}-{'auto' if shards == 'auto' else f'{shards}shard'}",
                 group=f"sgi-run {integrator}{variant}", method=f"sgi-run {integrator}"
                 + "".join(f" ({k}={v})" for k, v in options.items()), engine="sgi-run",
                 setting=setting, workload=w, prepare=prepare,
                 note="engine only: Simulator.run_shard over all shards, moments merged",
                 max_repeats=max_repeats, solver=str(cfg.get("solver") or ""))


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


def _flat_state(system):
    """(the initial state as one float vector, the function back to the system's state pytree):
    diffrax steps the flat vector (``ravel_pytree``; a no-op for a vector state)."""
    return ravel_pytree(system.initial_state(jax.random.key(0)))


def _generic_fields(system):
    """sgi-run's own fields (autodiff of the Hamiltonians), for systems without hand-written ones, on
    the flattened state. Drift: ``system.drift`` on the state, or, for a Lie-Poisson system (whose
    drift acts on the algebra's dual form), ``state(drift(dual(z)))``. Diffusion, (d, noises): the
    system's ``noise_fields`` where it has them, else ``noise_action(z, e_i)`` for each unit
    increment e_i (the action is linear in the increments)."""
    _, unravel = _flat_state(system)
    ravel = lambda z: ravel_pytree(z)[0]
    if hasattr(system, "dual"):
        state_drift = lambda z: system.state(system.drift(system.dual(z)))
    else:
        state_drift = system.drift
    drift = lambda t, y, args: ravel(state_drift(unravel(y)))
    if hasattr(system, "noise_fields"):
        diffusion = lambda t, y, args: system.noise_fields(unravel(y)).T
    else:
        units = jnp.eye(system.noises)
        diffusion = lambda t, y, args: jax.vmap(lambda e: ravel(system.noise_action(unravel(y), e)),
                                                out_axes=1)(units)
    return drift, diffusion


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
        y0, unravel = _flat_state(system)
        ref_drift, ref_diffusion = _generic_fields(system)
        pts = jax.random.normal(jax.random.key(7), (5, y0.size))
        for z in pts:
            assert np.allclose(drift(0.0, z, None), ref_drift(0.0, z, None), rtol=1e-13, atol=1e-13)
            assert np.allclose(diffusion(0.0, z, None), ref_diffusion(0.0, z, None), rtol=1e-13, atol=1e-13)
        m = system.noises
        named = system.observables()
        observe = lambda y: named[w.observable](unravel(y))
        # Changes of the conserved observables since t = 0 (every path starts at y0).
        change = lambda y: (jnp.stack([named[c](unravel(y)) - named[c](unravel(y0)) for c in w.conserved])
                            if w.conserved else jnp.zeros(0))
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
            return observe(sol.ys[-1]), sol.stats["num_steps"], change(sol.ys[-1])

        batched = jax.jit(jax.vmap(solve))
        # Different random numbers from sgi-run (on purpose): the cross-check compares mean +- SE.
        keys = jax.random.split(jax.random.key(20240601), w.paths)

        def run() -> Stats:
            values, nsteps, changes = jax.block_until_ready(batched(keys))
            values, nsteps = np.asarray(values), np.asarray(nsteps)
            assert np.all(nsteps == steps), f"diffrax took {set(nsteps.tolist())} steps, expected {steps}"
            finite = values[np.isfinite(values)]
            n = finite.size
            largest = dict(zip(w.conserved, _max_abs(np.asarray(changes)))) if w.conserved else None
            return Stats(float(finite.mean()), float(finite.std(ddof=1) / math.sqrt(n)), int(n),
                         max_change=largest)

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
    # Bou-Rabee & Owhadi's (2007) protocols (Fig. 2.1: h = 0.25; Fig. 2.2: h = 0.1) at c = 1, 200 steps: throughput,
    # not the figures (conf/system/*.yaml; experiments/bou_rabee_owhadi/).
    "langevin_double_well": (dict(c=1.0, beta=1.0), 0.25, 200,
                             "Langevin dq = p dt, dp = (q - q³ - c p) dt + sqrt(2c/beta) dW", "dw-"),
    "spherical_pendulum": (dict(c=1.0, beta=1.0), 0.1, 200,
                           "Langevin on |q| = 1 in R^3, U = q3, 3-d ambient noise (SHAKE/RATTLE)", "sph-"),
    "circle_pendulum": (dict(c=1.0, beta=1.0, mass=(1.0, 3.0, 2.0)), 0.05, 200,
                        "Langevin on |q| = 1, q3 = 0 in R^3 (two constraints), U = q2, M = diag(1, 3, 2)", "circ-"),
    # Issue 11 (Speed): the non-integrable top of Luesink et al. (2023) Sec. 5 (I = diag(4, 2, 1), chi = e3,
    # alpha = (0.01, 0.02, 0.03), pi0 = gamma0 = (-1, 1, 0)/sqrt(2): the system's defaults), 10^3 steps.
    "heavy_top": (dict(inertia=(4.0, 2.0, 1.0), alpha=(0.01, 0.02, 0.03)), 0.01, 1000,
                  "Stratonovich SDE (Luesink et al. 2023 eq. 39) dpi = (pi x omega + chi x gamma) dt + pi x alpha∘dW, "
                  "dgamma = gamma x omega dt + gamma x alpha∘dW, omega = I^-1 pi, chi = e3", "top-"),
    # Issue 12 (Speed): Ephrati et al.'s (2024) stochastic rigid body (I = diag(2, 1, 2/3), noise 0.1 x_i^2 on each axis,
    # x0 = (sin 1.1, 0, cos 1.1): the system's defaults) at the paper's h = 2^-8, 10^3 steps.
    "rigid_body": (dict(), 2.0**-8, 1000,
                   "Stratonovich SDE (Ephrati et al. 2024 section 6.1) dx = x x I^-1 x dt - 0.1 sum_i x_i (e_i x x)∘dW^i", "rb-"),
}
# Observables conserved by a workload's SDE (Casimirs): their largest change over paths at T is reported.
CONSERVED = {"heavy_top": ("C1", "C2"), "rigid_body": ("C2",)}
# Every integrator in conf/integrator/: implicit (Newton) LDA methods, explicit strong, then weak.
VDP_INTEGRATORS = ("midpoint", "stormer_verlet", "dirk", "heun", "r2", "e1", "srkw1", "srkw2", "rs1", "rs2")


def make_workload(name: str, paths: int, steps: int | None = None) -> Workload:
    """The workload ``name`` of ``WORKLOADS`` at ``paths`` paths and ``steps`` steps (None: its default)."""
    params, dt, default_steps, sde, prefix = WORKLOADS[name]
    return Workload(name, params, paths, dt, (steps or default_steps) * dt, sde, prefix,
                    conserved=CONSERVED.get(name, ()))


def build_entries(args) -> list[Entry]:
    entries = []
    if "kubo" in args.workload:
        kubo = make_workload("kubo", args.paths, args.steps)
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
        vdp = make_workload("van_der_pol", args.paths, args.steps)
        entries += [diffrax_entry(vdp, "unsafe", reference=True), *(sgi_entry(vdp, i) for i in VDP_INTEGRATORS)]
    if "langevin_double_well" in args.workload:
        # diffrax Heun solves the same SDE (the system is also canonical: additive noise).
        well = make_workload("langevin_double_well", args.paths, args.steps)
        entries += [diffrax_entry(well, "unsafe", reference=True), *(sgi_entry(well, i) for i in ("svia", "svib", "svic"))]
    if "spherical_pendulum" in args.workload:
        # No diffrax peer (no constrained solver there): the closed-form CSVIA is the reference.
        sphere = make_workload("spherical_pendulum", args.paths, args.steps)
        entries += [dataclasses.replace(sgi_entry(sphere, "csvia"), reference=True),
                    sgi_entry(sphere, "csvia", options={"shake": "newton"}),
                    *(sgi_entry(sphere, i) for i in ("csvib", "csvic"))]
    if "circle_pendulum" in args.workload:
        circle = make_workload("circle_pendulum", args.paths, args.steps)
        entries += [sgi_entry(circle, i) for i in ("csvia", "csvib", "csvic")]
    if "heavy_top" in args.workload:
        # 10^8 path-steps per entry (TMK ~130 s a run on the 2-core development machine): the sgi-run
        # methods in the default layout only, timed once each (their warm-up is shard 0 alone).
        # diffrax Heun (~6 s a run) keeps --repeats: the reference, less exposed to a passing load.
        # TMK as configured (chord, the paper's solver) and with the fixed-point solve of the same
        # equation (same tolerance; every iterate stays on the coadjoint orbit either way).
        top = make_workload("heavy_top", args.paths, args.steps)
        entries += [diffrax_entry(top, "unsafe", reference=True),
                    sgi_entry(top, "tmk", max_repeats=1),
                    sgi_entry(top, "tmk", options={"solver": "fixed_point"}, max_repeats=1),
                    *(sgi_entry(top, i, max_repeats=1) for i in ("lp_midpoint", "lp_trapezoidal", "lgvi_cayley"))]
    if "rigid_body" in args.workload:
        # IsoMP and the Cayley LGVI against Luesink et al.'s (2023) methods on the same system, and diffrax Heun on its
        # vector SDE.
        body = make_workload("rigid_body", args.paths, args.steps)
        entries += [diffrax_entry(body, "unsafe", reference=True),
                    *(sgi_entry(body, i, max_repeats=1) for i in ("isomp", "lgvi_cayley", "tmk", "lp_midpoint"))]
    return entries
