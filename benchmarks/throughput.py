"""Throughput benchmark: path-steps per second of sgi-run's engine against diffrax, same machine, same run.

Run with ``make bench`` (or ``.venv/bin/python benchmarks/throughput.py``). Writes
``outputs/bench/throughput.json`` and ``outputs/bench/throughput.md``. Workloads (``--workload``, default
all, one markdown table each, 10^5 paths): ``kubo`` (sgi-run heun and midpoint against diffrax Heun),
``van_der_pol`` (every canonical integrator in conf/integrator/ against diffrax Heun),
``langevin_double_well`` (SVIA/B/C against diffrax Heun), ``spherical_pendulum`` (CSVIA/B/C; CSVIA's
SHAKE in closed form and by Newton), ``circle_pendulum`` (CSVIA/B/C, Newton SHAKE for two
constraints) and ``heavy_top`` (Luesink et al.'s (2023) stochastic heavy top, I = diag(4, 2, 1): TMK and IM/TRAP
applied directly against diffrax Heun on eq. 39, 10^3 steps, one timed run each, with each method's
largest Casimir drift at T).

What is measured
----------------
* sgi-run: the ensemble engine itself, ``sgi_run.engine.simulate.Simulator.run_shard`` called for
  every shard of the plan, with the shard moments merged (no HDF5, no config composition). The
  engine's statistics are reduced on the device and fetched with ``device_get``, so each call has
  finished when it returns. Solver iterations per path-step (Newton, chord or fixed-point, as the
  integrator's config says; mean, and the most in one step of any path) come from the engine's counters.
  A workload with conserved observables (``CONSERVED``: the heavy top's Casimirs) also observes their
  change since t = 0 per path at T (the plan's per-path ``time_average`` over the one output time T),
  and reports the largest |change| over all paths.
* diffrax: ``jax.jit(jax.vmap(solve))`` over per-path keys, where ``solve`` is one
  ``diffrax.diffeqsolve`` of ``MultiTerm(ODETerm(drift), ControlTerm(diffusion, brownian))`` with
  ``diffrax.Heun()`` (converges to the Stratonovich solution), a constant step ``dt0 = dt``, and
  ``SaveAt(t1=True)``; the result is ``block_until_ready``-ed. A state pytree (the heavy top's
  ``{pi, gamma}``) is stepped as one flat vector (``ravel_pytree``).

Each entry is run once to compile (the warm-up); then all entries are timed round-robin,
``--repeats`` rounds, and the best repeat is the reported run time. The runs use every core, so
other load distorts them; the CPU used by other processes during each run is recorded (from
/proc/stat) and the markdown warns when it exceeds 0.2 cores. "compile s" is the first call's wall time minus the run time of the same amount
of work (for the sharded engine the warm-up is shard 0 alone, so the best run's per-shard share is
subtracted). The XLA backend-compile time seen by ``jax.monitoring`` is stored in the JSON as a
cross-check.

Adding a benchmark
------------------
``build_entries()`` (in ``throughput_workloads.py``) returns a list of ``Entry`` objects: one per (engine, method, setting). Use
``sgi_entries(workload, "<integrator yaml name>")`` for sgi-run integrators (it adds one entry per
shard layout; the faster one is reported), ``sgi_entry`` for the default layout alone, and
``diffrax_entry(...)`` for diffrax peers. A new system needs a line in ``WORKLOADS`` and, for a
diffrax peer, nothing else (the generic vector fields come from the sgi-run system; hand-written
ones can be registered in ``DIFFRAX_FIELDS``). Conserved observables to watch go in ``CONSERVED``;
``Entry.max_repeats`` caps the timed runs of an expensive entry.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

# The sibling modules by plain name: already on the path when run as a script, not when imported.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput_report import SCHEMA, machine, markdown, summarize
from throughput_timing import _CompileClock, _load1, measure_all
from throughput_workloads import ROOT, WORKLOADS, build_entries


# ------------------------------------------------------------------------------------------------
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", nargs="+", choices=[*WORKLOADS, "all"], default=["all"],
                    help="workloads to run (default: all)")
    ap.add_argument("--repeats", type=int, default=3, help="timed runs per entry after the warm-up (best is kept)")
    ap.add_argument("--paths", type=int, default=100_000, help="paths (the reported benchmark uses 10^5)")
    ap.add_argument("--steps", type=int, default=None,
                    help="steps for every workload (default: kubo 1000, van_der_pol 100, the Langevin ones 200, "
                         "heavy_top 1000; smaller for a smoke run)")
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
