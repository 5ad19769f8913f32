"""The ``sgi-run`` command line, end to end through Hydra (subprocesses, like a user)."""
import os
import signal
import subprocess
import sys
import time

import pytest

import sgi_run


def sgi_run_cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={tmp_path}/runs"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_single_run_writes_its_run_directory(tmp_path):
    out = sgi_run_cli(tmp_path, "integrator=dirk", "plan.dt=0.5", "plan.paths=64", "plan.T=5")
    assert out.returncode == 0, out.stderr
    [h5] = (tmp_path / "runs" / "kubo-dirk").glob("*/ensemble.h5")
    assert (h5.parent / ".hydra" / "config.yaml").exists() and (h5.parent / "summary.md").exists()
    assert "kubo / dirk" in out.stdout and sgi_run.load(h5).attrs["integrator"] == "dirk"
    # The run directory is named by the config hash, so the same command finds its finished run.
    again = sgi_run_cli(tmp_path, "integrator=dirk", "plan.dt=0.5", "plan.paths=64", "plan.T=5")
    assert again.returncode == 0 and "cached" in again.stdout


@pytest.mark.slow
def test_multirun_sweeps_every_combination_into_the_one_cache(tmp_path):
    out = sgi_run_cli(tmp_path, "-m", "integrator=midpoint,heun", "plan.dt=0.5,0.1", "plan.paths=16", "plan.T=1")
    assert out.returncode == 0, out.stderr
    runs = sorted(p.parent.parent.name for p in (tmp_path / "runs").glob("*/*/ensemble.h5"))
    assert runs == ["kubo-heun", "kubo-heun", "kubo-midpoint", "kubo-midpoint"]
    # A single run of a swept config finds the sweep's result.
    single = sgi_run_cli(tmp_path, "integrator=heun", "plan.dt=0.1", "plan.paths=16", "plan.T=1")
    assert single.returncode == 0 and "cached" in single.stdout


def test_bad_input_is_one_line_and_nothing_runs(tmp_path):
    out = sgi_run_cli(tmp_path, "-m", "integrator=midpoint,heun", "plan.dt=0.5,-0.1")
    assert out.returncode == 2
    assert out.stderr.strip() == "sgi-run: error: plan.dt=-0.1 is not allowed: a number > 0"
    assert not (tmp_path / "runs").exists()


@pytest.mark.slow
def test_help_and_version_are_the_apps_own():
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith(f"sgi-run {sgi_run.__version__}")
    assert "powered by Hydra" not in out.stdout
    for expected in ("sgi-run -m integrator=midpoint,dirk,heun", "Config groups", "midpoint", "langevin_double_well",
                     "plan=convergence"):
        assert expected in out.stdout
    version = subprocess.run([sys.executable, "-m", "sgi_run.cli", "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"sgi-run {sgi_run.__version__}"


@pytest.mark.slow
def test_cfg_job_validates(tmp_path):
    show = lambda *args: subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, "--cfg", "job"], cwd=tmp_path,
                                        capture_output=True, text=True, timeout=300)
    out = show("plan.dt=-1")
    assert out.returncode == 2 and out.stderr.strip().startswith("sgi-run: error: plan.dt=-1")
    good = show("plan.dt=0.5")
    assert good.returncode == 0 and "dt: 0.5" in good.stdout and not (tmp_path / "outputs").exists()


@pytest.mark.slow
def test_another_configs_directory_is_refused_before_hydra_writes_to_it(tmp_path):
    first = sgi_run_cli(tmp_path, "plan.paths=50", "plan.T=2", "plan.seed=7", "hydra.run.dir=x")
    assert first.returncode == 0, first.stderr
    saved = (tmp_path / "x" / ".hydra" / "config.yaml").read_text()
    other = sgi_run_cli(tmp_path, "plan.paths=50", "plan.T=1", "plan.seed=8", "hydra.run.dir=x")
    assert other.returncode == 2 and "cached" not in other.stdout
    [line] = other.stderr.strip().splitlines()
    assert line.startswith("sgi-run: error: hydra.run.dir='x'") and "holds the result of config" in line
    assert (tmp_path / "x" / ".hydra" / "config.yaml").read_text() == saved


def test_an_unwritable_output_root_is_one_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "plan.paths=10", "output_root=/proc/x"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    [line] = out.stderr.strip().splitlines()
    assert line.startswith("sgi-run: error: output_root='/proc/x' is not allowed: a directory sgi-run can write")


@pytest.mark.slow
def test_a_run_in_which_every_path_failed_says_so_and_exits_1(tmp_path):
    """SVIB at c h = 7.5 > 2 blows up (Bou-Rabee & Owhadi 2007): every path is non-finite by t = 3. Said loudly, exit 1,
    also when the same command finds the run in the cache."""
    args = ("system=langevin_double_well", "integrator=svib", "system.c=30", "plan.dt=0.25", "plan.T=5",
            "plan.paths=40")
    for attempt in range(2):
        out = sgi_run_cli(tmp_path, *args)
        assert out.returncode == 1, out.stderr
        assert "FAILED: every one of the 40 paths went non-finite" in " ".join(out.stdout.split())
        assert ("cached (failed run)" in out.stdout) == (attempt == 1)


@pytest.mark.slow
def test_an_ascii_locale_gets_the_summary_in_ascii(tmp_path):
    """LANG=C PYTHONIOENCODING=ascii: the summary's ± raised UnicodeEncodeError after the run was saved."""
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "plan.paths=10", "plan.T=1", f"output_root={tmp_path}"],
                         env={**os.environ, "LANG": "C", "LC_ALL": "C", "PYTHONIOENCODING": "ascii"},
                         capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert " +/- " in out.stdout and out.stdout.isascii()


@pytest.mark.slow
def test_progress_lines_without_a_terminal(tmp_path):
    out = sgi_run_cli(tmp_path, "plan.paths=200", "plan.T=2")
    assert out.returncode == 0
    lines = out.stderr.splitlines()
    assert lines[0].startswith("sgi-run: kubo/midpoint: 200 paths x 20 steps = 4e+03 path-steps in 1 shard(s) "
                               "of up to 200 paths; about ")
    assert lines[0].endswith(" of memory")
    assert lines[-1].startswith("sgi-run: kubo/midpoint: 100% (4e+03 of 4e+03 path-steps), ")
    assert "path-steps/s" in lines[-1] and lines[-1].endswith("left")


def _interrupt(tmp_path, sig):
    """Start a 20-shard run, send ``sig`` once a shard is on disk, return (process output, run dir)."""
    args = ["plan.paths=20000", "plan.shard_size=1000", "plan.T=200", "integrator=heun", "progress=off"]
    tmp_path.mkdir()
    # The child takes Ctrl-C as a terminal would deliver it, even when this test runs in a background job
    # (whose shell sets SIGINT to be ignored, a disposition children inherit; a handled signal is reset
    # to its default at exec).
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={tmp_path}/runs"],
                                cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, before)
    deadline = time.time() + 240
    while not list((tmp_path / "runs").glob("*/*/shards/shard-*.npz")) and time.time() < deadline:
        time.sleep(0.05)
    proc.send_signal(sig)
    _out, err = proc.communicate(timeout=240)
    return proc.returncode, err, args


@pytest.mark.slow
def test_ctrl_c_and_sigterm_keep_the_finished_shards_and_say_so(tmp_path):
    for sig, status in ((signal.SIGINT, 130), (signal.SIGTERM, 143)):
        code, err, args = _interrupt(tmp_path / sig.name, sig)
        assert code == status, err
        [line] = err.strip().splitlines()
        assert line.startswith("sgi-run: interrupted: ") and "of 20 shard(s) finished and kept in" in line
        assert "running the same command again resumes" in line
        kept = int(line.split("interrupted: ")[1].split(" of ")[0])
        assert kept >= 1 and len(list((tmp_path / sig.name / "runs").glob("*/*/shards/shard-*.npz"))) == kept
    resumed = sgi_run_cli(tmp_path / "SIGINT", *args)
    assert resumed.returncode == 0 and "resumed" in resumed.stdout


@pytest.mark.slow
def test_a_finished_run_on_a_read_only_mount_is_shown(read_only, tmp_path):
    source, mount = read_only
    args = ["plan.paths=50", "plan.T=2"]
    first = subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={source}"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    shown = subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, f"output_root={mount}"], cwd=tmp_path,
                           capture_output=True, text=True, timeout=300)
    assert shown.returncode == 0 and "cached" in shown.stdout and "Traceback" not in shown.stderr, shown.stderr
    other = subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, "plan.seed=3", f"output_root={mount}"],
                           cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert other.returncode == 2 and len(other.stderr.strip().splitlines()) == 1


# --- issue 14: sweeps through Hydra's launcher plugins --------------------------------------------------
@pytest.mark.slow
def test_a_joblib_sweep_equals_the_sequential_one(tmp_path):
    """Four jobs in parallel processes (hydra-joblib-launcher): each float64, filed by its config hash,
    with the numbers the basic launcher computes one after another."""
    sweep = ["-m", "integrator=midpoint,heun", "plan.dt=0.5,0.25", "plan.paths=2000", "plan.T=4",
             "plan.keep_paths=2", "progress=off"]
    for name in ("joblib", "basic"):
        (tmp_path / name).mkdir()
    parallel = sgi_run_cli(tmp_path / "joblib", *sweep, "hydra/launcher=joblib", "hydra.launcher.n_jobs=2")
    assert parallel.returncode == 0, parallel.stderr
    assert "Joblib.Parallel(n_jobs=2" in parallel.stdout + parallel.stderr
    sequential = sgi_run_cli(tmp_path / "basic", *sweep)
    assert sequential.returncode == 0, sequential.stderr
    files = {p.relative_to(tmp_path / "joblib" / "runs"): p for p in (tmp_path / "joblib" / "runs").glob("*/*/ensemble.h5")}
    assert len(files) == 4
    for name, path in files.items():
        a, b = sgi_run.load(path), sgi_run.load(tmp_path / "basic" / "runs" / name)
        for stat in ("mean", "var", "count"):
            assert (a.observables["H"][stat] == b.observables["H"][stat]).all()
        assert (a.paths["q"] == b.paths["q"]).all()
    again = sgi_run_cli(tmp_path / "joblib", *sweep, "hydra/launcher=joblib")
    assert again.returncode == 0 and again.stdout.count("cached") == 4


def test_an_unknown_launcher_is_one_line(tmp_path):
    out = sgi_run_cli(tmp_path, "-m", "hydra/launcher=jobllib", "plan.dt=0.5,0.25")
    assert out.returncode == 2
    assert out.stderr.strip() == ("sgi-run: error: hydra/launcher='jobllib' is not allowed: one of "
                                  "['basic', 'joblib', 'slurm_sweep', 'submitit_local', 'submitit_slurm']")
    assert not (tmp_path / "runs").exists()


def test_the_slurm_sweep_example_composes_into_submitits_slurm_launcher():
    """conf/hydra/launcher/slurm_sweep.yaml, as Hydra composes it, instantiates the SLURM launcher
    (no cluster is needed to build it; submitting needs one)."""
    from hydra import compose, initialize_config_dir
    from hydra.utils import instantiate

    from sgi_run.config import CONF_DIR, register_resolvers
    register_resolvers()
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        cfg = compose("config", overrides=["hydra/launcher=slurm_sweep", "hydra.launcher.partition=compute",
                                           "integrator=heun"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_ == "hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher"
    assert (launcher.partition, launcher.timeout_min, launcher.cpus_per_task, launcher.tasks_per_node) == \
        ("compute", 120, 8, 1)
    from hydra_plugins.hydra_submitit_launcher.submitit_launcher import SlurmLauncher
    assert isinstance(instantiate(launcher), SlurmLauncher)


@pytest.mark.slow
def test_unconverged_steps_are_said_after_the_run_and_when_it_is_shown_again(tmp_path):
    args = ("system=van_der_pol", "integrator=midpoint", "integrator.on_fail=count", "integrator.max_iter=1",
            "plan.paths=20", "plan.T=1")
    for attempt in range(2):
        out = sgi_run_cli(tmp_path, *args)
        assert out.returncode == 0, out.stderr
        assert "200 of 200 path-steps did not converge (newton, max_iter=1" in " ".join(out.stdout.split())
        assert ("cached" in out.stdout) == (attempt == 1)


# --- issue 24: the command line as Hydra composes it ------------------------------------------------------
def _main(monkeypatch, capsys, *args):
    """``sgi-run *args`` in this process, for input refused before Hydra runs: (exit status, stderr)."""
    from sgi_run import cli
    monkeypatch.setattr(sys, "argv", ["sgi-run", *args])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    return stop.value.code, capsys.readouterr().err


@pytest.fixture
def config_dir(tmp_path):
    """A --config-dir: a plan option of its own, a primary config with a bad value, files YAML cannot read."""
    directory = tmp_path / "more"
    (directory / "plan").mkdir(parents=True)
    (directory / "plan" / "small.yaml").write_text("defaults:\n  - default\n  - _self_\npaths: 10\ndt: 0.5\nT: 1.0\n"
                                                   "output_dt: 0.5\n")
    (directory / "plan" / "broken.yaml").write_text("paths: 10\ndt: [0.5\n")
    (directory / "bad.yaml").write_text("defaults:\n  - config\n  - _self_\nplan:\n  paths: -1\n")
    (directory / "unreadable.yaml").write_text("defaults:\n  - config\n  - _self_\nplan:\n  paths: 10\n\tdt: 1\n")
    return directory


def test_a_config_dirs_options_are_allowed_and_listed(config_dir, tmp_path, monkeypatch, capsys):
    code, err = _main(monkeypatch, capsys, "-cd", str(config_dir), "plan=smal", f"output_root={tmp_path}/runs")
    assert code == 2
    assert err == "sgi-run: error: plan='smal' is not allowed: one of ['broken', 'convergence', 'default', 'small']\n"
    shown = sgi_run_cli(tmp_path, "--config-dir", str(config_dir), "plan=small", "--cfg", "job")
    assert shown.returncode == 0, shown.stderr
    assert "paths: 10" in shown.stdout and "dt: 0.5" in shown.stdout and not (tmp_path / "runs").exists()


@pytest.mark.parametrize("name, show", [(["--config-name", "bad"], ()), (["-cn", "bad"], ("--cfg", "job")),
                                        (["--config-name=bad"], ("-m",))])
def test_a_config_names_values_are_validated(name, show, config_dir, tmp_path, monkeypatch, capsys):
    code, err = _main(monkeypatch, capsys, *show, "-cd", str(config_dir), *name, f"output_root={tmp_path}/runs")
    assert code == 2 and err.startswith("sgi-run: error: plan.paths=-1 is not allowed: ") and err.count("\n") == 1
    assert not (tmp_path / "runs").exists()


def test_an_unknown_config_name_is_one_line(config_dir, tmp_path, monkeypatch, capsys):
    code, err = _main(monkeypatch, capsys, "--config-name", "nonexistent", f"output_root={tmp_path}/runs")
    assert (code, err) == (2, "sgi-run: error: --config-name='nonexistent' is not allowed: one of ['config']\n")
    code, err = _main(monkeypatch, capsys, "-cd", str(config_dir), "-cn", "nonexistent")
    assert err == ("sgi-run: error: --config-name='nonexistent' is not allowed: "
                   "one of ['bad', 'config', 'unreadable']\n")
    code, err = _main(monkeypatch, capsys, "-cd", str(tmp_path / "nowhere"), "plan.paths=10")
    assert (code, err) == (2, f"sgi-run: error: --config-dir='{tmp_path / 'nowhere'}' is not allowed: "
                              "an existing directory\n")
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("flag", [["--config-dir", "{mine}"], ["-cd={mine}", "-cn", "config"]])
def test_a_config_dir_file_of_a_built_in_name_is_refused_not_ignored(flag, tmp_path, monkeypatch, capsys):
    """Hydra finds conf/'s system/kubo.yaml (and config.yaml) before the --config-dir's: never run the built-in
    physics in place of the user's (issue 45)."""
    from sgi_run.config import CONF_DIR
    mine = tmp_path / "mine"
    (mine / "system").mkdir(parents=True)
    (mine / "system" / "kubo.yaml").write_text("name: kubo\nnu: 0.9\n")
    code, err = _main(monkeypatch, capsys, *(f.format(mine=mine) for f in flag), f"output_root={tmp_path}/runs")
    assert (code, err) == (2, f"sgi-run: error: --config-dir='{mine}' is not allowed: configs of names of their own: "
                              f"its system/kubo.yaml would be ignored, as Hydra finds {CONF_DIR}/system/kubo.yaml "
                              "first (name yours my_kubo.yaml and choose system=my_kubo)\n")
    assert not (tmp_path / "runs").exists()


def test_a_blank_config_dir_is_refused_in_one_line(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, err = _main(monkeypatch, capsys, "--config-dir=", "plan.paths=10", f"output_root={tmp_path}/runs")
    assert (code, err) == (2, "sgi-run: error: --config-dir='' is not allowed: a value (Adds an additional config "
                              "dir to the config search path)\n")
    assert not (tmp_path / "runs").exists()


def test_a_yaml_syntax_error_is_one_line_naming_the_file_line_and_column(config_dir, tmp_path, monkeypatch, capsys):
    import shutil

    from sgi_run.config import CONF_DIR
    conf = tmp_path / "conf"      # a copy of conf/ with one of its own files broken
    shutil.copytree(CONF_DIR, conf)
    (conf / "plan" / "default.yaml").write_text("paths: 10\nseed: {0\n")
    # At the end of a file the parser stops after the last line: the line named is where the unfinished part began.
    for args, where, says in (
            (["-cd", str(config_dir), "plan=broken"], f"{config_dir}/plan/broken.yaml:2:5='dt: [0.5'",
             "while parsing a flow sequence, expected ',' or ']', but got '<stream end>'"),
            (["-cd", str(config_dir), "-cn", "unreadable"], f"{config_dir}/unreadable.yaml:6:1='dt: 1'",
             "found character '\\t' that cannot start any token"),
            (["-cp", str(conf), "plan.seed=1"], f"{conf}/plan/default.yaml:2:7='seed: {{0'",
             "while parsing a flow mapping")):
        code, err = _main(monkeypatch, capsys, *args, f"output_root={tmp_path}/runs")
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith(f"sgi-run: error: {where} is not allowed: valid YAML (") and says in err, err
    assert not (tmp_path / "runs").exists()


def test_cfg_is_hydras_flag_anywhere_on_the_line(tmp_path):
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "plan.dt=0.5", "--cfg", "job", "integrator=dirk",
                          "-cd", str(tmp_path), "plan.T=2"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "dt: 0.5" in out.stdout and "name: dirk" in out.stdout and "T: 2" in out.stdout
    assert not (tmp_path / "outputs").exists()


@pytest.mark.slow
def test_the_heavy_top_shows_the_casimirs_drift_at_round_off_for_tmk_not_for_the_trapezoidal_rule(
        tmp_path, monkeypatch, capsys):
    """``sgi-run system=heavy_top integrator=tmk`` (fewer paths, a shorter T) prints what the method preserves: the
    largest drift of C1 = pi.gamma and C2 = |gamma|^2 over every step, round-off for TMK; the trapezoidal rule's
    is its error."""
    from sgi_run import cli
    shown = {}
    for method in ("tmk", "lp_trapezoidal"):
        monkeypatch.setattr(sys, "argv", ["sgi-run", "system=heavy_top", f"integrator={method}", "plan.paths=40",
                                          "plan.T=2", f"output_root={tmp_path}/runs", "progress=off"])
        cli.main()
        out = capsys.readouterr().out
        assert "largest" in out and "drift" in out, out
        rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip().startswith(("C1", "C2"))}
        shown[method] = {name: float(cells[-1]) for name, cells in rows.items()}
    assert shown["tmk"].keys() == shown["lp_trapezoidal"].keys() == {"C1", "C2"}
    assert all(0 < drift < 1e-13 for drift in shown["tmk"].values()), shown
    assert all(drift > 1e-6 for drift in shown["lp_trapezoidal"].values()), shown


@pytest.mark.slow
def test_piped_output_is_never_wrapped(tmp_path, monkeypatch, capsys):
    """Into a pipe or a file (not a terminal), a line stays one line, however long: the last line
    names the file and where it ran, for scripts and logs to read."""
    from sgi_run import cli
    root = tmp_path / ("a-long-directory-name-" * 4) / "runs"
    monkeypatch.setattr(sys, "argv", ["sgi-run", f"output_root={root}", "plan.paths=10", "plan.T=1", "progress=off"])
    cli.main()
    out = capsys.readouterr().out
    last = out.rstrip("\n").splitlines()[-1]
    assert last.startswith(f"wrote {root}/kubo-midpoint/") and "/ensemble.h5; ran on local" in last


def test_a_full_disk_is_one_line_and_exit_status_1(tmp_path, monkeypatch, capsys):
    """Fault injection: the disk fills while the second shard is saved (``tests/test_runner.py`` has the rest)."""
    import errno
    import os

    from sgi_run.engine import checkpoint
    real_savez, calls = checkpoint.np.savez, []

    def savez(f, **arrays):
        calls.append(f)
        if len(calls) == 2:
            f.write(b"PK half a shard")
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_savez(f, **arrays)

    monkeypatch.setattr(checkpoint.np, "savez", savez)
    run_dir = tmp_path / "x"
    code, err = _main(monkeypatch, capsys, "plan.paths=60", "plan.T=2", "plan.shards=3", "progress=off",
                      f"hydra.run.dir={run_dir}")
    assert code == 1 and "Traceback" not in err
    assert err.strip().splitlines()[-1] == (f"sgi-run: error: no space left on device in {run_dir}: 1 of 3 shards "
                                            "kept; free space and rerun to resume")
    assert not [p for p in run_dir.rglob("*") if ".partial" in p.name]


def test_another_configs_checkpoints_are_refused_before_hydra_writes_to_the_directory(tmp_path, monkeypatch, capsys):
    run_dir = tmp_path / "x"
    small = ["plan.paths=60", "plan.T=2", "plan.shards=3", "progress=off", f"output_root={tmp_path}/runs"]
    finished = []

    def stop(shard):
        finished.append(shard)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):      # an interrupted run of seed 1 keeps one shard
        sgi_run.run(sgi_run.compose(small + ["plan.seed=1"]), run_dir=run_dir, on_shard_done=stop)
    (run_dir / ".hydra").mkdir()
    (run_dir / ".hydra" / "config.yaml").write_text("the interrupted run's config\n")
    code, err = _main(monkeypatch, capsys, *small, "plan.seed=2", f"hydra.run.dir={run_dir}")
    assert code == 2
    [line] = err.strip().splitlines()
    assert line.startswith(f"sgi-run: error: hydra.run.dir='{run_dir}' is not allowed: a directory for config ")
    # The shards kept are those that finished: shards run at once, so under load not always shard 0.
    assert any(f"its checkpoint shard-{r.shard:05d}-of-00003.npz is of config" in line for r in finished)
    assert (run_dir / ".hydra" / "config.yaml").read_text() == "the interrupted run's config\n"


def test_a_resume_part_way_through_a_shard_says_so(tmp_path, monkeypatch, capsys):
    from sgi_run import runner
    from sgi_run.engine.ensemble import run_shards
    from sgi_run.engine.simulate import Simulator
    run_dir = tmp_path / "x"
    overrides = ["integrator=heun", "plan.paths=20", "plan.shards=2", "plan.T=2", "plan.dt=0.1", "plan.output_dt=0.1",
                 "plan.checkpoint_every=5", "progress=off", f"output_root={tmp_path}/runs"]
    cfg = sgi_run.compose(overrides)
    setup = sgi_run.config.build(cfg)
    outputs = []

    def stop(paths):                      # shard 0 finished, shard 1 at output 7 (its progress saved at 5)
        outputs.append(paths)
        if len(outputs) == 20 + 7:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_shards(Simulator(setup.system, setup.integrator, setup.plan),
                   runner.checkpoints(cfg, run_dir, setup.plan), on_output=stop)
    monkeypatch.setattr(sys, "argv", ["sgi-run", *overrides, f"hydra.run.dir={run_dir}"])
    from sgi_run import cli
    cli.main()
    last = " ".join(capsys.readouterr().out.split()).rsplit("wrote ", 1)[1]
    assert "(resumed 1 finished shard(s) and 1 part-way (from step 5 of 20) of an interrupted run)" in last


@pytest.mark.parametrize("argv, start", [
    (["--bogus"], "sgi-run: error: argument='--bogus' is not allowed: a flag of sgi-run: one of ["),
    (["plan.dt=0.5", "-x=1"], "sgi-run: error: argument='-x=1' is not allowed: a flag of sgi-run: one of ["),
    (["-m", "plan.dt=0.5,0.25", "--cfg=job"],
     "sgi-run: error: argument='--multirun --cfg' is not allowed: one of ['--run', '--multirun', '--cfg', "),
])
def test_a_flag_hydra_would_refuse_with_a_usage_block_or_a_traceback_is_one_line(argv, start, tmp_path, monkeypatch,
                                                                                   capsys):
    from sgi_run import cli
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", ["sgi-run", *argv])
    with pytest.raises(SystemExit) as stop:
        cli.main()
    err = capsys.readouterr().err
    assert stop.value.code == 2 and err.startswith(start) and err.count("\n") == 1
    assert not (tmp_path / "outputs").exists()


# --- issue 25: a run is built once -------------------------------------------------------------------------------
def test_each_job_of_a_command_line_is_built_once(tmp_path, monkeypatch, capsys, build_calls):
    """Validation builds each job's system, integrator and plan (config.build) once; the job runs that BuiltConfig."""
    from sgi_run import cli
    args = ["integrator=heun", "plan.paths=10", "plan.T=1", "progress=off", f"output_root={tmp_path}/runs"]
    monkeypatch.setattr(sys, "argv", ["sgi-run", *args])
    cli.main()
    assert "wrote " in capsys.readouterr().out and len(build_calls) == 1
    monkeypatch.setattr(sys, "argv", ["sgi-run", "-m", *args, "plan.seed=5,6"])
    cli.main()
    assert capsys.readouterr().out.count("wrote ") == 2 and len(build_calls) == 3


# --- issue 44: a system of one's own from a Python module ------------------------------------------------------
QUARTIC_MODULE = """\
import dataclasses

import jax.numpy as jnp

import sgi_run
from sgi_run.systems import CanonicalSystem


@dataclasses.dataclass(frozen=True)
class Quartic(CanonicalSystem):
    sigma: float = 0.1
    q0: float = 1.0

    def hamiltonian(self, q, p):
        return jnp.sum(p**2) / 2 + {k} * jnp.sum(q**4) / 4

    def noise_hamiltonians(self, q, p):
        return jnp.array([self.sigma * jnp.sum(q)])

    def initial_state(self, key):
        return jnp.array([self.q0, 0.0])


sgi_run.register_system("{name}", Quartic)
"""


@pytest.mark.slow
def test_a_module_of_ones_own_systems_runs_and_its_edit_is_never_served_from_the_cache(tmp_path):
    """sgi-run --module FILE --config-dir DIR: the file registers the class, DIR's system/<name>.yaml chooses it;
    the same command after the file changed computes again (its code is part of the run's identity)."""
    (tmp_path / "conf" / "system").mkdir(parents=True)
    (tmp_path / "conf" / "system" / "quartic.yaml").write_text("name: quartic_mine\nsigma: 0.2\nq0: 1.5\n")
    module = tmp_path / "quartic_mine.py"
    module.write_text(QUARTIC_MODULE.format(k=1.0, name="quartic_mine"))
    args = ["--module", str(module), "--config-dir", str(tmp_path / "conf"), "system=quartic", "plan.paths=50",
            "plan.T=2", "progress=off"]
    first = sgi_run_cli(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    assert "quartic_mine / midpoint" in first.stdout
    [run_dir] = (tmp_path / "runs" / "quartic_mine-midpoint").iterdir()
    h0 = sgi_run.load(run_dir).mean("H")[0]
    assert h0 == pytest.approx(1.5**4 / 4)
    assert "cached" in sgi_run_cli(tmp_path, *args).stdout.lower()
    module.write_text(QUARTIC_MODULE.format(k=2.0, name="quartic_mine"))
    again = sgi_run_cli(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    runs = sorted((tmp_path / "runs" / "quartic_mine-midpoint").iterdir())
    assert len(runs) == 2
    assert sorted(float(sgi_run.load(r).mean("H")[0]) for r in runs) == pytest.approx([1.5**4 / 4, 2 * 1.5**4 / 4])


def test_a_module_that_is_not_a_python_file_is_refused_in_one_line(tmp_path):
    done = sgi_run_cli(tmp_path, "--module", str(tmp_path / "nothing.py"))
    assert done.returncode == 2 and done.stderr == (
        f"sgi-run: error: --module='{tmp_path / 'nothing.py'}' is not allowed: a Python file (.py) that registers "
        "systems (sgi_run.register_system)\n")


# --- issue 45: a run never writes over a user's files -----------------------------------------------------------
@pytest.mark.parametrize("typed, allowed", [
    ("hydra.run.dir=''", "a directory (a non-empty path)"),
    ("hydra.run.dir=", "a directory (a non-empty path)"),
    ("hydra.run.dir=.", "a new or empty directory, or one a run was made in (. holds README.md, summary.md: not a "
                        "run's files)"),
])
def test_a_run_directory_of_the_users_own_files_is_refused_and_left_as_it_was(tmp_path, typed, allowed):
    (tmp_path / "summary.md").write_text("mine\n")
    (tmp_path / "README.md").write_text("# my project\n")
    done = subprocess.run([sys.executable, "-m", "sgi_run.cli", typed, "plan.paths=10", "plan.T=1"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    key, _, value = typed.partition("=")
    assert done.returncode == 2 and done.stderr == f"sgi-run: error: {key}={value!r} is not allowed: {allowed}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["README.md", "summary.md"]
    assert (tmp_path / "summary.md").read_text() == "mine\n"


def test_a_run_directory_a_run_was_made_in_is_still_reused(tmp_path):
    first = sgi_run_cli(tmp_path, f"hydra.run.dir={tmp_path / 'here'}", "plan.paths=10", "plan.T=1", "progress=off")
    assert first.returncode == 0, first.stderr
    again = sgi_run_cli(tmp_path, f"hydra.run.dir={tmp_path / 'here'}", "plan.paths=10", "plan.T=1", "progress=off")
    assert again.returncode == 0 and "cached" in again.stdout.lower(), again.stdout + again.stderr


# --- issue 45: the run directory is the run's once it holds its lock --------------------------------------------
def test_a_run_refused_in_its_directory_leaves_nothing_there(tmp_path, monkeypatch, capsys):
    """A scheduler that does not answer refuses the run in its directory: no .hydra/ nor .lock left behind."""
    run_dir = tmp_path / "x"
    run_dir.mkdir()
    code, err = _main(monkeypatch, capsys, "executor=dask", "executor.address=tcp://127.0.0.1:1",
                      "executor.connect_timeout=1", "plan.paths=10", "plan.T=1", f"hydra.run.dir={run_dir}")
    assert code == 2 and err.count("\n") == 1
    assert err.startswith("sgi-run: error: executor.address='tcp://127.0.0.1:1' is not allowed: the address of a "
                          "running dask scheduler (none answered within 1 s")
    assert list(run_dir.iterdir()) == []


def test_a_run_that_waited_for_another_configs_run_in_its_directory_wrote_nothing_there(tmp_path):
    """Two configs started at once in one hydra.run.dir: the second waits for the first's lock, is refused once
    the first's result is there, and has written nothing beside it (its .hydra/ over the first's)."""
    import os
    import shutil

    from sgi_run import cache
    small = ["plan.paths=10", "plan.T=1", "progress=off"]
    sgi_run.run(sgi_run.compose([*small, "plan.seed=1"]), run_dir=tmp_path / "first")
    run_dir = tmp_path / "x"
    with cache.locked(run_dir):          # the first config's run, computing there
        second = subprocess.Popen([sys.executable, "-m", "sgi_run.cli", *small, "plan.seed=2",
                                   f"hydra.run.dir={run_dir}"], cwd=tmp_path, stderr=subprocess.PIPE, text=True)
        said = iter(second.stderr.readline, "")
        assert any("waiting for it to finish" in line for line in said)
        assert os.listdir(run_dir) == [cache.LOCK_NAME]
        shutil.copy(tmp_path / "first" / "ensemble.h5", run_dir)
    _, err = second.communicate(timeout=300)
    assert second.returncode == 2 and err.count("\n") == 1 and "holds the result of config" in err, err
    assert os.listdir(run_dir) == ["ensemble.h5"]


@pytest.mark.parametrize("subdir, record", [([], ".hydra"), (["hydra.output_subdir=meta"], "meta"),
                                            (["hydra.output_subdir=null"], None)])
def test_the_jobs_record_goes_where_hydra_output_subdir_says(subdir, record, tmp_path, monkeypatch, capsys):
    """The run writes Hydra's record of the job itself (Hydra would before the run holds its directory)."""
    import yaml

    from sgi_run import cli
    run_dir = tmp_path / "x"
    monkeypatch.setattr(sys, "argv", ["sgi-run", "plan.paths=10", "plan.T=1", "plan.seed=3", "progress=off",
                                      f"hydra.run.dir={run_dir}", *subdir])
    cli.main()
    kept = {p.name for p in run_dir.iterdir() if p.is_dir()}
    assert kept == ({record} if record else set())
    if record:
        assert yaml.safe_load((run_dir / record / "config.yaml").read_text())["plan"]["seed"] == 3
        assert "plan.seed=3" in yaml.safe_load((run_dir / record / "overrides.yaml").read_text())
        assert yaml.safe_load((run_dir / record / "hydra.yaml").read_text())["hydra"]["run"]["dir"] == str(run_dir)


@pytest.mark.parametrize("sweep, left", [([], []), (["-m", "plan.seed=1,2"], ["multirun.yaml"])])
def test_a_refused_run_leaves_no_directory_this_command_created(sweep, left, tmp_path, monkeypatch, capsys):
    """The run directories (and their parents) that the command made for runs it was refused are gone again;
    a sweep leaves only Hydra's record of the sweep (multirun.yaml, in output_root)."""
    code, err = _main(monkeypatch, capsys, *sweep, "executor=dask", "executor.address=tcp://127.0.0.1:1",
                      "executor.connect_timeout=1", "plan.paths=10", "plan.T=1", f"output_root={tmp_path}/runs")
    assert code == 2 and err.startswith("sgi-run: error: executor.address=") and err.count("\n") == 1
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == left
    assert [p for p in tmp_path.rglob("*") if p.is_dir()] == ([tmp_path / "runs"] if left else [])


# --- issue 45: Hydra's flags, sweeps and launchers ---------------------------------------------------------------
def _refused_in_one_line(monkeypatch, capsys, tmp_path, *args):
    """``sgi-run *args`` in this process (in ``tmp_path``), refused before any compute: its one line on stderr."""
    monkeypatch.chdir(tmp_path)
    code, err = _main(monkeypatch, capsys, *args)
    assert code == 2 and err.startswith("sgi-run: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and "usage:" not in err
    assert not (tmp_path / "outputs").exists()
    return err.removeprefix("sgi-run: error: ").rstrip("\n")


def _flags_of_sgi_run():
    """Every flag of Hydra's parser (what hydra.main reads) and every one ``sgi-run --help`` lists, each with a
    missing or a bad value: (the flag's names, the words typed)."""
    import re

    from hydra._internal.utils import get_args_parser

    from sgi_run.cli import _help
    actions = {name: action for action in get_args_parser()._actions for name in action.option_strings}
    [options] = [line for line in _help().splitlines() if line.startswith("Options:")]
    listed = set(re.findall(r"(?<![\w-])--?[a-z][a-z-]*", options))
    assert listed - set(actions) == {"--module"}      # sgi-run's own, which takes a file
    for flag in sorted(set(actions) | listed):
        names, nargs = (actions[flag].option_strings, actions[flag].nargs) if flag in actions else ([flag], None)
        if nargs == 0:
            cases = [[f"{flag}=x"]]
        elif nargs == "?":
            cases = [[f"{flag}=nonexistent"]]
        else:
            cases = [[flag], [flag, "nonexistent"]]
        yield from (pytest.param(names, args, id=" ".join(args)) for args in cases)


@pytest.mark.parametrize("names, args", list(_flags_of_sgi_run()))
def test_every_flag_with_a_missing_or_bad_value_is_one_line(names, args, tmp_path, monkeypatch, capsys):
    line = _refused_in_one_line(monkeypatch, capsys, tmp_path, *args)
    assert line.startswith(tuple(f"{name}=" for name in names)), line


def _refused_with(monkeypatch, capsys, tmp_path, args):
    """The one line ``sgi-run *args`` is refused with on a machine without SLURM, where a Hydra pickle and a
    file that is none lie in the working directory."""
    import pickle
    monkeypatch.setenv("PATH", str(tmp_path))     # no srun, no sbatch: not a SLURM machine
    monkeypatch.delenv("COMP_LINE", raising=False)
    (tmp_path / "summary.md").write_text("not a pickle\n")
    (tmp_path / "config.pickle").write_bytes(pickle.dumps(None))
    return _refused_in_one_line(monkeypatch, capsys, tmp_path, *args)


@pytest.mark.parametrize("args, says", [
    (["--shell-completion"], "--shell-completion='' is not allowed: install=SHELL or uninstall=SHELL, SHELL one of "
                             "['bash', 'fish', 'zsh'] (eval \"$(sgi-run -sc install=bash)\")"),
    (["-sc", "query=bash"], "--shell-completion='query=bash' is not allowed: install=SHELL or uninstall=SHELL, "
                            "SHELL one of ['bash', 'fish', 'zsh'] (eval \"$(sgi-run -sc install=bash)\"); query=SHELL "
                            "is what the installed completion runs, with the shell's COMP_LINE"),
    (["--hydra-help", "system=kubo"], "system='kubo' is not allowed: no override of sgi-run's config with "
                                      "--hydra-help (it shows Hydra's own; sgi-run --help shows sgi-run's)"),
    (["--experimental-rerun"], "--experimental-rerun='' is not allowed: a value (Rerun a job from a previous "
                               "config pickle)"),
    (["--experimental-rerun", "config.pickle"], "--experimental-rerun='config.pickle' is not allowed: not with "
     "sgi-run: a run is rerun by its command line, kept in its .hydra/overrides.yaml (a finished run is shown, an "
     "interrupted one resumed)"),
    (["--info", "system=bogus"], "system='bogus' is not allowed: one of ['circle_pendulum', "),
    (["--cfg"], "--cfg='' is not allowed: one of ['job', 'hydra', 'all']"),
    (["--config-name"], "--config-name='' is not allowed: a value (Overrides the config_name specified in "
                        "hydra.main())"),
    (["--resolve"], "--resolve='' is not allowed: only with --cfg (it changes what --cfg shows)"),
    (["--cfg", "job", "--package", "plan.nothing"], "--package='plan.nothing' is not allowed: a key of the config "
     "--cfg job shows: one of ['cache', 'executor', 'integrator', 'output_root', 'plan', 'progress', 'system'], or "
     "a key under one (plan.dt)"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_misused_flag_is_one_line_before_any_compute(args, says, tmp_path, monkeypatch, capsys):
    assert _refused_with(monkeypatch, capsys, tmp_path, args).startswith(says)


@pytest.mark.parametrize("args, shows", [
    (["--info", "system=van_der_pol"], "van_der_pol"),
    (["-i", "defaults", "integrator=dirk"], "integrator/dirk"),
    (["--hydra-help", "hydra/launcher=joblib"], "hydra/launcher: basic, joblib"),
    (["-sc", "install=bash"], "hydra_bash_completion"),
    (["--cfg", "job", "--package", "plan.dt", "plan.dt=0.25"], "0.25"),
    (["--cfg", "hydra", "-p", "hydra.launcher", "hydra/launcher=joblib"], "n_jobs: -1"),
])
def test_hydras_information_flags_still_show_it(args, shows, tmp_path, monkeypatch, capsys):
    import logging

    from sgi_run import cli
    monkeypatch.chdir(tmp_path)
    root = logging.getLogger()      # Hydra logs through it: to this test's stdout, not an earlier run's closed one
    monkeypatch.setattr(root, "handlers", [])
    monkeypatch.setattr(root, "level", root.level)
    # A run earlier in this process set up its job's logging as conf/config.yaml says (hydra/job_logging: disabled,
    # which disables the loggers that exist then, Hydra's own among them): a command runs once in its process.
    for name, logger in logging.root.manager.loggerDict.items():
        if name.startswith("hydra") and isinstance(logger, logging.Logger):
            monkeypatch.setattr(logger, "disabled", False)
    monkeypatch.setattr(sys, "argv", ["sgi-run", *args])
    try:
        cli.main()
    except SystemExit as stop:
        assert stop.code in (None, 0)
    out, err = capsys.readouterr()
    assert shows in out and "Traceback" not in err, out + err
    assert not (tmp_path / "outputs").exists()


@pytest.mark.parametrize("args, says", [
    (["=5"], "override='=5' is not allowed: key=value with a key before the = (e.g. plan.dt=0.5)"),
    (["system=kubo,van_der_pol"], "system='kubo,van_der_pol' is not allowed: one value without -m (a sweep over "
                                  "several runs: sgi-run -m system=kubo,van_der_pol)"),
    (["--info", "plan.dt=0.5,0.25"], "plan.dt='0.5,0.25' is not allowed: one value without -m (a sweep over "
                                     "several runs: sgi-run -m plan.dt=0.5,0.25)"),
    (["-m", "plan.dt=interval(0,1)"], "plan.dt='interval(0,1)' is not allowed: values a sweep lists: a,b, "
     "choice(a,b) or range(start,stop,step) (interval() is a search space for an optimizing sweeper; Hydra's basic "
     "sweeper lists its values)"),
    (["-m", "integrator=glob(srkw*)", "plan.dt=-1"], "plan.dt=-1 is not allowed: a number > 0"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_sweep_that_cannot_run_is_one_line_before_any_compute(args, says, tmp_path, monkeypatch, capsys):
    assert _refused_with(monkeypatch, capsys, tmp_path, args) == says


def _launcher_options():
    """(launcher, option, a value of the wrong type) for every option of every launcher Hydra has here."""
    from omegaconf import OmegaConf

    from sgi_run.config import hydra_group_options, hydra_node
    for launcher in hydra_group_options("hydra/launcher"):
        node = hydra_node([f"hydra/launcher={launcher}"]).launcher
        for key in node:
            if key != "_target_":
                yield launcher, key, "1" if OmegaConf.is_config(node[key]) else "{bad:1}"


@pytest.mark.parametrize("launcher, key, bad", list(_launcher_options()))
def test_every_launcher_option_with_a_bad_value_is_one_line(launcher, key, bad, tmp_path, monkeypatch, capsys):
    line = _refused_in_one_line(monkeypatch, capsys, tmp_path, "-m", f"hydra/launcher={launcher}",
                                f"hydra.launcher.{key}={bad}", "plan.dt=0.5,0.25")
    assert line.startswith(f"hydra.launcher.{key}='{bad}' is not allowed: a value of its type ("), line


@pytest.mark.parametrize("args, says", [
    (["hydra.job.chdir=maybe"], "hydra.job.chdir='maybe' is not allowed: a value of its type (Value 'maybe' is not a "
                                "valid bool (type str))"),
    (["-m", "hydra/launcher=joblib", "hydra.launcher.n_jobs=0", "plan.dt=0.5,0.25"],
     "hydra.launcher.n_jobs=0 is not allowed: a value JoblibLauncher takes (n_jobs == 0 in Parallel has no meaning)"),
    (["-m", "hydra/launcher=submitit_local", "hydra.launcher.max_batch_size=-1", "plan.dt=0.5,0.25"],
     "hydra.launcher.max_batch_size='-1' is not allowed: a known key; 'hydra.launcher' has ['_target_', "
     "'cpus_per_task', 'gpus_per_node', 'mem_gb', 'name', 'nodes', 'stderr_to_stdout', 'submitit_folder', "
     "'tasks_per_node', 'timeout_min']"),
    (["-m", "hydra/launcher=submitit_local", "hydra.launcher.nodes=2", "plan.dt=0.5,0.25"],
     "hydra.launcher.nodes=2 is not allowed: a value LocalLauncher takes (LocalExecutor can use only one node. "
     "Use nodes=1)"),
    (["-m", "hydra/launcher=slurm_sweep", "hydra.launcher.partition=compute", "plan.dt=0.5,0.25"],
     "hydra/launcher='slurm_sweep' is not allowed: a launcher that can start on this machine (Could not detect "
     "\"srun\", are you indeed on a slurm cluster?)"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_a_bad_launcher_or_hydra_option_is_one_line_before_any_compute(args, says, tmp_path, monkeypatch, capsys):
    assert _refused_with(monkeypatch, capsys, tmp_path, args) == says
