"""The ``sgi-run`` command line, end to end through Hydra (subprocesses, like a user)."""
import signal
import subprocess
import sys
import time

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


def test_help_and_version_are_the_apps_own():
    out = subprocess.run([sys.executable, "-m", "sgi_run.cli", "--help"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith(f"sgi-run {sgi_run.__version__}")
    assert "powered by Hydra" not in out.stdout
    for expected in ("sgi-run -m integrator=midpoint,dirk,heun", "Config groups", "midpoint", "langevin_double_well",
                     "plan=convergence"):
        assert expected in out.stdout
    version = subprocess.run([sys.executable, "-m", "sgi_run.cli", "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"sgi-run {sgi_run.__version__}"


def test_cfg_job_validates(tmp_path):
    show = lambda *args: subprocess.run([sys.executable, "-m", "sgi_run.cli", *args, "--cfg", "job"], cwd=tmp_path,
                                        capture_output=True, text=True, timeout=300)
    out = show("plan.dt=-1")
    assert out.returncode == 2 and out.stderr.strip().startswith("sgi-run: error: plan.dt=-1")
    good = show("plan.dt=0.5")
    assert good.returncode == 0 and "dt: 0.5" in good.stdout and not (tmp_path / "outputs").exists()


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


def test_a_run_in_which_every_path_failed_says_so_and_exits_1(tmp_path):
    """SVIB at c h = 7.5 > 2 blows up (paper 003): every path is non-finite by t = 3. Said loudly, exit 1,
    also when the same command finds the run in the cache."""
    args = ("system=langevin_double_well", "integrator=svib", "system.c=30", "plan.dt=0.25", "plan.T=5",
            "plan.paths=40")
    for attempt in range(2):
        out = sgi_run_cli(tmp_path, *args)
        assert out.returncode == 1, out.stderr
        assert "FAILED: every one of the 40 paths went non-finite" in " ".join(out.stdout.split())
        assert ("cached (failed run)" in out.stdout) == (attempt == 1)


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
    out, err = proc.communicate(timeout=240)
    return proc.returncode, err, args


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
