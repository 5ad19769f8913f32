"""Run the shards of a plan (resuming from checkpoints) and merge them in shard order."""
from __future__ import annotations

import concurrent.futures
import dataclasses
import threading
from collections.abc import Callable

import numpy as np

from sgi_run.core import jax_setup
from sgi_run.engine import invariants
from sgi_run.engine.checkpoint import ShardStore
from sgi_run.engine.executor import Cluster
from sgi_run.engine.moments import Moments
from sgi_run.engine.simulate import ShardResult, Simulator, SolverCounts


@dataclasses.dataclass
class EnsembleResult:
    moments: Moments               # (times, observable entries)
    nonfinite: np.ndarray
    solver_name: str | None        # the integrator's solver (None: explicit)
    solver: SolverCounts
    kept: dict[str, np.ndarray]    # state views and observables, (kept paths, times, *shape)
    snapshots: object              # the state pytree, each leaf (snapshot times, paths, *leaf shape), paths in index order
    time_averages: np.ndarray | None  # (paths, observable entries) over plan.time_average, paths in index order
    shards_run: int
    shards_resumed: int
    wall_time: float
    devices: tuple[str, ...] = ()  # what computed the shards (engine.device.describe), each named once
    resumed_part_way: dict[int, int] = dataclasses.field(default_factory=dict)  # shard -> the step it resumed from
    # (times, invariants): each declared invariant's largest drift over the paths finite at the output time and every
    # step up to it (NaN: none finite); None when the system declares none
    invariant_drift: np.ndarray | None = None

    @property
    def newton_iterations(self) -> np.ndarray:
        """Newton's iterations per output time (zeros for another solver or none)."""
        return self.solver.iterations if self.solver_name == "newton" else np.zeros_like(self.solver.iterations)

    @property
    def newton_max(self) -> np.ndarray:
        return self.solver.max_iterations if self.solver_name == "newton" else np.zeros_like(self.solver.max_iterations)


def run_shards(sim: Simulator, store: ShardStore | None,
               on_output: Callable[[int], None] | None = None,
               on_shard_done: Callable[[ShardResult], None] | None = None,
               cluster: Cluster | None = None, build_simulator: Callable[[], Simulator] | None = None,
               at_once: int = 1) -> EnsembleResult:
    """Every shard of ``sim.plan``, skipping those ``store`` already holds: here, ``at_once`` at a time (each
    from its own thread), or as tasks on ``cluster``, whose workers rebuild the simulator with
    ``build_simulator()`` (``executor``).

    Each finished shard is saved as it arrives. The merge always runs in shard order, so the result
    depends neither on which shards were resumed nor on where or in which order they ran; with a
    different shard count it differs only by the round-off of the merge.
    """
    count = sim.plan.shard_count
    done = set(store.finished()) if store else set()
    results: dict[int, ShardResult] = {s: store.load(s) for s in sorted(done)}
    missing = [s for s in range(count) if s not in done]
    resumes = {s: store.load_progress(s) for s in missing} if store else {}
    resumes = {s: r for s, r in resumes.items() if r is not None}
    part_way = {s: int(r["done"]) * sim.plan.steps_per_output for s, r in resumes.items()}
    if cluster is not None:
        computed = cluster.run_shards(build_simulator, missing, resumes, on_output, sim.plan.outputs)
    else:
        threaded = at_once > 1 and len(missing) > 1
        if threaded and on_output is not None:       # the progress line hears every thread
            lock, report = threading.Lock(), on_output

            def on_output(paths):
                with lock:
                    report(paths)

        def one_shard(s, stopped=lambda: False):
            saved = (lambda arrays: store.save_progress(s, arrays)) if store else None
            return sim.run_shard(s, on_output, resume=resumes.get(s), on_progress=saved, stopped=stopped)
        computed = _in_threads(jax_setup.carried(one_shard), missing, at_once) if threaded else map(one_shard, missing)
    for result in computed:
        results[result.shard] = result
        if store:
            store.save(result)
        if on_shard_done:
            on_shard_done(result)

    ordered = [results[s] for s in range(count)]
    moments = ordered[0].moments
    for r in ordered[1:]:
        moments = moments.merge(r.moments)
    kept = {k: np.concatenate([r.kept[k] for r in ordered if len(r.kept[k])] or [ordered[0].kept[k]])
            for k in ordered[0].kept}
    snapshots = sim.space.from_leaves({name: np.concatenate([r.snapshots[name] for r in ordered], axis=1)
                                       for name in ordered[0].snapshots})
    averaged = [r.time_averages for r in ordered]
    solver, drift = ordered[0].solver, ordered[0].invariant_drift
    for r in ordered[1:]:
        solver = solver.merge(r.solver)
        drift = invariants.merge(drift, r.invariant_drift) if drift is not None else None
    return EnsembleResult(
        moments=moments,
        snapshots=snapshots,
        time_averages=np.concatenate(averaged, axis=0) if averaged[0] is not None else None,
        nonfinite=sum(r.nonfinite for r in ordered),
        solver_name=sim.solver_name,
        solver=solver,
        kept=kept,
        shards_run=count - len(done),
        shards_resumed=len(done),
        wall_time=sum(r.wall_time for r in ordered),
        devices=tuple(dict.fromkeys(r.device for r in ordered if r.device)),
        resumed_part_way=part_way,
        invariant_drift=drift,
    )


def _in_threads(one_shard: Callable, shards: list[int], at_once: int):
    """Yield ``one_shard(s, stopped)`` for each of ``shards`` as it finishes, ``at_once`` computed at a time
    from their own threads. Leaving early (Ctrl-C, an error) stops the running shards at their next output
    time (their saved progress kept) and starts no other."""
    stop = threading.Event()
    with concurrent.futures.ThreadPoolExecutor(at_once, thread_name_prefix="sgi-run-shard") as pool:
        futures = [pool.submit(one_shard, s, stop.is_set) for s in shards]
        try:
            for future in concurrent.futures.as_completed(futures):
                yield future.result()
        finally:
            stop.set()
            pool.shutdown(cancel_futures=True)
