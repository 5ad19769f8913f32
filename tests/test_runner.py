import errno
import io
import math
import os

import numpy as np
import pytest

import sgi_run
from sgi_run import runner, store
from sgi_run.systems import Kubo


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_mean_energy_matches_the_exact_mean(runs_root):
    """Midpoint at small dt against (4.2) within 4 Monte Carlo standard errors at every output.

    nu = 0.3 makes E(H) decay visibly; the method's own bias at dt = 0.01 (first order in dt)
    is well under one standard error here."""
    cfg = sgi_run.compose(runs_root + ["system.nu=0.3", "plan.dt=0.01", "plan.T=5", "plan.output_dt=0.5",
                                       "plan.paths=4000"])
    ens = sgi_run.run(cfg).ensemble
    exact = Kubo(nu=0.3).exact_mean_energy(ens.t)
    z = (ens.mean("H") - exact)[1:] / ens.sem("H")[1:]
    assert np.all(np.abs(z) < 4), z
    assert exact[-1] < 0.5 * exact[0]


@pytest.mark.slow
def test_resume_after_interruption_gives_the_uninterrupted_numbers(runs_root, tmp_path):
    overrides = runs_root + ["integrator=heun", "plan.paths=600", "plan.shards=6", "plan.T=2", "plan.keep_paths=3"]
    cfg = sgi_run.compose(overrides)
    finished = []

    def stop_after_two(shard):
        finished.append(shard.shard)
        if len(finished) == 2:
            raise Interrupt

    run_dir = tmp_path / "interrupted"
    with pytest.raises(Interrupt):
        sgi_run.run(cfg, run_dir=run_dir, on_shard_done=stop_after_two)
    assert len(list((run_dir / "shards").glob("shard-*.npz"))) == 2
    assert not (run_dir / "ensemble.h5").exists()

    resumed = sgi_run.run(cfg, run_dir=run_dir)
    assert resumed.shards_resumed == 2 and not (run_dir / "shards").exists()
    whole = sgi_run.run(cfg, run_dir=tmp_path / "whole")
    for name in ("mean", "var", "count"):
        assert np.array_equal(resumed.ensemble.observables["H"][name], whole.ensemble.observables["H"][name])
    assert np.array_equal(resumed.ensemble.paths["q"], whole.ensemble.paths["q"])


@pytest.mark.slow
def test_finished_run_is_a_cache(runs_root):
    cfg = sgi_run.compose(runs_root + ["plan.paths=50", "plan.T=1"])
    first = sgi_run.run(cfg)
    again = sgi_run.run(cfg)
    assert not first.cached and again.cached
    assert np.array_equal(first.ensemble.mean("H"), again.ensemble.mean("H"))


@pytest.mark.slow
def test_summary_files(runs_root):
    result = sgi_run.run(sgi_run.compose(runs_root + ["plan.paths=50", "plan.T=1", "plan.observables=[H,q]"]))
    assert (result.run_dir / "summary.csv").read_text().startswith("observable,t_final,mean,sem")
    rows = {r["observable"]: r for r in result.summary}
    assert set(rows) == {"H", "q"} and rows["H"]["reference"] != "" and rows["q"]["reference"] == ""
    assert rows["H"]["equilibrium"] == ""        # the Kubo oscillator has no invariant measure


@pytest.mark.slow
def test_summary_shows_the_equilibrium_of_a_langevin_run(runs_root):
    result = sgi_run.run(sgi_run.compose(runs_root + ["system=spherical_pendulum", "integrator=csvia", "plan.dt=0.1",
                                                      "plan.T=1", "plan.paths=50", "plan.observables=[two_H]"]))
    row = result.summary[0]
    assert row["equilibrium"] == pytest.approx(4 - 2 / math.tanh(1.0), abs=1e-12)
    assert row["equilibrium_error_in_sem"] == pytest.approx((row["mean"] - row["equilibrium"]) / row["sem"])
    assert row["reference"] == ""


# --- provenance: which numerics code computed a cached run ------------------------------------------
@pytest.mark.slow
def test_a_run_records_the_code_that_computed_it(runs_root):
    from sgi_run.runner import run_code_digest
    cfg = sgi_run.compose(runs_root + ["plan.paths=20", "plan.T=1"])
    result = sgi_run.run(cfg)
    assert result.ensemble.attrs["code_digest"] == run_code_digest(cfg) and len(run_code_digest(cfg)) == 12
    assert not result.stale


@pytest.mark.slow
def test_a_run_by_other_code_is_reused_with_a_warning_or_recomputed(runs_root, monkeypatch, capsys):
    import sgi_run.provenance
    overrides = runs_root + ["plan.paths=20", "plan.T=1"]
    first = sgi_run.run(sgi_run.compose(overrides))
    monkeypatch.setattr(sgi_run.provenance, "code_digest", lambda *classes: "0123456789ab")   # the code changed
    reused = sgi_run.run(sgi_run.compose(overrides))
    assert reused.cached and reused.stale and "other numerics code" in capsys.readouterr().err
    refreshed = sgi_run.run(sgi_run.compose(overrides + ["cache=refresh_stale"]))
    assert not refreshed.cached and refreshed.ensemble.attrs["code_digest"] == "0123456789ab"
    assert np.array_equal(refreshed.ensemble.mean("H"), first.ensemble.mean("H"))   # same seed, same numbers
    assert sgi_run.run(sgi_run.compose(overrides + ["cache=refresh_stale"])).cached   # now current
    assert not sgi_run.run(sgi_run.compose(overrides + ["cache=off"])).cached
    assert first.run_dir == refreshed.run_dir          # the cache policy is not part of the run's identity


def test_an_unknown_cache_policy_is_refused():
    with pytest.raises(sgi_run.ConfigError, match="cache") as err:
        sgi_run.compose(["cache=sometimes"])
    assert "\n" not in str(err.value)


# --- a disk that fills (fault injection) -------------------------------------------------------------------
SHARDED = ["plan.paths=60", "plan.T=2", "plan.shards=3"]


def full_disk_after(monkeypatch, module, name, calls, error=errno.ENOSPC):
    """``module.name`` (a function given an open file first, or a path) fails as a full disk does from
    its ``calls``-th call on, after writing a few bytes."""
    real, seen = getattr(module, name), []

    def failing(target, *args, **kwargs):
        seen.append(target)
        if len(seen) < calls:
            return real(target, *args, **kwargs)
        if hasattr(target, "write"):
            target.write(b"PK\x03\x04 half a file")
        raise OSError(error, os.strerror(error))

    monkeypatch.setattr(module, name, failing)


class HalfFullFile(io.FileIO):
    """A file on a disk that fills half-way through a write."""

    def __init__(self, path, mode):
        super().__init__(path, mode.replace("b", ""))

    def write(self, data):
        super().write(bytes(data)[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def partial_files(directory):
    return [p for p in directory.rglob("*") if ".partial" in p.name]


@pytest.mark.slow
@pytest.mark.parametrize("error, words, advice", [(errno.ENOSPC, "no space left on device", "free space"),
                                                  (errno.EACCES, "cannot write (Permission denied)",
                                                   "make it writable")])
def test_a_full_disk_while_saving_a_shard_is_one_line_and_the_run_resumes(runs_root, tmp_path, monkeypatch,
                                                                         error, words, advice):
    from sgi_run.engine import checkpoint
    cfg = sgi_run.compose(runs_root + SHARDED)
    run_dir = tmp_path / "full"
    full_disk_after(monkeypatch, checkpoint.np, "savez", 2, error)
    with pytest.raises(runner.WriteFailed) as stop:
        sgi_run.run(cfg, run_dir=run_dir)
    assert str(stop.value) == f"{words} in {run_dir}: 1 of 3 shards kept; {advice} and rerun to resume"
    assert partial_files(run_dir) == [] and not (run_dir / "ensemble.h5").exists()
    monkeypatch.undo()
    resumed = sgi_run.run(cfg, run_dir=run_dir)
    whole = sgi_run.run(cfg, run_dir=tmp_path / "whole")
    assert resumed.shards_resumed == 1 and np.array_equal(resumed.ensemble.mean("H"), whole.ensemble.mean("H"))


@pytest.mark.slow
@pytest.mark.parametrize("study", [False, True])
def test_a_full_disk_while_writing_the_result_is_one_line_and_the_run_resumes(runs_root, tmp_path, monkeypatch,
                                                                             study):
    extra = ["plan=convergence", "plan.paths=60", "plan.dts=[0.25,0.125]", "plan.bootstrap=20", "plan.shards=3"] \
        if study else SHARDED
    cfg = sgi_run.compose(runs_root + extra)
    run_dir = tmp_path / "full"
    monkeypatch.setattr(store, "open", HalfFullFile, raising=False)     # what store.replace_atomically opens
    with pytest.raises(runner.WriteFailed) as stop:
        sgi_run.run(cfg, run_dir=run_dir)
    assert str(stop.value) == (f"no space left on device in {run_dir}: 3 of 3 shards kept; "
                               "free space and rerun to resume")
    assert partial_files(run_dir) == [] and not list(run_dir.glob("*.h5"))
    monkeypatch.undo()
    resumed = sgi_run.run(cfg, run_dir=run_dir)
    assert resumed.shards_resumed == 3 and not resumed.cached and not partial_files(run_dir)


# --- issue 25: a run is built once; its kind is one object -------------------------------------------------
def test_a_run_uses_the_setup_its_config_was_validated_with(runs_root, build_calls):
    """``compose_setup`` builds the run (config.build) once; ``run`` runs that BuiltConfig and carries it, and builds
    one itself only when given none (the library API: ``sgi_run.run(sgi_run.compose([...]))``)."""
    from sgi_run.config import compose_setup
    cfg, setup = compose_setup(runs_root + ["plan.paths=50", "plan.T=1"])
    result = runner.run(cfg, setup=setup)
    assert result.setup is setup and not result.cached and len(build_calls) == 1
    again = sgi_run.run(cfg)
    assert again.cached and again.setup.plan.paths == 50 and len(build_calls) == 2


def test_the_run_kind_of_a_plan_is_an_ensembles_or_a_studys(runs_root):
    from sgi_run.config import compose_setup
    _, ensemble = compose_setup(runs_root + ["plan.paths=50"])
    _, study = compose_setup(runs_root + ["plan=convergence", "plan.paths=60", "plan.dts=[0.25,0.125]"])
    assert runner.run_kind_of(ensemble.plan) is runner.ENSEMBLE and runner.run_kind_of(study.plan) is runner.STUDY
    assert [kind.file_name for kind in runner.RUN_KINDS] == ["ensemble.h5", "convergence.h5"]
    assert runner.ENSEMBLE.levels(ensemble.plan) == 0 and runner.STUDY.levels(study.plan) == 2


# --- issue 45: results that must not be silently bad --------------------------------------------------------
def test_a_shard_resaved_with_other_numbers_is_set_aside_and_recomputed(runs_root, tmp_path, capsys):
    """A finished shard re-saved as a valid .npz with its mean times 1.5 was resumed from silently (H's final
    mean off by up to 0.125): its content digest fails, and it is named, set aside and recomputed."""
    cfg = sgi_run.compose(runs_root + SHARDED)
    finished = []

    def stop_after_two(shard):
        finished.append(shard.shard)
        if len(finished) == 2:
            raise Interrupt
    with pytest.raises(Interrupt):
        sgi_run.run(cfg, run_dir=tmp_path / "x", on_shard_done=stop_after_two)
    shard = tmp_path / "x" / "shards" / f"shard-{finished[1]:05d}-of-00003.npz"
    with np.load(shard) as f:
        arrays = {name: f[name] for name in f.files}
    np.savez(shard, **(arrays | {"mean": arrays["mean"] * 1.5}))
    resumed = sgi_run.run(cfg, run_dir=tmp_path / "x")
    whole = sgi_run.run(cfg, run_dir=tmp_path / "whole")
    assert resumed.shards_resumed == 1
    assert np.array_equal(resumed.ensemble.mean("H"), whole.ensemble.mean("H"))
    [warning] = [line for line in capsys.readouterr().err.splitlines() if "damaged" in line]
    assert f"{shard} is damaged (content digest mismatch (an array changed after the file was written))" in warning
    assert list((tmp_path / "x" / "shards.damaged").glob(f"{shard.name}.damaged-*"))


@pytest.mark.slow
def test_an_observable_that_overflows_on_a_finite_state_is_counted_in_the_file_and_the_summary(runs_root):
    """The issue's run: Heun at dt = 0.5 on p^2/2 + q^4 overflows H on paths whose state is still finite."""
    cfg = sgi_run.compose(runs_root + ["system=custom", "system.H='p**2/2 + q**4'", "integrator=heun", "plan.dt=0.5",
                                       "plan.T=20", "system.q0='3*xi1'", "plan.paths=20"])
    result = sgi_run.run(cfg)
    ens = store.load(result.path)
    lost, values = ens.diagnostics["nonfinite_paths"], ens.observables["H"]["nonfinite"]
    assert np.array_equal(values, 20 - ens.observables["H"]["count"]) and np.any(values > lost)
    [row] = result.summary
    assert row["nonfinite_values"] == values[-1]
    assert "observables/H/nonfinite" in (result.run_dir / "summary.md").read_text()


STUDY = ["plan=convergence", "plan.paths=60", "plan.dts=[0.25,0.125]", "plan.bootstrap=20", "plan.shards=3"]


@pytest.mark.slow
@pytest.mark.parametrize("study", [False, True])
def test_a_full_disk_at_the_result_write_leaves_no_summary(runs_root, tmp_path, monkeypatch, study):
    """Disk full at the final write left summary.csv and summary.md without an ensemble.h5: the file is written
    first now, and the summary of the one it replaces goes before it."""
    cfg = sgi_run.compose(runs_root + (STUDY if study else SHARDED))
    kind = runner.run_kind_of(sgi_run.config.build(cfg).plan)
    run_dir = tmp_path / "full"
    sgi_run.run(cfg, run_dir=run_dir)
    assert all((run_dir / name).exists() for name in kind.outputs)

    def full(path, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
    monkeypatch.setattr(store, "write", full)
    with pytest.raises(runner.WriteFailed, match="^no space left on device in "):
        sgi_run.run(sgi_run.compose(runs_root + (STUDY if study else SHARDED) + ["cache=off"]), run_dir=run_dir)
    assert not [name for name in kind.outputs if (run_dir / name).exists()]


@pytest.mark.slow
def test_a_summary_the_disk_could_not_take_is_written_by_the_next_run(runs_root, tmp_path, monkeypatch, capsys):
    """A run stopped between its ensemble.h5 and its summary (the disk filled there) is a finished run: the next
    one shows it and writes its summary, or says it cannot."""
    cfg = sgi_run.compose(runs_root + SHARDED)
    run_dir = tmp_path / "full"
    full_disk_after(monkeypatch, store, "write_bytes_atomically", 2)      # ensemble.h5 is the first
    with pytest.raises(runner.WriteFailed):
        sgi_run.run(cfg, run_dir=run_dir)
    assert (run_dir / "ensemble.h5").exists() and not list(run_dir.glob("summary.*"))
    again = sgi_run.run(cfg, run_dir=run_dir)           # the disk still full: said, the run still shown
    assert again.cached and f"cannot write the summary of {again.path} (No space left on device); rerun to write it" \
        in capsys.readouterr().err
    monkeypatch.undo()
    again = sgi_run.run(cfg, run_dir=run_dir)
    assert again.cached and (run_dir / "summary.csv").read_text().startswith("observable,t_final,mean,sem")
    assert "| H |" in (run_dir / "summary.md").read_text()


@pytest.mark.parametrize("overrides, observables, times", [
    (["plan.T=1", "plan.dt=0.25", "plan.output_dt=0.5"], ("H",), [0.0, 0.5, 1.0]),
    (["plan=convergence", "plan.error=weak", "plan.reference=exact", "integrator=srkw2", "plan.T=2"], ("H",), [2.0]),
    (["plan=convergence", "plan.error=strong", "plan.T=2"], (), [])])
def test_a_run_checks_the_exact_means_its_summary_compares_with(overrides, observables, times):
    """An ensemble compares every observable at every output time; a weak study against the exact mean, at T."""
    plan = sgi_run.config.build(sgi_run.compose(overrides)).plan
    compared = runner.run_kind_of(plan).compared(plan)
    assert tuple(compared[0]) == observables and list(compared[1]) == times
