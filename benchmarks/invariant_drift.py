"""What recording the invariants' drift costs an ensemble run: each workload's system (one that declares
invariants) run by the engine as is, against the same system declaring none (a subclass whose ``invariants()``
is empty: same steps, same statistics, no running sup), in alternating rounds after both are compiled, in this
process. The report is each one's median wall and CPU (the process's, every thread) time per round, their ratios
and the machine: on a shared machine the CPU time is the less disturbed by other work.

Workloads: the heavy top's TMK (the headline ``sgi-run system=heavy_top integrator=tmk``'s step and paths, C1 and
C2 after every step), undamped Kubo Heun (an explicit step of a few flops, H after every step: the largest share
the drift can take), Euler-Zeitlin IsoMP (C2 = tr(X^2) of an N x N state after every step).

    python benchmarks/invariant_drift.py [--rounds 5] [--only heavy_top_tmk] [--out outputs/bench]
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import sgi_run.core  # noqa: E402,F401  (float64 first)

from sgi_run.config import compose_setup  # noqa: E402
from sgi_run.engine.ensemble import run_shards  # noqa: E402
from sgi_run.engine.simulate import Simulator  # noqa: E402

WORKLOADS = {
    "heavy_top_tmk": ["system=heavy_top", "integrator=tmk", "plan.paths=10000", "plan.dt=0.1", "plan.T=10"],
    "kubo_nu0_heun": ["system=kubo", "system.nu=0", "integrator=heun", "plan.paths=10000", "plan.dt=0.01",
                      "plan.T=10"],
    "zeitlin_n32_isomp": ["system=zeitlin_euler", "system.N=32", "integrator=isomp", "plan.paths=8", "plan.dt=0.01",
                          "plan.T=1", "plan.output_dt=0.5"],
}


def without_invariants(system):
    """The same system declaring no invariant: an instance of a subclass, so that the engine's programs (shared
    per system) are its own."""
    cls = type(f"{type(system).__name__}WithoutInvariants", (type(system),), {"invariants": lambda self: ()})
    copy = object.__new__(cls)
    copy.__dict__.update(system.__dict__)
    return copy


def measure(overrides: list[str], rounds: int) -> dict:
    _, setup = compose_setup(overrides + ["plan.shards=1", "plan.keep_paths=0"])
    sims = {"with": Simulator(setup.system, setup.integrator, setup.plan),
            "without": Simulator(without_invariants(setup.system), setup.integrator, setup.plan)}
    assert sims["with"].invariant_names and not sims["without"].invariant_names

    def timed(sim):
        wall, cpu = time.perf_counter(), time.process_time()
        result = run_shards(sim, None)
        return {"wall": time.perf_counter() - wall, "cpu": time.process_time() - cpu}, result

    results = {mode: timed(sim)[1] for mode, sim in sims.items()}    # compile both
    assert (results["with"].moments.mean == results["without"].moments.mean).all()   # the same numbers
    times = {mode: {"wall": [], "cpu": []} for mode in sims}
    for _ in range(rounds):                  # alternating, so that load changes hit both alike
        for mode, sim in sims.items():
            for clock, seconds in timed(sim)[0].items():
                times[mode][clock].append(seconds)
    median = {mode: {clock: statistics.median(t) for clock, t in clocks.items()} for mode, clocks in times.items()}
    plan = setup.plan
    return {"overrides": overrides, "path_steps": plan.paths * plan.steps, "invariants": list(sims["with"].invariant_names),
            "largest_drift": [float(x) for x in results["with"].invariant_drift[-1]], "seconds": times,
            "median_s": median, "ratio": {clock: median["with"][clock] / median["without"][clock] for clock in ("wall", "cpu")},
            "cpu_ratios_by_round": [a / b for a, b in zip(times["with"]["cpu"], times["without"]["cpu"])]}


def cpu_name() -> str:
    """The processor's model name (Linux), else what ``platform`` knows."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--only", choices=list(WORKLOADS), action="append")
    parser.add_argument("--out", default=str(ROOT / "outputs" / "bench"))
    args = parser.parse_args(argv)
    machine = f"{cpu_name()}, {len(os.sched_getaffinity(0))} cores"
    doc = {"machine": machine, "rounds": args.rounds, "workloads": {}}
    lines = ["| workload | invariants | path-steps | wall with / without (s) | ratio | CPU with / without (s) | ratio "
             "| CPU ratio by round |", "|---|---|---|---|---|---|---|---|"]
    for name in args.only or WORKLOADS:
        r = measure(WORKLOADS[name], args.rounds)
        doc["workloads"][name] = r
        pair = lambda clock: f"{r['median_s']['with'][clock]:.3f} / {r['median_s']['without'][clock]:.3f}"
        lines.append(f"| {name} | {', '.join(r['invariants'])} | {r['path_steps']:.3g} | {pair('wall')} | "
                     f"{r['ratio']['wall']:.3f} | {pair('cpu')} | {r['ratio']['cpu']:.3f} | "
                     f"{', '.join(f'{x:.2f}' for x in r['cpu_ratios_by_round'])} |")
        print(lines[-1], flush=True)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "invariant_drift.json").write_text(json.dumps(doc, indent=1))
    (out / "invariant_drift.md").write_text(f"# The invariants' drift: its cost ({machine}; median of {args.rounds} "
                                            f"alternating rounds, compiled first)\n\n" + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
