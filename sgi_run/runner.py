"""``run(cfg)``: one ensemble from a composed config, shared by the CLI, the figures and tests.

Validates (``config.build``) before any compute, runs the shards (resuming from checkpoints of an
interrupted run), writes ``ensemble.h5`` and the summary. A finished run directory is a cache:
the same config returns its file without recomputing.
"""
from __future__ import annotations

import contextlib
import dataclasses
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
from omegaconf import DictConfig, OmegaConf

from sgi_run import __version__, provenance, store, summary
from sgi_run.config import build, config_hash, run_dir_for
from sgi_run.engine.checkpoint import ShardStore
from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.simulate import Simulator


@dataclasses.dataclass
class RunResult:
    path: Path                 # the ensemble.h5
    run_dir: Path
    ensemble: store.Ensemble
    summary: list[dict]
    cached: bool               # True when the file existed and nothing was computed
    shards_resumed: int = 0
    stale: bool = False        # cached, but computed by other numerics code (provenance.code_digest)


def _progress_bar(enabled: bool):
    """A rich bar over path-steps (shards x steps), or nothing when not wanted."""
    if not enabled:
        return contextlib.nullcontext(None)
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn,
                               TimeElapsedColumn, TimeRemainingColumn)
    return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                    TextColumn("path-steps, {task.fields[rate]} path-steps/s"),
                    TimeElapsedColumn(), TimeRemainingColumn())


def run(cfg: DictConfig, run_dir: Path | None = None, *, progress: bool | None = None,
        on_shard_done: Callable | None = None) -> RunResult:
    if cfg.plan.get("kind", "ensemble") == "convergence":
        # A convergence study has its own outputs (convergence.h5, table, figure): a ConvergenceRun.
        from sgi_run.convergence_run import run_convergence
        return run_convergence(cfg, run_dir)
    setup = build(cfg)
    system, integrator, plan = setup.system, setup.integrator, setup.plan
    run_dir = Path(run_dir) if run_dir is not None else run_dir_for(cfg)
    path = run_dir / "ensemble.h5"
    title = f"{cfg.system.name} / {cfg.integrator.name}  dt={plan.dt}  paths={plan.paths}  T={plan.T}"
    policy = cfg.get("cache", "reuse")
    if path.exists():
        ens = store.load(path)
        reuse, stale = provenance.cache_decision(path, ens.attrs.get("code_digest"), policy)
        if reuse:
            return RunResult(path, run_dir, ens, summary.summarize(ens, system), cached=True, stale=stale)
        path.unlink()

    run_dir.mkdir(parents=True, exist_ok=True)
    if progress is None:
        setting = cfg.get("progress", "auto")
        progress = setting == "on" or (setting == "auto" and sys.stderr.isatty())
    sim = Simulator(system, integrator, plan)
    shards = ShardStore(run_dir / "shards", plan.shard_count)
    if policy == "off":
        shards.clear()     # nothing reused, not even an interrupted run's checkpoints
    total = plan.paths * plan.steps
    started = time.perf_counter()
    with _progress_bar(progress) as bar:
        on_output = None
        if bar is not None:
            task = bar.add_task(f"{cfg.integrator.name}: {plan.shard_count} shard(s)", total=total, rate="-")

            def on_output(paths_in_shard):
                bar.advance(task, paths_in_shard * plan.steps_per_output)
                rate = bar.tasks[0].completed / max(time.perf_counter() - started, 1e-9)
                bar.update(task, rate=f"{rate:.3g}")
        result = run_shards(sim, shards, on_output, on_shard_done)

    m = result.moments
    ens = store.Ensemble(
        t=plan.times,
        observables={name: {"mean": m.mean_or_nan[:, j], "var": m.var[:, j], "count": m.count[:, j]}
                     for j, name in enumerate(sim.observable_names)},
        paths=result.kept,
        snapshots=({"t": plan.times[plan.snapshot_indices]}
                   | {name: result.snapshots[:, :, j] for j, name in enumerate(system.coordinates)}
                   if plan.snapshots else {}),
        time_averages=({name: result.time_averages[:, j] for j, name in enumerate(sim.observable_names)}
                       if plan.time_average is not None else {}),
        diagnostics={"nonfinite_paths": result.nonfinite,
                     "newton_iterations": result.newton_iterations,
                     "newton_max_iterations": result.newton_max},
        attrs={"sgi_run_version": __version__, "code_digest": provenance.code_digest(), "seed": plan.seed,
               "config": OmegaConf.to_yaml(cfg, resolve=True), "config_hash": config_hash(cfg),
               "system": cfg.system.name, "integrator": cfg.integrator.name,
               "paths": plan.paths, "shards": plan.shard_count,
               "path_steps": total, "wall_time_s": time.perf_counter() - started,
               "newton_iterations_per_step": float(np.sum(result.newton_iterations) / total),
               **({"time_average": list(plan.time_average)} if plan.time_average is not None else {})},
    )
    store.write(path, ens)
    shards.clear()
    rows = summary.summarize(ens, system)
    summary.write(rows, run_dir, title)
    return RunResult(path, run_dir, ens, rows, cached=False, shards_resumed=result.shards_resumed)
