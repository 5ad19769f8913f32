"""Engine overhead on a matrix state (issue 10): the implicit midpoint rule by fixed-point iteration on a
complex 128 x 128 skew-Hermitian state, run by the engine (``Simulator.run_shard``: pytree state,
statistics, kept paths) against the same arithmetic outside it (one jitted ``lax.scan`` of the vmapped
step over the same increments). Both give the same final states, bit for bit; the report is the time
per path-step of each and their ratio, with the machine.

    python benchmarks/pytree_overhead.py [--paths 4] [--steps 200] [--repeats 5] [--out outputs/bench]
"""
from __future__ import annotations

import argparse
import json
import pathlib
import platform
import statistics
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sgi_run.core import jax_setup  # noqa: E402
jax_setup.configure()   # float64 first
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from sgi_run.core import noise  # noqa: E402
from sgi_run.engine.plan import Plan  # noqa: E402
from sgi_run.engine.simulate import Simulator  # noqa: E402
from tests.pytree_systems import MidpointOnLeaves, NoCoefficients, SkewHermitianFlow  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=128)
    parser.add_argument("--paths", type=int, default=4)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", default=str(ROOT / "outputs" / "bench"))
    args = parser.parse_args(argv)

    system = SkewHermitianFlow(n=args.n)
    integrator = MidpointOnLeaves(name="midpoint_on_leaves", tableau=NoCoefficients(), solver="fixed_point", tol=1e-14)
    dt = 0.01
    plan = Plan(paths=args.paths, dt=dt, T=args.steps * dt, output_dt=args.steps * dt, keep_paths=args.paths,
                observables=["casimir"])
    sim = Simulator(system, integrator, plan)

    keys = noise.path_keys(plan.seed, 0, args.paths)
    noise_keys = jax.vmap(noise.noise_key)(keys)
    z0 = jax.vmap(lambda k: system.initial_state(noise.init_key(k)))(keys)

    @jax.jit
    def outside(z, noise_keys):
        def one(z, k):
            xi = jax.vmap(lambda key: noise.increments("gaussian", key, k, dt, system.noises))(noise_keys)
            return jax.vmap(lambda z, x: integrator.advance(system, z, dt, x)[0])(z, xi), None
        return jax.lax.scan(one, z, jnp.arange(args.steps))[0]

    def time_engine():
        start = time.perf_counter()
        result = sim.run_shard(0)
        return time.perf_counter() - start, result.kept["W"][:, -1]

    def time_outside():
        start = time.perf_counter()
        z = jax.block_until_ready(outside(z0, noise_keys))
        return time.perf_counter() - start, np.asarray(z["W"])

    time_engine(), time_outside()            # compile both
    engine, bare = [], []
    for _ in range(args.repeats):            # interleaved, so that load changes hit both alike
        t, w_engine = time_engine()
        engine.append(t)
        t, w_bare = time_outside()
        bare.append(t)
    path_steps = args.paths * args.steps
    doc = {
        "what": f"fixed-point implicit midpoint, complex {args.n} x {args.n} skew-Hermitian state",
        "paths": args.paths, "steps": args.steps, "repeats": args.repeats,
        "engine_us_per_path_step": 1e6 * statistics.median(engine) / path_steps,
        "outside_us_per_path_step": 1e6 * statistics.median(bare) / path_steps,
        "ratio_engine_over_outside": statistics.median(engine) / statistics.median(bare),
        "same_final_states": bool(np.array_equal(w_engine, w_bare)),
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "cpus": jax.device_count(),
                    "device": str(jax.devices()[0]), "jax": jax.__version__},
    }
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "pytree_overhead.json").write_text(json.dumps(doc, indent=1) + "\n")
    lines = [f"# Engine overhead: {doc['what']}", "",
             f"{args.paths} paths x {args.steps} steps, median of {args.repeats} interleaved repeats on "
             f"{doc['machine']['device']} ({doc['machine']['platform']}).", "",
             "| | us per path-step |", "|---|---|",
             f"| engine (Simulator.run_shard) | {doc['engine_us_per_path_step']:.1f} |",
             f"| same arithmetic outside (jitted scan) | {doc['outside_us_per_path_step']:.1f} |", "",
             f"Ratio engine / outside: {doc['ratio_engine_over_outside']:.3f}; same final states: {doc['same_final_states']}."]
    (out / "pytree_overhead.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
