"""``sgi-figures`` as a user meets it: places it cannot write are one line, before any compute."""
import pytest

from sgi_run.figures import cli


@pytest.mark.parametrize("flag", ["--runs-root", "--output"])
def test_an_unwritable_directory_is_refused_in_one_line(flag, tmp_path, capsys):
    args = ["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
            "--output", str(tmp_path / "out")]
    args[args.index(flag) + 1] = "/proc/x"
    assert cli.main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgi-figures: error: {flag}='/proc/x' is not allowed: a directory sgi-run can write")
    assert err.count("\n") == 1 and not list(tmp_path.rglob("ensemble.h5"))


@pytest.mark.parametrize("args, message", [
    (["--executor", "slurm"], "executor.queue=None is not allowed: the SLURM partition the workers' jobs go to"),
    (["--executor", "dask", "--executor-option", "workers=0"], "executor.workers=0 is not allowed: 'auto'"),
    (["--executor", "dask", "--executor-option", "nodes=4"], "executor.nodes=4 is not allowed: a known key"),
])
def test_a_bad_executor_is_refused_in_one_line_before_any_compute(args, message, tmp_path, capsys):
    assert cli.main(["--fidelity", "smoke", "--only", "fig4_5", "--runs-root", str(tmp_path / "runs"),
                     "--output", str(tmp_path / "out"), *args]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sgi-figures: error: {message}") and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_the_executor_reaches_every_run_of_a_figure_and_leaves_its_hash(tmp_path, monkeypatch):
    """--executor reaches every run of the figure, and a run computed on a cluster is the cache of the
    same run here (the executor is not part of the config hash)."""
    from sgi_run.config import config_hash
    from sgi_run.figures import experiment
    [exp] = experiment.discover("experiments", ["fig4_5"])
    here = experiment.compose_runs(exp, "smoke", str(tmp_path))
    there = experiment.compose_runs(exp, "smoke", str(tmp_path), executor=["executor=dask",
                                                                            "executor.address=tcp://10.0.0.5:8786"])
    for run_id in exp.runs:
        assert there[run_id].executor.address == "tcp://10.0.0.5:8786" and here[run_id].executor.name == "local"
        assert config_hash(there[run_id]) == config_hash(here[run_id])
