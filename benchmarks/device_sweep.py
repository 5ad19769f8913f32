"""Path-steps per second against paths (10^3 .. 10^7) on this JAX device, beside the generator bound.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/device_sweep.py``); on a GPU machine the
same command measures the GPU (``pip install -e ".[cuda]"``; ``JAX_PLATFORMS=cpu`` forces the CPU).
Writes ``outputs/bench/device_sweep-<platform>.json`` and ``.md``, and redraws
``outputs/bench/device_sweep.png`` from every ``device_sweep-*.json`` there and in
``benchmarks/results/*/`` (a GPU's, kept from a machine that had one): CPU and GPU side by side.

The generator bound. A method draws ``normals per path-step`` standard normals (one for a one-noise
Gaussian method, two for E1's (dW, dZ) pair), so its rate can never beat the device's normal rate
divided by that. Three rates are measured in float64:

* ``jax bulk``: ``jax.random.normal(key, (n,))``, threefry, one call: the device's own rate;
* ``jax addressed``: one normal per (path, step), each from ``fold_in(path key, step)``, the
  addressing every sgi-run draw uses (``core.noise``: shard-invariant numbers), n = paths x steps;
* ``numpy PCG64``: ``Generator(PCG64).standard_normal(n)`` on one core (CPU only).

Each method's *fraction of the bound* is its path-steps/s x normals per path-step / the ``jax bulk``
rate. Methods: Kubo Heun, midpoint and E1, diffrax Heun (the peer) on the same problem, van der
Pol DIRK, the double-well SVIA, the heavy top's TMK and IM, the rigid body's Cayley LGVI and IsoMP, Kubo
SRKw2 (multiplicative noise: one coupled Newton solve); each is
the engine (``Simulator.run_shard``, one shard of all the paths, statistics merged on the host), as
in ``throughput.py``. The steps per run are ``--work / paths``, within ``[--min-steps, --max-steps]``.
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import itertools
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput_report import commit_text, machine
from throughput_timing import _CompileClock, result, time_once, warm_up
from throughput_workloads import ROOT, Workload, _integrator_cfg, diffrax_entry, make_workload, sgi_entry

import jax
import jax.numpy as jnp

from sgi_run.core import noise
from sgi_run.engine import device
from sgi_run.integrators import make_integrator

# (label, workload, integrator: a conf/integrator name, or "diffrax-heun" for the peer)
METHODS = (
    ("Kubo Heun", "kubo", "heun"),
    ("Kubo diffrax Heun", "kubo", "diffrax-heun"),
    ("Kubo midpoint", "kubo", "midpoint"),
    ("van der Pol DIRK", "van_der_pol", "dirk"),
    ("double-well SVIA", "langevin_double_well", "svia"),
    ("heavy top TMK", "heavy_top", "tmk"),
    ("heavy top IM", "heavy_top", "lp_midpoint"),
    ("rigid body Cayley LGVI", "rigid_body", "lgvi_cayley"),
    ("rigid body IsoMP", "rigid_body", "isomp"),
    ("Kubo SRKw2", "kubo", "srkw2"),
    ("Kubo E1", "kubo", "e1"),
)
SCHEMA = "sgi-run/bench/device_sweep/1"
RESULTS = Path(__file__).resolve().parent / "results"


def best_time(run, repeats: int) -> float:
    run()                                   # compile
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def generator_rates(n: int, repeats: int, paths: int) -> dict:
    """Normals per second: the device's bulk threefry, the addressed draw, numpy's PCG64 on one core."""
    key = jax.random.key(0)
    bulk = jax.jit(lambda k: jax.random.normal(k, (n,)).sum())
    rates = {"jax_bulk": n / best_time(lambda: bulk(key).block_until_ready(), repeats)}
    steps = max(1, n // paths)
    keys = jax.vmap(noise.noise_key)(noise.path_keys(0, 0, paths))
    addressed = jax.jit(lambda keys: jax.vmap(lambda s: jax.vmap(
        lambda k: noise.increments("gaussian", k, s, 0.01, 1))(keys).sum())(jnp.arange(steps)).sum())
    rates["jax_addressed"] = paths * steps / best_time(lambda: addressed(keys).block_until_ready(), repeats)
    if not device.on_accelerator():
        rng = np.random.Generator(np.random.PCG64(0))
        m = min(n, 2**24)
        rates["numpy_pcg64_one_core"] = m / best_time(lambda: rng.standard_normal(m), repeats)
    return rates


def normals_per_path_step(w: Workload, method: str) -> int:
    """Standard normals one path-step draws: rows of the noise kind (2 for a (dW, dZ) pair) x noises."""
    kind = "gaussian" if method == "diffrax-heun" else make_integrator(_integrator_cfg(method)).noise_kind
    return noise.NOISE_KINDS[kind] * w.make_system().noises


def measure(label, workload, method, paths, steps, repeats, bound, clock, log) -> dict:
    """One method at one size, by throughput.py's harness (warm-up, best of ``repeats``, the CPU other
    processes used), with its normals per path-step and fraction of the generator bound."""
    # Throughput alone: no per-path Casimir changes (throughput.py's heavy-top entries report those).
    w = dataclasses.replace(make_workload(workload, paths, steps), conserved=())
    entry = diffrax_entry(w, "unsafe") if method == "diffrax-heun" else sgi_entry(w, method, shards=1)
    tm = warm_up(entry, clock, log)
    for _ in range(repeats):
        time_once(tm, log)
    r = result(tm)
    normals = normals_per_path_step(w, method)
    return r | {"method": label, "workload": workload, "integrator": method, "normals_per_path_step": normals,
                "fraction_of_bound": r["path_steps_per_s"] * normals / bound}


def heun_parts(paths: int, steps: int, repeats: int) -> dict:
    """Kubo Heun's path-step taken apart, in the engine's own loop (one shard, ``Simulator``): as is;
    with its random numbers replaced by zeros (the step and the loop alone); and its random numbers
    with a trivial step (z + dW: the addressed draw and the loop alone)."""
    from sgi_run.engine.plan import Plan
    from sgi_run.engine.simulate import Simulator
    from sgi_run.integrators.base import SolverStats

    w = make_workload("kubo", paths, steps)
    plan = Plan(paths=paths, dt=w.dt, T=w.T, output_dt=w.T, keep_paths=0, shards=1)
    heun = make_integrator(_integrator_cfg("heun"))
    trivial = copy.copy(heun)
    object.__setattr__(trivial, "advance", lambda system, z, dt, xi: (z + xi[0, 0], SolverStats.none()))
    no_rng = Simulator(w.make_system(), heun, plan)
    no_rng._draws = lambda keys, first, length, dt, bound: jnp.zeros((length, 1, 1, paths))   # a block of zeros (paths last)
    sims = {"engine": Simulator(w.make_system(), heun, plan), "no random numbers": no_rng,
            "random numbers, trivial step": Simulator(w.make_system(), trivial, plan)}
    return {name: paths * steps / best_time(lambda sim=sim: sim.run_shard(0), repeats) for name, sim in sims.items()}


def markdown(doc: dict) -> str:
    m = doc["machine"]
    g = doc["generator"]
    lines = [f"# Path-steps/s against paths on {doc['device']}", "",
             f"Machine: {m['cpu_model']} ({m['cpu_cores_usable']} usable cores, {m['memory_gib']} GiB), "
             f"jax {m['jax']} ({m['jax_backend']}), {m['date_utc']}; {commit_text(m)}.", "",
             "## Generator bound (float64 standard normals per second)", "",
             "| generator | normals/s |", "|---|---:|"]
    lines += [f"| {name} | {rate / 1e6:,.1f} M |" for name, rate in g.items()]
    if doc.get("heun_parts"):
        p = doc["heun_parts"]
        lines += ["", f"Kubo Heun taken apart ({p['paths']:.0e} paths x {p['steps']} steps, path-steps/s):", "",
                  "| part | path-steps/s |", "|---|---:|"]
        lines += [f"| {name} | {rate / 1e6:,.1f} M |" for name, rate in p["rates"].items()]
    lines += ["", "Fraction of the bound = path-steps/s x normals per path-step / jax bulk.", "",
              "## Methods", "", "| method | paths | steps | path-steps/s | fraction of bound | compile s | E(H)(T) ± SE |",
              "|---|---:|---:|---:|---:|---:|---|"]
    for r in doc["results"]:
        lines.append(f"| {r['method']} | {r['paths']:.0e} | {r['steps']} | {r['path_steps_per_s'] / 1e6:,.1f} M | "
                     f"{r['fraction_of_bound']:.2f} | {r['compile_s']:.1f} | {r['mean_T']:.5g} ± {r['se_T']:.2g} |")
    return "\n".join(lines) + "\n"


def plot(out: Path) -> Path | None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    # This machine's sweeps, and those kept from machines it is not (benchmarks/results/: a GPU's).
    found = sorted(out.glob("device_sweep-*.json")) + sorted(RESULTS.glob("*/device_sweep-*.json"))
    docs = [json.loads(p.read_text()) for p in found]
    if not docs:
        return None
    fig, ax = plt.subplots(figsize=(11, 5.5))
    # One colour per method across devices, one line style per device.
    methods = list(dict.fromkeys(r["method"] for doc in docs for r in doc["results"]))
    colors = {method: plt.cm.tab20.colors[i % 20] for i, method in enumerate(methods)}
    for doc, style in zip(docs, itertools.cycle(("-o", "--s", ":^", "-.v"))):
        for method in dict.fromkeys(r["method"] for r in doc["results"]):
            rows = sorted((r for r in doc["results"] if r["method"] == method), key=lambda r: r["paths"])
            ax.plot([r["paths"] for r in rows], [r["path_steps_per_s"] for r in rows], style, color=colors[method],
                    label=f"{method} ({doc['device']})")
        ax.axhline(doc["generator"]["jax_bulk"], color="k", ls=style[:-1], lw=0.8,
                   label=f"threefry normals/s ({doc['device']})")
    ax.set(xscale="log", yscale="log", xlabel="paths", ylabel="path-steps / s",
           title="sgi-run engine throughput, float64")
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    path = out / "device_sweep.png"
    fig.savefig(path, dpi=120)
    return path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    accel = device.on_accelerator()
    ap.add_argument("--paths", type=int, nargs="+",
                    default=[10**3, 10**4, 10**5, 10**6, 10**7] if accel else [10**3, 10**4, 10**5, 10**6])
    ap.add_argument("--work", type=float, default=5e8 if accel else 1e7, help="path-steps per timed run")
    ap.add_argument("--min-steps", type=int, default=20)
    ap.add_argument("--max-steps", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--methods", nargs="+", default=[m[0] for m in METHODS],
                    help="labels of METHODS (default: all)")
    ap.add_argument("--sweep-methods", nargs="+", default=["Kubo Heun", "Kubo diffrax Heun"],
                    help="methods timed at every --paths; the others at the largest two only")
    ap.add_argument("--plot-only", action="store_true", help="redraw device_sweep.png from the JSON files; measure nothing")
    ap.add_argument("--parts-only", action="store_true", help="measure only Kubo Heun taken apart (heun_parts)")
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench")
    args = ap.parse_args(argv)
    log = lambda msg: print(msg, file=sys.stderr, flush=True)

    if args.plot_only:
        log(f"wrote {plot(args.out)}")
        return 0
    log(f"device: {device.describe()}")
    clock = _CompileClock()
    generator = generator_rates(2**27 if accel else 2**24, args.repeats, min(args.paths[-1], 10**6))
    log(f"generator: {generator}")
    paths = args.paths[-1]
    steps = int(min(args.max_steps, max(args.min_steps, args.work // paths)))
    parts = {"paths": paths, "steps": steps, "rates": heun_parts(paths, steps, args.repeats)}
    log(f"Kubo Heun taken apart: {parts}")
    doc = {"schema": SCHEMA, "device": device.describe(), "platform": device.platform(), "machine": machine(),
           "settings": vars(args) | {"out": str(args.out)}, "generator": generator, "heun_parts": parts,
           "results": []}
    args.out.mkdir(parents=True, exist_ok=True)
    stem = args.out / f"device_sweep-{device.platform()}"
    if args.parts_only:
        stem = args.out / f"device_parts-{device.platform()}"
        args.methods = []
    for label, workload, method in METHODS:
        if label not in args.methods:
            continue
        sizes = args.paths if label in args.sweep_methods else args.paths[-2:]
        for paths in sizes:
            steps = int(min(args.max_steps, max(args.min_steps, args.work // paths)))
            r = measure(label, workload, method, paths, steps, args.repeats, generator["jax_bulk"], clock, log)
            doc["results"].append(r)
            # Written after every measurement: a run stopped part-way keeps what it measured.
            stem.with_suffix(".json").write_text(json.dumps(doc, indent=2) + "\n")
            log(f"{label:24s} {paths:>9d} paths x {steps:5d} steps: {r['path_steps_per_s'] / 1e6:10.1f} M/s "
                f"({r['fraction_of_bound']:.2f} of the bound, compile {r['compile_s']:.1f} s)")
    stem.with_suffix(".md").write_text(markdown(doc))
    print(markdown(doc))
    log(f"wrote {stem}.json, .md and {plot(args.out)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
