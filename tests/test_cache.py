"""The run cache (sgi_run.cache, through sgi_run.run): a directory's finished file or shard checkpoint is
reused only for exactly the config (and code) asked for, a damaged one is set aside and recomputed,
two identical runs at once compute once, and an unwritable place is refused or shown read-only."""
import contextlib
import os
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

import sgi_run
from sgi_run import runner
from sgi_run.config import config_hash

SMALL = ["plan.paths=60", "plan.T=2", "plan.shards=3", "plan.keep_paths=2"]


class Interrupt(Exception):
    pass


def interrupted_after(n, cfg, run_dir):
    """Run ``cfg`` in ``run_dir`` and stop it after ``n`` finished shards (they stay as checkpoints)."""
    finished = []

    def stop(shard):
        finished.append(shard)
        if len(finished) == n:
            raise Interrupt

    with pytest.raises(Interrupt):
        sgi_run.run(cfg, run_dir=run_dir, on_shard_done=stop)


# --- identity ------------------------------------------------------------------------------------------
def test_a_directory_holding_another_configs_result_is_refused(runs_root, tmp_path):
    """The issue's reproduction: seed 7, T = 100, then seed 8, T = 10 into the same directory."""
    first = sgi_run.compose(runs_root + ["plan.paths=100", "plan.T=10", "plan.seed=7"])
    other = sgi_run.compose(runs_root + ["plan.paths=100", "plan.T=1", "plan.seed=8"])
    sgi_run.run(first, run_dir=tmp_path / "x")
    with pytest.raises(sgi_run.ConfigError) as err:
        sgi_run.run(other, run_dir=tmp_path / "x")
    message = str(err.value)
    assert "\n" not in message and str(tmp_path / "x") in message
    assert config_hash(first) in message and config_hash(other) in message
    assert sgi_run.run(first, run_dir=tmp_path / "x").cached     # the right config still finds it


@pytest.mark.slow
def test_a_checkpoint_of_another_config_is_refused(runs_root, tmp_path):
    interrupted_after(1, sgi_run.compose(runs_root + SMALL + ["plan.seed=1"]), tmp_path / "x")
    other = sgi_run.compose(runs_root + SMALL + ["plan.seed=2"])
    with pytest.raises(sgi_run.ConfigError, match=config_hash(other)) as err:
        sgi_run.run(other, run_dir=tmp_path / "x")
    # The shard named is the one that finished first: with two cores the shards run two at a time.
    assert re.search(r"shard-0000[0-2]-of-00003\.npz", str(err.value)) and "\n" not in str(err.value)


@pytest.mark.slow
def test_a_checkpoint_of_other_code_is_refused_or_refreshed(runs_root, tmp_path, monkeypatch):
    cfg = sgi_run.compose(runs_root + SMALL)
    whole = sgi_run.run(cfg, run_dir=tmp_path / "whole")
    interrupted_after(2, cfg, tmp_path / "x")
    monkeypatch.setattr(sgi_run.provenance, "code_digest", lambda *classes: "0123456789ab")   # the code changed
    with pytest.raises(sgi_run.ConfigError, match="other numerics code"):
        sgi_run.run(cfg, run_dir=tmp_path / "x")
    refreshed = sgi_run.run(sgi_run.compose(runs_root + SMALL + ["cache=refresh_stale"]), run_dir=tmp_path / "x")
    assert refreshed.shards_resumed == 0
    assert np.array_equal(refreshed.ensemble.mean("H"), whole.ensemble.mean("H"))


# --- damaged files -----------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("policy", ["reuse", "refresh_stale", "off"])
def test_a_truncated_ensemble_is_set_aside_and_recomputed(runs_root, policy, capsys):
    cfg = sgi_run.compose(runs_root + SMALL + [f"cache={policy}"])
    first = sgi_run.run(cfg)
    data = first.path.read_bytes()
    first.path.write_bytes(data[: len(data) // 2])
    again = sgi_run.run(cfg)
    assert not again.cached and np.array_equal(again.ensemble.mean("H"), first.ensemble.mean("H"))
    [aside] = first.run_dir.glob("ensemble.h5.damaged-*")
    assert aside.stat().st_size == len(data) // 2             # kept for inspection, not deleted
    warning = [line for line in capsys.readouterr().err.splitlines() if "damaged" in line]
    assert len(warning) == 1 and "recomputing" in warning[0]


@pytest.mark.slow
def test_an_overwritten_value_is_never_shown(runs_root, capsys):
    """A value changed through h5py (fletcher32 is recomputed on write) fails the content digest;
    a byte changed on disk fails the dataset's checksum. Either way: set aside, recomputed."""
    cfg = sgi_run.compose(runs_root + SMALL)
    first = sgi_run.run(cfg)
    with h5py.File(first.path, "r+") as f:
        f["observables/H/mean"][2] = 123.0
    again = sgi_run.run(cfg)
    assert not again.cached and again.ensemble.mean("H")[2] == first.ensemble.mean("H")[2] != 123.0

    with h5py.File(again.path, "r") as f:
        dataset = f["observables/H/mean"]
        offset = dataset.id.get_chunk_info(0).byte_offset if dataset.chunks else dataset.id.get_offset()
    with open(again.path, "r+b") as f:
        f.seek(offset + 8 * 2)
        byte = f.read(1)
        f.seek(offset + 8 * 2)
        f.write(bytes([byte[0] ^ 0xFF]))
    third = sgi_run.run(cfg)
    assert not third.cached and np.array_equal(third.ensemble.mean("H"), first.ensemble.mean("H"))
    assert len(list(first.run_dir.glob("ensemble.h5.damaged-*"))) == 2


@pytest.mark.slow
@pytest.mark.parametrize("policy", ["reuse", "off"])
def test_a_file_whose_metadata_cannot_be_read_is_set_aside_and_recomputed(runs_root, policy, capsys):
    """Fault injection: flipped bytes in the root object header (bytes 48-576) make h5py raise KeyError
    or OSError from the identity check itself; elsewhere, from the load. Any failure to read a cached
    file means damaged: set aside and recomputed to the same numbers, whatever the cache policy."""
    cfg = sgi_run.compose(runs_root + SMALL + ["plan.shards=1", f"cache={policy}"])
    fresh = sgi_run.run(cfg)
    data = fresh.path.read_bytes()
    header = [48, 130, 250, 333, 470, 576]
    for offset in header + [20, len(data) // 2, len(data) - 40]:
        flipped = bytearray(data)
        flipped[offset] ^= 0x10
        fresh.path.write_bytes(bytes(flipped))
        before = len(list(fresh.run_dir.glob("ensemble.h5.damaged-*")))
        again = sgi_run.run(cfg)             # never raises
        assert np.array_equal(again.ensemble.mean("H"), fresh.ensemble.mean("H")), offset
        set_aside = len(list(fresh.run_dir.glob("ensemble.h5.damaged-*"))) - before
        if policy == "reuse":                 # cache=off recomputes a whole file too, and leaves it be
            assert set_aside == (not again.cached), offset
        if offset in header:
            assert set_aside == 1, offset
        fresh.path.write_bytes(data)
    assert "Traceback" not in capsys.readouterr().err


def test_the_command_lines_identity_check_sets_a_damaged_file_aside(runs_root):
    """``sgi-run`` checks the run directory before Hydra starts: a file it cannot read is damaged there too."""
    from sgi_run import cli
    cfg = sgi_run.compose(runs_root + SMALL)
    fresh = sgi_run.run(cfg)
    flipped = bytearray(fresh.path.read_bytes())
    flipped[130] ^= 0x10
    fresh.path.write_bytes(bytes(flipped))
    cli._check_run_dirs(cli._run_dirs(runs_root + SMALL, [cfg]))      # no refusal: the file is set aside
    assert not fresh.path.exists() and len(list(fresh.run_dir.glob("ensemble.h5.damaged-*"))) == 1


def test_a_truncated_checkpoint_is_set_aside_and_recomputed(runs_root, tmp_path, capsys):
    cfg = sgi_run.compose(runs_root + SMALL)
    whole = sgi_run.run(cfg, run_dir=tmp_path / "whole")
    interrupted_after(2, cfg, tmp_path / "x")
    shard = tmp_path / "x" / "shards" / "shard-00001-of-00003.npz"
    shard.write_bytes(shard.read_bytes()[:200])
    resumed = sgi_run.run(cfg, run_dir=tmp_path / "x")
    assert resumed.shards_resumed == 1
    assert np.array_equal(resumed.ensemble.mean("H"), whole.ensemble.mean("H"))
    [warning] = [line for line in capsys.readouterr().err.splitlines() if "damaged" in line]
    [aside] = (tmp_path / "x" / "shards.damaged").glob("shard-00001-of-00003.npz.damaged-*")
    assert "shard-00001-of-00003.npz is damaged" in warning and f"moved it aside to {aside};" in warning
    assert not (tmp_path / "x" / "shards").exists()          # the run is whole: no checkpoint left behind


def test_checkpoints_are_written_under_unique_temporary_names(runs_root, tmp_path, monkeypatch):
    cfg = sgi_run.compose(runs_root + SMALL)
    temporary = []
    real_replace = os.replace

    def replace(src, dst):
        temporary.append(str(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    setup = sgi_run.config.build(cfg)
    store = runner.checkpoints(cfg, tmp_path, setup.plan)
    from sgi_run.engine.simulate import Simulator
    shard = Simulator(setup.system, setup.integrator, setup.plan).run_shard(0)
    store.save(shard)
    store.save(shard)
    assert len(set(temporary)) == 2 and all(t.endswith(".partial") for t in temporary)


# --- concurrency ------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_two_identical_runs_at_once_compute_once(tmp_path):
    """The second waits for the first's lock, then reuses its file."""
    script = ("import sgi_run; r = sgi_run.run(sgi_run.compose(['output_root=%s', 'progress=off', "
              "'plan.paths=2000', 'plan.T=20', 'plan.shards=4'])); print('cached' if r.cached else 'computed')"
              % (tmp_path / "runs"))
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), outputs
    assert sorted(out.strip() for out, _ in outputs) == ["cached", "computed"]


def test_a_run_finished_or_refused_leaves_no_lock_file(tmp_path):
    """The lock file is there while a run holds it (issue 45: a refused run left its .lock behind)."""
    from sgi_run import cache
    for outcome in (None, sgi_run.ConfigError("executor.address", "tcp://127.0.0.1:1", "a running scheduler")):
        with pytest.raises(type(outcome)) if outcome else contextlib.nullcontext():
            with cache.locked(tmp_path):
                assert (tmp_path / cache.LOCK_NAME).exists()
                if outcome:
                    raise outcome
        assert list(tmp_path.iterdir()) == []


def test_a_process_waiting_on_a_lock_file_its_holder_removed_takes_the_new_one(tmp_path, capsys):
    """The holder removes its lock file as it lets go: the waiter then holds the file at the path, never the removed
    one (which would let a third process create a new file and hold it at the same time)."""
    import fcntl

    from sgi_run import cache
    hold = ("import sys, time; from sgi_run import cache\n"
            "with cache.locked(sys.argv[1]):\n    print('held', flush=True); time.sleep(3)\n")
    holder = subprocess.Popen([sys.executable, "-c", hold, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    with cache.locked(tmp_path):
        assert holder.wait(timeout=60) == 0 and "waiting for it to finish" in capsys.readouterr().err
        third = os.open(tmp_path / cache.LOCK_NAME, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(third, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(third)
    assert list(tmp_path.iterdir()) == []


# --- places that cannot be written ----------------------------------------------------------------------------
def test_an_unwritable_output_root_is_refused_in_one_line():
    with pytest.raises(sgi_run.ConfigError, match="output_root='/proc/x'") as err:
        sgi_run.run(sgi_run.compose(["output_root=/proc/x", "plan.paths=10", "plan.T=1"]))
    assert "\n" not in str(err.value) and "write" in str(err.value)


@pytest.mark.slow
def test_a_finished_run_on_a_read_only_mount_is_shown(read_only):
    source, mount = read_only
    first = sgi_run.run(sgi_run.compose([f"output_root={source}", "progress=off"] + SMALL))
    before = sorted(p.name for p in first.run_dir.iterdir())
    shown = sgi_run.run(sgi_run.compose([f"output_root={mount}", "progress=off"] + SMALL))
    assert shown.cached and np.array_equal(shown.ensemble.mean("H"), first.ensemble.mean("H"))
    assert sorted(p.name for p in first.run_dir.iterdir()) == before
    with pytest.raises(sgi_run.ConfigError, match="output_root") as err:
        sgi_run.run(sgi_run.compose([f"output_root={mount}", "progress=off", "plan.seed=5"] + SMALL))
    assert "\n" not in str(err.value)
