"""The ``sgi-run`` command line, end to end through Hydra (subprocesses, like a user)."""
import subprocess
import sys

import sgi_run


def sgi_run_cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={tmp_path}/runs"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


def test_single_run_writes_its_run_directory(tmp_path):
    out = sgi_run_cli(tmp_path, "integrator=dirk", "plan.dt=0.5", "plan.paths=64", "plan.T=5")
    assert out.returncode == 0, out.stderr
    [h5] = (tmp_path / "runs" / "kubo-dirk").glob("*/ensemble.h5")
    assert (h5.parent / ".hydra" / "config.yaml").exists() and (h5.parent / "summary.md").exists()
    assert "kubo / dirk" in out.stdout and sgi_run.load(h5).attrs["integrator"] == "dirk"
    # The run directory is named by the config hash, so the same command finds its finished run.
    again = sgi_run_cli(tmp_path, "integrator=dirk", "plan.dt=0.5", "plan.paths=64", "plan.T=5")
    assert again.returncode == 0 and "cached" in again.stdout


def test_multirun_sweeps_every_combination(tmp_path):
    out = sgi_run_cli(tmp_path, "-m", "integrator=midpoint,heun", "plan.dt=0.5,0.1", "plan.paths=16", "plan.T=1")
    assert out.returncode == 0, out.stderr
    runs = sorted(p.parent.parent.name for p in (tmp_path / "runs" / "multirun").glob("*/*/ensemble.h5"))
    assert runs == ["kubo-heun", "kubo-heun", "kubo-midpoint", "kubo-midpoint"]


def test_bad_input_is_one_line_and_nothing_runs(tmp_path):
    out = sgi_run_cli(tmp_path, "-m", "integrator=midpoint,heun", "plan.dt=0.5,-0.1")
    assert out.returncode == 2
    assert out.stderr.strip() == "sgi-run: error: plan.dt=-0.1 is not allowed: a number > 0"
    assert not (tmp_path / "runs").exists()
