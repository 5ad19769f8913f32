"""The structure-preserving methods against Kubo Heun, end to end through the CLI (issue 26's table).

Each method is run as a user runs it, ``sgi-run system=... integrator=... plan.paths=P plan.T=10
plan.dt=0.01`` (1000 steps, default configs and shard size, ``cache=off``), at two path counts. The
marginal rate, extra path-steps / extra wall time, cancels start-up and compilation. Kubo Heun is measured
in the same series, and each method's rate is given as a fraction of Heun's. Every number in the report
comes from that one series on this machine.

``--baseline DIR`` also runs another checkout (e.g. ``git worktree add /tmp/base <commit>``) in the same
series. Each command alternates between the two checkouts, so both see the same machine load. Optional
``--profile`` adds, per method, the XLA operations that take a step's time, from ``jax.profiler`` in one
process.

    python benchmarks/implicit_methods.py [--paths 10000 20000] [--baseline /tmp/base] [--profile]

(Kubo Heun and midpoint, which are fast, at 10^4 and 2 x 10^5 paths: ``FAST``.)

Writes ``outputs/bench/implicit_methods.{json,md}`` with the machine named.
"""
from __future__ import annotations

import argparse
import collections
import glob
import gzip
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))

# (label, overrides): default configs (issue 26's table), then each fixed-point method with integrator.iterations
# (untested iterations before the stopping rule's loop) at the most its loop takes on these runs (2000 paths,
# dt = 0.01).
METHODS = (
    ("Kubo heun", ["system=kubo", "integrator=heun"]),
    ("Kubo midpoint", ["system=kubo", "integrator=midpoint"]),
    ("heavy_top lp_midpoint", ["system=heavy_top", "integrator=lp_midpoint"]),
    ("rigid_body isomp", ["system=rigid_body", "integrator=isomp"]),
    ("rigid_body lgvi_cayley", ["system=rigid_body", "integrator=lgvi_cayley"]),
    ("heavy_top tmk", ["system=heavy_top", "integrator=tmk"]),
    ("Kubo srkw2", ["system=kubo", "integrator=srkw2"]),
    ("heavy_top lp_midpoint, iterations=8", ["system=heavy_top", "integrator=lp_midpoint", "integrator.iterations=8"]),
    ("rigid_body isomp, iterations=10", ["system=rigid_body", "integrator=isomp", "integrator.iterations=10"]),
    ("rigid_body lgvi_cayley, iterations=8", ["system=rigid_body", "integrator=lgvi_cayley", "integrator.iterations=8"]),
)
REFERENCE = "Kubo heun"
# Methods fast enough that 10^4 extra paths take well under a second (start-up noise is ~0.1 s): measured
# at 10^4 and 2 x 10^5 paths instead, so the extra work takes seconds.
FAST = {"Kubo heun": 200_000, "Kubo midpoint": 200_000}


def run_once(checkout: Path, overrides: list[str], paths: int, steps: int, scratch: str) -> float:
    """Wall seconds of one ``sgi-run`` process in ``checkout`` (its own sgi_run package)."""
    command = [sys.executable, "-m", "sgi_run.cli", *overrides, f"plan.paths={paths}", "plan.dt=0.01",
               f"plan.T={steps * 0.01:g}", "cache=off", f"output_root={scratch}"]
    env = dict(os.environ, PYTHONPATH=str(checkout))
    started = time.perf_counter()
    done = subprocess.run(command, cwd=checkout, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed in {checkout}:\n{done.stderr[-2000:]}")
    return seconds


def profile(overrides: list[str], paths: int, steps: int, top: int = 8) -> list[dict]:
    """The XLA operations that take a run's time: milliseconds and calls per operation, from a
    ``jax.profiler`` trace of the second of two identical runs (the first compiles)."""
    import jax

    from sgi_run.config import compose_setup
    from sgi_run.runner import run

    with tempfile.TemporaryDirectory() as scratch:
        cfg, setup = compose_setup([*overrides, f"plan.paths={paths}", "plan.dt=0.01", f"plan.T={steps * 0.01:g}",
                                    "cache=off", f"output_root={scratch}"])
        run(cfg, setup=setup)
        with jax.profiler.trace(scratch + "/trace", create_perfetto_trace=True):
            run(cfg, setup=setup)
        [trace] = glob.glob(scratch + "/trace/**/perfetto_trace.json.gz", recursive=True)
        events = json.load(gzip.open(trace))["traceEvents"]
    # XLA's own operations: the compiled program's thunks (fusions, dots, loops, copies), not Python frames.
    total, calls = collections.Counter(), collections.Counter()
    for e in events:
        name = e.get("name", "")
        if e.get("ph") == "X" and not name.startswith(("$", "ThunkExecutor", "np.", "while", "PjitFunction",
                                                           "CommonPjRt")):
            total[name] += e.get("dur", 0)
            calls[name] += 1
    return [{"op": name, "ms": us / 1e3, "calls": calls[name]} for name, us in total.most_common(top)]


def markdown(doc: dict) -> str:
    from throughput_report import machine_line
    lines = ["# Structure-preserving methods against Kubo Heun, end to end through the CLI", "",
             f"{machine_line(doc['machine'])}; {doc['date_utc']}.", "",
             f"Marginal rate: `sgi-run <method> plan.dt=0.01 plan.T={doc['steps'] * 0.01:g}` at {doc['paths'][0]} and "
             f"{doc['paths'][1]} paths ({', '.join(FAST)}: {doc['paths'][0]} and {max(FAST.values())}; default "
             "configs and shards, `cache=off`): the extra path-steps over the extra wall time, so start-up and "
             "compilation cancel. One series; checkouts alternate command by command"
             + (f"; each command run {doc['repeat']} times, the rounds alternating, and the fastest kept" if doc.get("repeat", 1) > 1 else "")
             + ".", ""]
    checkouts = list(doc["checkouts"])
    header = ["method"] + [f"{c}: {what}" for c in checkouts for what in ("path-steps/s", "fraction of Heun")]
    lines += ["| " + " | ".join(header) + " |", "|---|" + "---:|" * (2 * len(checkouts))]
    for label in doc["methods"]:
        cells = [label]
        for c in checkouts:
            r = doc["checkouts"][c][label]
            cells.append(f"{r['marginal_rate'] / 1e6:.2f} M | {r['fraction_of_heun']:.3f}")
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Checkouts: " + "; ".join(f"{c}: {v['commit_text']}" for c, v in doc["versions"].items()) + "."]
    if doc.get("profiles"):
        lines += ["", "## Where a run's time goes (this checkout, jax.profiler, XLA operations)", ""]
        for label, ops in doc["profiles"].items():
            lines.append(f"- {label}: " + ", ".join(f"{o['op']} {o['ms']:.0f} ms ({o['calls']} calls)" for o in ops))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, nargs=2, default=[10_000, 20_000])
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--methods", nargs="+", default=[m[0] for m in METHODS], help="labels of METHODS")
    ap.add_argument("--baseline", type=Path, help="another checkout measured in the same series")
    ap.add_argument("--repeat", type=int, default=1,
                    help="run each command this many times (the rounds alternate) and keep the fastest")
    ap.add_argument("--profile", action="store_true", help="also profile each method in this process (this checkout)")
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench")
    args = ap.parse_args(argv)
    from sgi_run.core import jax_setup
    jax_setup.configure()   # float64 before JAX makes an array
    from throughput_report import machine, write_report

    if REFERENCE not in args.methods:
        args.methods.insert(0, REFERENCE)
    checkouts = {"this": ROOT} | ({"baseline": args.baseline.resolve()} if args.baseline else {})
    # Each checkout's commit from git in that checkout, which its runs import (PYTHONPATH): not from the package
    # this process imported, which may be another checkout's editable install.
    heads = {name: subprocess.run(["git", "rev-parse", "HEAD"], cwd=path, capture_output=True, text=True).stdout.strip()
             for name, path in checkouts.items()}
    versions = {name: {"path": str(path), "commit_text": f"sgi-run commit {heads[name][:12] or 'unknown'} ({path})"}
                for name, path in checkouts.items()}
    overrides = dict(METHODS)
    times = {name: {label: {} for label in args.methods} for name in checkouts}
    sizes = {label: (args.paths[0], FAST.get(label, args.paths[1])) for label in args.methods}
    with tempfile.TemporaryDirectory() as scratch:
        # The fastest of the repeats: what the machine's other load and start-up jitter add is never negative.
        for _ in range(args.repeat):
            for label in args.methods:
                for paths in sizes[label]:
                    for name, path in checkouts.items():       # alternate: both checkouts see the same load
                        seconds = run_once(path, overrides[label], paths, args.steps, scratch)
                        times[name][label][paths] = min(seconds, times[name][label].get(paths, math.inf))
                        print(f"{name:8s} {label:24s} {paths:>7d} paths: {seconds:7.2f} s", flush=True)
    results = {}
    for name in checkouts:
        results[name] = {}
        for label in args.methods:
            t, (small, large) = times[name][label], sizes[label]
            extra = (large - small) * args.steps
            results[name][label] = {"paths": [small, large], "seconds": t,
                                    "marginal_rate": extra / max(t[large] - t[small], 1e-9)}
        heun = results[name][REFERENCE]["marginal_rate"]
        for r in results[name].values():
            r["fraction_of_heun"] = r["marginal_rate"] / heun
    doc = {"machine": machine(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "paths": args.paths, "steps": args.steps, "repeat": args.repeat, "methods": args.methods, "versions": versions,
           "checkouts": {n: {label: {**r, "seconds": {str(k): v for k, v in r["seconds"].items()}}
                             for label, r in results[n].items()} for n in checkouts}}
    if args.profile:
        doc["profiles"] = {label: profile(overrides[label], args.paths[0], 100) for label in args.methods}
    write_report(args.out, "implicit_methods", doc, markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
