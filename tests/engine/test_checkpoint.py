"""Shard checkpoints: finished shards and, with ``plan.checkpoint_every``, a shard's progress part-way."""
import numpy as np
import pytest

from sgi_run.engine.checkpoint import DamagedCheckpoint, ShardStore
from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.systems import Kubo


def interrupted_then_resumed(sim, directory, stop_after_outputs: int):
    """Run, stop (Ctrl-C) after ``stop_after_outputs`` output intervals, then run again from the checkpoints."""
    store = ShardStore(directory, sim.plan.shard_count, {"config_hash": "h", "code_digest": "c"})
    seen = []

    def stop(paths):
        seen.append(paths)
        if len(seen) == stop_after_outputs:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_shards(sim, store, on_output=stop)
    return store, run_shards(sim, store)


def test_a_single_long_path_resumes_mid_way_to_the_same_numbers(make_integrator, tmp_path):
    plan = Plan(paths=1, dt=0.01, T=2.0, output_dt=0.1, keep_paths=1, observables=["H", "q"], checkpoint_every=4,
                snapshots=[1.0, 2.0], time_average=[0.5, 2.0])
    sim = Simulator(Kubo(nu=0.3), make_integrator("midpoint"), plan)
    whole = run_shards(sim, None)
    store, resumed = interrupted_then_resumed(sim, tmp_path, stop_after_outputs=10)
    assert resumed.shards_resumed == 0 and not store.in_progress()     # the one shard finished, from output 8
    for name in ("q", "p", "H"):
        assert np.array_equal(whole.kept[name], resumed.kept[name])
    for field in ("count", "mean", "m2"):
        assert np.array_equal(getattr(whole.moments, field), getattr(resumed.moments, field))
    assert np.array_equal(whole.snapshots, resumed.snapshots)
    assert np.array_equal(whole.time_averages, resumed.time_averages)
    assert np.array_equal(whole.solver.iterations, resumed.solver.iterations)


def stopped_at_output(sim, store, n):
    """``run_shards`` into ``store``, interrupted (as by Ctrl-C) at its ``n``-th output time."""
    seen = []

    def stop(paths):
        seen.append(paths)
        if len(seen) == n:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        run_shards(sim, store, on_output=stop)


def test_progress_is_saved_every_k_outputs_and_cleared_when_the_shard_finishes(make_integrator, tmp_path):
    plan = Plan(paths=20, dt=0.1, T=2.0, output_dt=0.1, shards=2, checkpoint_every=5)
    sim = Simulator(Kubo(), make_integrator("heun"), plan)
    store = ShardStore(tmp_path, plan.shard_count)
    stopped_at_output(sim, store, 20 + 7)   # shard 0 finished, shard 1 at output 7: progress saved at 5
    assert store.finished() == [0] and store.in_progress() == [1]
    assert int(store.load_progress(1)["done"]) == 5
    run_shards(sim, store)
    assert store.finished() == [0, 1] and store.in_progress() == []


def test_a_shard_resumed_part_way_is_reported_with_the_step_it_resumed_from(make_integrator, tmp_path):
    plan = Plan(paths=20, dt=0.1, T=2.0, output_dt=0.2, shards=2, checkpoint_every=3)
    sim = Simulator(Kubo(), make_integrator("heun"), plan)
    _store, resumed = interrupted_then_resumed(sim, tmp_path, stop_after_outputs=10 + 4)   # shard 1: saved at output 3
    assert resumed.shards_resumed == 1 and resumed.resumed_part_way == {1: 6}             # step 6 of 20
    assert run_shards(sim, None).resumed_part_way == {}


def resaved(path, change):
    """``path`` re-saved as a valid .npz (every member, its digest too, CRC-32s right) with ``change(arrays)``."""
    with np.load(path) as f:
        arrays = {name: f[name] for name in f.files}
    change(arrays)
    np.savez(path, **arrays)


@pytest.mark.parametrize("progress", [False, True])
def test_a_checkpoint_resaved_with_other_numbers_is_damaged(make_integrator, tmp_path, progress):
    """Issue 45: a valid .npz whose mean was multiplied by 1.5 was resumed from silently; its content digest
    now tells (a finished shard's, and a shard's progress part-way)."""
    plan = Plan(paths=20, dt=0.1, T=2.0, output_dt=0.1, shards=2, checkpoint_every=5)
    sim = Simulator(Kubo(), make_integrator("heun"), plan)
    store = ShardStore(tmp_path, plan.shard_count, {"config_hash": "h", "code_digest": "c"})
    stopped_at_output(sim, store, 20 + 7)   # shard 0 finished, shard 1 at output 7: progress saved at 5
    path = store.progress_path(1) if progress else store.path(0)
    assert store.check(path) == {"config_hash": "h", "code_digest": "c"}

    def scaled(arrays):
        arrays["mean"] = arrays["mean"] * 1.5
    resaved(path, scaled)
    with pytest.raises(DamagedCheckpoint, match=r"^content digest mismatch \(an array changed after the file was written\)$"):
        store.check(path)
    with pytest.raises(DamagedCheckpoint, match="content digest mismatch"):
        store.load_progress(1) if progress else store.load(0)
    resaved(path, lambda arrays: arrays.pop("content_digest"))
    with pytest.raises(DamagedCheckpoint, match="^it has no content digest$"):
        store.check(path)
