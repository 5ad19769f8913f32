"""executor=local's shards at once: each method end to end through the CLI, one shard at a time against
``executor.shards_at_once=auto`` (one per core), in one series on this machine.

Each method runs as a user runs it (``sgi-run <method> plan.paths=P plan.dt=0.01 plan.T=10``, default configs
and shard size, ``cache=off``). Per round: one run of one shard (10^4 paths: start-up and compilation, the
same in both modes) and, alternating, the P-path run in each mode. The marginal rate is the extra path-steps
over the extra wall time; the speed-up is the ratio of the two modes' rates (the lower of the rounds' times
of each run).

    python benchmarks/shards_at_once.py [--paths 50000] [--rounds 2]

Writes ``outputs/bench/shards_at_once.{json,md}`` with the machine named.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from implicit_methods import FAST, METHODS, ROOT, run_once
from throughput_report import machine_line

MODES = {"one at a time": ["executor.shards_at_once=1"], "auto": ["executor.shards_at_once=auto"]}
ONE_SHARD = 10_000


def markdown(doc: dict) -> str:
    lines = ["# executor=local: one shard at a time against shards_at_once=auto", "",
             f"{machine_line(doc['machine'])}; {doc['date_utc']}; {doc['commit_text']}.", "",
             f"`sgi-run <method> plan.dt=0.01 plan.T={doc['steps'] * 0.01:g}` at {ONE_SHARD} paths (one shard) and at "
             f"the paths below (default configs and shards, `cache=off`); marginal rate = extra path-steps / extra "
             f"wall time, the lower of {doc['rounds']} rounds' times; modes alternate run by run.", "",
             "| method | paths | one at a time M/s | auto M/s | speed-up | auto's shards at once |",
             "|---|---:|---:|---:|---:|---|"]
    for label, r in doc["methods"].items():
        rates = r["marginal_rate"]
        lines.append(f"| {label} | {r['paths']} | {rates['one at a time'] / 1e6:.2f} | {rates['auto'] / 1e6:.2f} | "
                     f"{rates['auto'] / rates['one at a time']:.2f} | {r['at_once']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", type=int, default=50_000)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--methods", nargs="+", default=[m[0] for m in METHODS if "iterations" not in m[0]])
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench")
    args = ap.parse_args(argv)
    from sgi_run.core import jax_setup
    jax_setup.configure()   # float64 before JAX makes an array
    from throughput_report import machine, write_report

    from sgi_run.config import compose_setup
    from sgi_run.engine.executor import Local
    from sgi_run.provenance import commit_text, source_commit
    from sgi_run.runner import shards_at_once, simulator_of

    overrides = dict(METHODS)
    doc = {"machine": machine(), "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "commit_text": commit_text(source_commit()), "steps": args.steps, "rounds": args.rounds, "methods": {}}
    with tempfile.TemporaryDirectory() as scratch:
        for label in args.methods:
            paths = FAST.get(label, args.paths)
            best = {"one shard": float("inf")} | {mode: float("inf") for mode in MODES}
            for _ in range(args.rounds):
                best["one shard"] = min(best["one shard"], run_once(ROOT, overrides[label], ONE_SHARD, args.steps, scratch))
                for mode, extra in MODES.items():
                    best[mode] = min(best[mode], run_once(ROOT, overrides[label] + extra, paths, args.steps, scratch))
                print(f"{label:24s} {best}", flush=True)
            extra_steps = (paths - ONE_SHARD) * args.steps
            _, setup = compose_setup([*overrides[label], f"plan.paths={paths}", "plan.dt=0.01",
                                      f"plan.T={args.steps * 0.01:g}"])
            sim = simulator_of(setup)
            doc["methods"][label] = {
                "paths": paths, "seconds": best,
                "marginal_rate": {mode: extra_steps / max(best[mode] - best["one shard"], 1e-9) for mode in MODES},
                "at_once": shards_at_once(Local(), sim, setup, sim.plan.shard_count)}
    write_report(args.out, "shards_at_once", doc, markdown(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main())
