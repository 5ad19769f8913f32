"""Scale-out benchmark (issue 14): the Dask executor against the local one, and the memory of big ensembles.

    python benchmarks/scale.py [--part scaling|memory|all] [--out outputs/bench]

Writes ``scale.json`` and ``scale.md`` with the machine named.

Scaling (the Kubo oscillator, Heun, dt = 0.01, T = 10: 1000 steps a path, 10 output times):

* ``local``: ``executor=local``'s engine in this process, XLA on every core, shard after shard;
* ``dask, W workers``: a ``LocalCluster`` of W spawned worker processes, each pinned to its share of
  the cores, the shards as tasks (``engine.executor``), the workers rebuilding the simulator from the
  run's config.

Every entry is warmed up first (compiled on every worker), then timed on the same plan. Weak
scaling: 1 worker with P paths against 2 workers with 2P paths (speed-up: rate_2 / rate_1; a lone
worker has every core for its XLA thread pool, two share them, one block each).
The overhead per shard is what a task costs beyond its computing: the client's wall time times the
workers, minus the workers' own time inside ``run_shard`` (``ShardResult.wall_time``), per shard;
it is measured over shard sizes, with the smallest one whose overhead is under 5% of a shard's
compute time.

Memory: ``sgi-run`` itself (a fresh process, the local executor) on the Kubo oscillator, Heun, dt = 0.1,
T = 10 (10 output times, 100 steps), shards of 10^4 paths, at 10^5, 10^6 and 10^7 paths; the peak
resident memory of the process (``wait4``'s ru_maxrss), which should not grow with the path count.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from throughput_report import machine

ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = ["system=kubo", "integrator=heun", "plan.dt=0.01", "plan.T=10", "plan.output_dt=1", "plan.observables=[H]"]
MEMORY_PATHS = (10**5, 10**6, 10**7)


def _setup(paths: int, shard_size: int):
    from sgi_run.config import compose_setup
    from sgi_run.runner import SimulatorBuilder, simulator_of
    cfg, setup = compose_setup(WORKLOAD + [f"plan.paths={paths}", f"plan.shard_size={shard_size}"])
    return simulator_of(setup), SimulatorBuilder.of(cfg, setup.plan)


def _timed(run) -> tuple[float, list]:
    started = time.perf_counter()
    shards = list(run())
    return time.perf_counter() - started, shards


def _local(paths: int, shard_size: int) -> dict:
    sim, _ = _setup(paths, shard_size)
    sim.run_shard(0)                                          # compile
    wall, shards = _timed(lambda: (sim.run_shard(s) for s in range(sim.plan.shard_count)))
    return _row("local", "all cores (XLA)", paths, shard_size, sim.plan, wall, shards, slots=1)


def _dask(cluster, workers: int, paths: int, shard_size: int) -> dict:
    from sgi_run.engine import cores
    sim, build_simulator = _setup(paths, shard_size)
    every = list(range(sim.plan.shard_count))
    list(cluster.run_shards(build_simulator, every[:2 * workers], {}))    # compile on every worker
    wall, shards = _timed(lambda: cluster.run_shards(build_simulator, every, {}))
    return _row("dask", f"{workers} worker(s), {len(cores.share(0, workers))} core(s) each", paths, shard_size, sim.plan, wall, shards, slots=workers)


def _row(executor, where, paths, shard_size, plan, wall, shards, slots) -> dict:
    compute = sum(r.wall_time for r in shards)
    overhead = max(0.0, wall * slots - compute) / len(shards)
    return {"executor": executor, "where": where, "paths": paths, "shard_size": shard_size, "shards": len(shards),
            "wall_s": wall, "path_steps_per_s": paths * plan.steps / wall, "compute_s": compute,
            "overhead_ms_per_shard": 1e3 * overhead, "overhead_fraction": overhead / (compute / len(shards))}


def scaling(paths: int) -> dict:
    from sgi_run.engine import executor
    rows = [_local(paths, 10**4)]
    clusters = {w: executor.connect(executor.Dask(workers=w)) for w in (1, 2)}
    rows += [_dask(clusters[1], 1, paths, 10**4), _dask(clusters[2], 2, paths, 10**4),
             _dask(clusters[2], 2, 2 * paths, 10**4)]
    weak = rows[3]["path_steps_per_s"] / rows[1]["path_steps_per_s"]
    sizes = []
    for size in (25, 50, 100, 250, 1000, 4000, 16000):
        sizes.append(_dask(clusters[1], 1, max(8 * size, 8000), size))
    under = [r["shard_size"] for r in sizes if r["overhead_fraction"] < 0.05]
    executor.close_all()
    return {"rows": rows, "weak_scaling_speedup": weak, "shard_sizes": sizes,
            "smallest_shard_under_5_percent": under[0] if under else None}


def memory() -> list[dict]:
    rows = []
    for paths in MEMORY_PATHS:
        with tempfile.TemporaryDirectory() as out:
            args = [sys.executable, "-m", "sgi_run.cli", "system=kubo", "integrator=heun", "plan.dt=0.1", "plan.T=10",
                    "plan.output_dt=1", f"plan.paths={paths}", "plan.shard_size=10000", f"output_root={out}",
                    "progress=off"]
            started = time.perf_counter()
            proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=out)
            _, status, usage = os.wait4(proc.pid, 0)
            wall = time.perf_counter() - started
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.read().decode()}")
            rows.append({"paths": paths, "shards": -(-paths // 10**4), "steps": 100, "output_times": 11,
                         "peak_rss_mib": usage.ru_maxrss / 1024, "wall_s": wall,
                         "path_steps_per_s": paths * 100 / wall})
    return rows


def _markdown(report: dict) -> str:
    m = report["machine"]
    lines = ["# Scale-out: Dask executor and big ensembles", "",
             f"Machine: {m.get('cpu_model')}, {m.get('cpu_cores_usable')} cores, {m.get('memory_gib')} GiB, {m.get('os')}; "
             f"Python {m.get('python')}, jax {m.get('jax')}.", ""]
    if "scaling" in report:
        s = report["scaling"]
        lines += ["## Scaling: Kubo oscillator, Heun, 1000 steps a path (dt = 0.01, T = 10)", "",
                  "| executor | where | paths | shards | wall s | path-steps/s | overhead ms/shard | overhead % |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {r['executor']} | {r['where']} | {r['paths']:.0e} | {r['shards']} | {r['wall_s']:.2f} | "
                  f"{r['path_steps_per_s'] / 1e6:.2f} M | "
                  + (f"{r['overhead_ms_per_shard']:.1f} | {100 * r['overhead_fraction']:.1f} |" if r["executor"] == "dask"
                     else "- | - |") for r in s["rows"]]
        lines += ["", f"Weak scaling, 1 -> 2 workers (paths doubled): speed-up {s['weak_scaling_speedup']:.2f} "
                  "(a lone worker's XLA pool already has every core).", "",
                  "### Overhead per shard against the shard size (1 worker)", "",
                  "| shard size | shards | compute ms/shard | overhead ms/shard | overhead % |", "|---|---|---|---|---|"]
        lines += [f"| {r['shard_size']} | {r['shards']} | {1e3 * r['compute_s'] / r['shards']:.1f} | "
                  f"{r['overhead_ms_per_shard']:.1f} | {100 * r['overhead_fraction']:.1f} |" for r in s["shard_sizes"]]
        under = s["smallest_shard_under_5_percent"]
        lines += ["", f"Smallest shard size with the Dask overhead under 5%: {under if under else 'none measured'} "
                  "paths (of this workload's 1000 steps).", ""]
    if "memory" in report:
        lines += ["## Peak memory of `sgi-run` against the path count (Kubo, Heun, 100 steps, 11 output times, "
                  "shards of 10^4)", "", "| paths | shards | peak RSS MiB | wall s | path-steps/s |", "|---|---|---|---|---|"]
        lines += [f"| {r['paths']:.0e} | {r['shards']} | {r['peak_rss_mib']:.0f} | {r['wall_s']:.1f} | "
                  f"{r['path_steps_per_s'] / 1e6:.2f} M |" for r in report["memory"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--part", choices=("scaling", "memory", "all"), default="all")
    parser.add_argument("--paths", type=int, default=2 * 10**5, help="paths of the scaling runs (2 workers: twice)")
    parser.add_argument("--out", default=str(ROOT / "outputs" / "bench"))
    args = parser.parse_args(argv)
    report = {"machine": machine()}
    if args.part in ("scaling", "all"):
        report["scaling"] = scaling(args.paths)
    if args.part in ("memory", "all"):
        report["memory"] = memory()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "scale.json").write_text(json.dumps(report, indent=1) + "\n")
    text = _markdown(report)
    (out / "scale.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
