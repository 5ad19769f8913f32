"""Same config and seed on the CPU and on the accelerator: the statistics agree to round-off.

Each config runs twice as an ``sgi-run`` process: with ``JAX_PLATFORMS=cpu`` (the CPU, shards of
10^4 paths) and with JAX's default device (a GPU: one shard of every path, ``plan.shard_size: auto``),
``cache=off``. Every observable's mean and standard deviation at every output time is compared
(``compare``): the largest |difference| relative to the observable's scale, and the largest
|difference of the means| in standard errors (round-off is ~1e-11 of an SE; an independent sample
would be ~1). Writes
``backends_agree.json`` and ``.md`` to ``--out`` (default ``outputs/bench``).

On a machine without an accelerator both runs are on the CPU (then only the shard layout and the
process differ). ``python benchmarks/backends_agree.py``; about a minute on a GPU machine.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
ROUND_OFF = 1e-12
PLAN = ["plan.paths=20000", "plan.keep_paths=0", "cache=off", "progress=off"]
CONFIGS = {
    "kubo heun": ["system=kubo", "integrator=heun", "plan.dt=0.01", "plan.T=10", "plan.output_dt=1"],
    "kubo midpoint": ["system=kubo", "integrator=midpoint", "plan.dt=0.01", "plan.T=10", "plan.output_dt=1"],
    "kubo e1": ["system=kubo", "integrator=e1", "plan.dt=0.01", "plan.T=10", "plan.output_dt=1"],
    "van der Pol dirk": ["system=van_der_pol", "integrator=dirk", "plan.dt=0.02", "plan.T=4", "plan.output_dt=0.4"],
    "double-well svia": ["system=langevin_double_well", "integrator=svia", "plan.dt=0.25", "plan.T=50",
                         "plan.output_dt=5"],
    "heavy top tmk": ["system=heavy_top", "integrator=tmk", "plan.dt=0.01", "plan.T=2", "plan.output_dt=0.2",
                      "plan.observables=[H,C1,C2]"],
    "rigid body lgvi_cayley": ["system=rigid_body", "integrator=lgvi_cayley", "plan.dt=0.00390625", "plan.T=1",
                               "plan.output_dt=0.25"],
}


def run(overrides: list[str], root: Path, platform: str | None) -> Path:
    env = dict(os.environ)
    if platform:
        env["JAX_PLATFORMS"] = platform
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", *overrides, *PLAN, f"output_root={root}"],
                         env=env, cwd=ROOT, capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError(f"sgi-run {' '.join(overrides)} ({platform or 'default'}) failed:\n{out.stderr[-2000:]}")
    return next(root.rglob("ensemble.h5"))


def compare(a, b) -> dict:
    """Largest differences over every observable and output time: of the means and of the standard
    deviations relative to the observable's scale (its largest |mean| + largest sd over time: a
    conserved Casimir's sd is round-off, ~1e-15, and relative to itself would be noise), and of
    the means in standard errors where the SE is above ``ROUND_OFF`` of the scale."""
    rel, in_se = 0.0, 0.0
    for name, x in a.observables.items():
        y = b.observables[name]
        sd_x, sd_y = np.sqrt(x["var"]), np.sqrt(y["var"])
        scale = max(float(np.max(np.abs(x["mean"])) + np.max(sd_x)), 1e-300)
        rel = max(rel, float(np.max(np.abs(x["mean"] - y["mean"]))) / scale, float(np.max(np.abs(sd_x - sd_y))) / scale)
        se = sd_x / np.sqrt(np.maximum(x["count"], 1))
        # In SEs only where the SE is above round-off: a Casimir's SE is ~1e-18 and its means differ
        # by round-off (~1e-16), "15 SE" of nothing.
        moved = se > ROUND_OFF * scale
        if moved.any():
            in_se = max(in_se, float(np.max(np.abs(x["mean"] - y["mean"])[moved] / se[moved])))
    return {"largest_relative_difference": rel, "largest_mean_difference_in_se": in_se,
            "devices": [a.attrs.get("device"), b.attrs.get("device")],
            "shards": [int(a.attrs["shards"]), int(b.attrs["shards"])],
            "nonfinite": [int(a.diagnostics["nonfinite_paths"].sum()), int(b.diagnostics["nonfinite_paths"].sum())]}


def write(rows: dict, out: Path) -> None:
    lines = ["# The same config and seed on two devices", "",
             f"Each run: {', '.join(PLAN[:1])} (see CONFIGS in benchmarks/backends_agree.py).", "",
             "| config | devices | shards | largest difference of mean, sd / scale | "
             "largest mean difference / SE | non-finite paths |", "|---|---|---|---:|---:|---|"]
    lines += [f"| {label} | {' vs '.join(r['devices'])} | {r['shards'][0]} vs {r['shards'][1]} | "
              f"{r['largest_relative_difference']:.2e} | {r['largest_mean_difference_in_se']:.2e} | "
              f"{r['nonfinite'][0]} vs {r['nonfinite'][1]} |" for label, r in rows.items()]
    out.mkdir(parents=True, exist_ok=True)
    (out / "backends_agree.json").write_text(json.dumps(rows, indent=2) + "\n")
    (out / "backends_agree.md").write_text("\n".join(lines) + "\n")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=ROOT / "outputs" / "bench")
    ap.add_argument("--only", nargs="*", default=None, help="config labels (default: all)")
    args = ap.parse_args(argv)
    from sgi_run import store

    rows = {}
    for label, overrides in CONFIGS.items():
        if args.only and label not in args.only:
            continue
        with tempfile.TemporaryDirectory() as tmp:
            cpu = store.load(run(overrides, Path(tmp) / "cpu", "cpu"))
            other = store.load(run(overrides, Path(tmp) / "default", None))
        rows[label] = compare(cpu, other)
        print(f"{label}: {rows[label]}", file=sys.stderr, flush=True)
        write(rows, args.out)     # after every config: a run stopped part-way keeps what it compared
    print((args.out / "backends_agree.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
