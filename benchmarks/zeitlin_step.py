"""One IsoMP step of the stochastic Euler-Zeitlin equations at N = 128 (issue 12, Speed): milliseconds per
step and per fixed-point iteration, iterations per step, for the deterministic step (the reference's) and
the paper's stochastic one, and what a step is made of (a Hoppe-Yau transform, the tridiagonal Poisson
solve, the generator, one complex 128 x 128 product), on ONE core (``--threads``: the process is pinned
to that many cores before JAX starts, and XLA sizes its CPU thread pool by them): quflow, the paper
authors' numba + OpenBLAS code it is compared with, runs on one core, and two thread pools fighting
over two cores were measured 50x slower. No ratio to quflow is written: a ratio is only honest when
both steps are timed in the same run on the same machine, and quflow is not installed with sgi-run.

    python benchmarks/zeitlin_step.py [--n 128] [--steps 50] [--repeats 5] [--threads 1] [--out outputs/bench]
                                      [--baseline DIR [--rounds 3]]

Writes ``zeitlin_step.json`` and ``zeitlin_step.md`` with the machine named. ``--baseline DIR`` (another
checkout, e.g. ``git worktree add /tmp/base <commit>``) instead measures this checkout and that one in one
series, each in its own process, alternating ``--rounds`` times so that both see the same machine, and writes
``zeitlin_step_series.{json,md}``: each round's ms per step of both and their ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _parse(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--steps", type=int, default=50, help="steps per timed run (one path)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=1, help="cores, and so XLA CPU threads (1: the reference's setting)")
    parser.add_argument("--out", default=str(ROOT / "outputs" / "bench"))
    parser.add_argument("--baseline", type=pathlib.Path, help="another checkout measured in the same series")
    parser.add_argument("--rounds", type=int, default=3, help="with --baseline: measurements of each checkout")
    return parser.parse_args(argv)


def series(args) -> int:
    """This checkout and ``args.baseline``, alternating, each round in fresh processes (module docstring)."""
    checkouts = {"this": ROOT, "baseline": args.baseline.resolve()}
    commits = {name: subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=path, capture_output=True,
                                    text=True).stdout.strip() or "unknown" for name, path in checkouts.items()}
    rounds = []
    with tempfile.TemporaryDirectory() as scratch:
        for r in range(args.rounds):
            measured = {}
            for name, path in checkouts.items():
                out = pathlib.Path(scratch) / f"{name}{r}"
                subprocess.run([sys.executable, str(path / "benchmarks" / "zeitlin_step.py"), "--n", str(args.n),
                                "--steps", str(args.steps), "--repeats", str(args.repeats), "--threads",
                                str(args.threads), "--out", str(out)], check=True, capture_output=True)
                measured[name] = json.loads((out / "zeitlin_step.json").read_text())
            rounds.append(measured)
            print(f"round {r + 1}: " + ", ".join(f"{name} {m['step']['deterministic']['ms_per_step']:.2f} ms"
                                                  for name, m in measured.items()), flush=True)
    kinds = list(rounds[0]["this"]["step"])
    record = {"machine": rounds[0]["this"]["machine"], "commits": commits, "N": args.n, "steps": args.steps,
              "repeats": args.repeats, "rounds": rounds}
    lines = [f"# IsoMP step, Euler-Zeitlin su({args.n}): this checkout against a baseline, one series", "",
             f"- machine: {record['machine']['processor']}, {record['machine']['cores']} cores; jax "
             f"{record['machine']['jax']} ({record['machine']['backend']}), {args.threads} core(s), pinned",
             f"- this: {commits['this']} ({checkouts['this']}); baseline: {commits['baseline']} ({checkouts['baseline']})",
             f"- each round: this checkout's own benchmark, then the baseline's, each in a fresh process; best of "
             f"{args.repeats} runs of {args.steps} steps of one path", "",
             "| round | step | baseline ms | this ms | baseline / this | iterations (baseline, this) |",
             "|---:|---|---:|---:|---:|---|"]
    for r, measured in enumerate(rounds, 1):
        for kind in kinds:
            base, this = measured["baseline"]["step"][kind], measured["this"]["step"][kind]
            lines.append(f"| {r} | {kind} | {base['ms_per_step']:.2f} | {this['ms_per_step']:.2f} | "
                         f"{base['ms_per_step'] / this['ms_per_step']:.2f} | {base['iterations_per_step']:.2f}, "
                         f"{this['iterations_per_step']:.2f} |")
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zeitlin_step_series.json").write_text(json.dumps(record, indent=1) + "\n")
    (out / "zeitlin_step_series.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


def main(argv=None) -> int:
    args = _parse(argv)
    if args.baseline:
        return series(args)
    # Before JAX starts: XLA sizes its CPU thread pool by the process's cores (its affinity; the
    # XLA_FLAGS that once limited the pool no longer do: with them a process still kept 1.9 cores busy).
    cores = sorted(os.sched_getaffinity(0))
    os.sched_setaffinity(0, cores[:args.threads])
    sys.path.insert(0, str(ROOT))
    from sgi_run.core import jax_setup
    jax_setup.configure()   # float64 first
    import jax
    import jax.numpy as jnp
    import numpy as np
    import yaml

    from sgi_run.core.linalg import matmul
    from sgi_run.integrators import make_integrator
    from sgi_run.systems.zeitlin import ZeitlinEuler, hbar

    isomp = make_integrator(yaml.safe_load((ROOT / "conf" / "integrator" / "isomp.yaml").read_text()))
    dt = 0.1 * hbar(args.n)

    def best(fn, *a):
        jax.block_until_ready(fn(*a))      # compile
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            jax.block_until_ready(fn(*a))
            times.append(time.perf_counter() - start)
        return min(times), statistics.median(times)

    def step_timing(system):
        """ms per step and per fixed-point iteration of `steps` IsoMP steps of one path."""
        x0 = system.initial_state(None)
        dw = jnp.asarray(np.random.default_rng(0).normal(size=(args.steps, 1, system.noises)) * np.sqrt(dt))
        run = jax.jit(lambda x, dw: jax.lax.scan(
            lambda x, d: (lambda z, s: (z, s.iterations))(*isomp.advance(system, x, dt, d)), x, dw))
        iterations = np.asarray(run(x0, dw)[1])
        step_best, step_median = best(run, x0, dw)
        return {"ms_per_step": step_best / args.steps * 1e3, "ms_per_step_median_run": step_median / args.steps * 1e3,
                "iterations_per_step": float(iterations.mean()), "max_iterations": int(iterations.max()),
                "ms_per_iteration": step_best / iterations.sum() * 1e3}

    # The reference's step is the deterministic one; the paper's runs add 12288 noises (l >= N/2).
    steps = {"deterministic": step_timing(ZeitlinEuler(N=args.n, noise_amplitude=0.0)),
             "stochastic (projection noise, l >= N/2)": step_timing(ZeitlinEuler(N=args.n))}
    system = ZeitlinEuler(N=args.n)
    x0, dw0 = system.initial_state(None), jnp.ones(system.noises) * np.sqrt(dt)
    parts = {
        "Hoppe-Yau forward transform": jax.jit(system.basis.forward),
        "Delta^-1 by tridiagonal solves": jax.jit(system.inverse_laplacian),
        "generator dt grad h + sum dW grad h_lm (one transform pair)": jax.jit(lambda x: system.generator(x, dt, dw0)),
        "complex N x N product (three real ones, core.linalg.matmul)": jax.jit(lambda x: matmul(x, x)),
    }
    part_ms = {name: best(fn, x0)[0] * 1e3 for name, fn in parts.items()}

    record = {
        "machine": {"processor": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "jax": jax.__version__,
                    "backend": jax.default_backend(), "threads": args.threads,
                    "pinned_to_cores": sorted(os.sched_getaffinity(0))},
        "N": args.n, "dt": dt, "steps": args.steps, "repeats": args.repeats, "step": steps,
        "parts_ms": part_ms,
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "zeitlin_step.json").write_text(json.dumps(record, indent=1) + "\n")
    lines = [f"# IsoMP step, Euler-Zeitlin su({args.n})", "",
             f"- machine: {record['machine']['processor']}, {record['machine']['cores']} cores; jax "
             f"{record['machine']['jax']} ({record['machine']['backend']}), {args.threads} core(s), pinned",
             f"- one path, {args.steps} steps of dt = 0.1 hbar, best of {args.repeats} runs",
             "- no ratio to quflow: its step was not timed in this run", "",
             "| step | ms per step | iterations per step (max) | ms per iteration |", "|---|---:|---:|---:|",
             *(f"| {name} | {r['ms_per_step']:.2f} | {r['iterations_per_step']:.2f} ({r['max_iterations']}) | "
               f"{r['ms_per_iteration']:.3f} |" for name, r in steps.items()), "",
             "| part | ms |", "|---|---:|", *(f"| {name} | {ms:.3f} |" for name, ms in part_ms.items())]
    (out / "zeitlin_step.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
