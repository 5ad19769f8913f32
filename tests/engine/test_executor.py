"""executor=dask: shards as tasks on a dask.distributed LocalCluster (two spawned worker processes),
with the numbers of executor=local; a worker killed mid-shard and a client killed mid-run lose nothing.
executor=slurm: validated and composed (no SLURM here). executor=local: its option (its threads: test_ensemble)."""
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import sgi_run
from sgi_run.core.errors import ConfigError
from sgi_run.engine import device, executor
from sgi_run.engine.dask_worker import slot_of

# One process under pytest-xdist (--dist loadgroup): the tests share one LocalCluster (the `cluster`
# fixture), which a second process would start again.
pytestmark = pytest.mark.xdist_group("dask_cluster")

DASK = ["executor=dask", "executor.workers=2"]
# Four shards, kept paths in two of them, snapshots and per-path time averages: every part of the file.
KUBO = ["integrator=midpoint", "plan.paths=4000", "plan.shard_size=1000", "plan.T=2", "plan.dt=0.01",
        "plan.output_dt=0.25", "plan.keep_paths=1500", "plan.snapshots=[1.0,2.0]", "plan.time_average=[1.0,2.0]",
        "plan.observables=[H,q,H_change]"]


@pytest.fixture(scope="module")
def cluster(session_cores):
    """The LocalCluster that runs with executor=dask executor.workers=2 use (one for the module), started
    on every core of the test session, as a run would be."""
    with session_cores():
        connected = executor.connect(executor.spec_of({"name": "dask", "workers": 2}))
    yield connected
    executor.close_all()


@pytest.fixture
def own_cluster(session_cores):
    """A LocalCluster of two workers for one test whose workers die: dask closes a nanny
    lost-worker-timeout (15 s) after a loss, which on the shared cluster landed in later tests."""
    with session_cores():
        started = executor._start(executor.spec_of({"name": "dask", "workers": 2}))
    yield started
    started.close()


def assert_same_files(a, b):
    """Every dataset of two ensembles equal, bit for bit."""
    ea, eb = sgi_run.load(a.path), sgi_run.load(b.path)
    for name in ea.observables:
        for stat in ("mean", "var", "count"):
            np.testing.assert_array_equal(ea.observables[name][stat], eb.observables[name][stat], err_msg=name)
    for group in ("paths", "snapshots", "time_averages", "diagnostics", "invariant_drift"):
        x, y = getattr(ea, group), getattr(eb, group)
        assert x.keys() == y.keys(), group
        for name in x:
            np.testing.assert_array_equal(x[name], y[name], err_msg=f"{group}/{name}")


def test_workers_are_spawned_float64_processes_each_on_its_own_cores(cluster, session_cores):
    """XLA sizes its CPU thread pool by the process's cores: two workers on disjoint halves of them
    never run two pools on one core."""
    from sgi_run.engine.dask_worker import facts as worker_facts
    facts = list(cluster.client.run(worker_facts).values())
    assert len(facts) == 2 and len({f["pid"] for f in facts} | {os.getpid()}) == 3
    for f in facts:
        assert f["x64"] and f["spawned"], f
    cores = session_cores.cores     # those the cluster was started on
    if len(cores) >= 2:
        assert not set(facts[0]["cores"]) & set(facts[1]["cores"])
        assert sorted(facts[0]["cores"] + facts[1]["cores"]) == cores[:2 * (len(cores) // 2)]
    share = len(cores) // 2 or 1
    assert cluster.where == f"dask LocalCluster (2 worker processes x 1 thread, {share} core{'s' * (share > 1)} each)"


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [
    KUBO,
    # A pytree state, a fixed-point solver's counts in diagnostics.
    ["system=rigid_body", "integrator=isomp", "plan.paths=60", "plan.shard_size=20", "plan.T=0.5", "plan.dt=0.05",
     "plan.output_dt=0.25", "plan.keep_paths=25", "plan.observables=[H,C2,spectrum]"],
], ids=["kubo_midpoint", "rigid_body_isomp"])
def test_a_dask_run_equals_the_local_run(cluster, tmp_path, overrides):
    local = sgi_run.run(sgi_run.compose(overrides + [f"output_root={tmp_path}/local", "progress=off"]))
    on_dask = sgi_run.run(sgi_run.compose(overrides + DASK + [f"output_root={tmp_path}/dask", "progress=off"]))
    assert on_dask.ensemble.attrs["executor"] == cluster.where
    assert local.ensemble.attrs["executor"] == "local (this process)"
    assert on_dask.ensemble.attrs["config_hash"] == local.ensemble.attrs["config_hash"]   # where is not what
    # The workers name their device (the same kind as this process's here).
    assert on_dask.ensemble.attrs["device"] == local.ensemble.attrs["device"] == device.describe()
    assert (on_dask.run_dir / "summary.md").read_text().splitlines()[0].endswith(
        f"(ran on {cluster.where}, {device.describe()})")
    assert_same_files(local, on_dask)
    # The rigid body's Casimirs' drift, over shards run apart on the workers (Kubo at nu > 0 declares none).
    assert list(on_dask.ensemble.invariant_drift) == list(local.setup.system.invariants())


@pytest.mark.slow
def test_a_convergence_study_on_dask_equals_the_local_one(cluster, tmp_path):
    """Its errors and, over shards run apart, the largest drift of each invariant (a work-precision study's)."""
    overrides = ["integrator=heun", "plan=convergence", "plan.paths=400", "plan.shard_size=100", "plan.T=1",
                 "plan.dts=[0.1,0.05]", "plan.reference=fine", "plan.bootstrap=0", "system.nu=0",
                 "plan.invariants=declared"]
    local = sgi_run.run(sgi_run.compose(overrides + [f"output_root={tmp_path}/local", "progress=off"]))
    on_dask = sgi_run.run(sgi_run.compose(overrides + DASK + [f"output_root={tmp_path}/dask", "progress=off"]))
    np.testing.assert_array_equal(local.result.error, on_dask.result.error)
    np.testing.assert_array_equal(local.result.se, on_dask.result.se)
    np.testing.assert_array_equal(local.result.drift_max, on_dask.result.drift_max)
    assert local.result.invariants == ("H",) and np.all(local.result.drift_max > 0)


@pytest.mark.slow
def test_a_worker_killed_mid_shard_has_its_shard_recomputed_to_the_same_numbers(cluster, tmp_path):
    overrides = ["integrator=midpoint", "plan.paths=12000", "plan.shard_size=1000", "plan.T=20", "plan.dt=0.01",
                 "plan.output_dt=1", "plan.keep_paths=2"]
    killed = []

    def kill_a_busy_worker(shard):
        if killed:
            return
        busy = [w for w, keys in cluster.client.processing().items() if keys]
        if busy:
            pid = cluster.client.run(os.getpid, workers=busy[:1])[busy[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    on_dask = sgi_run.run(sgi_run.compose(overrides + DASK + [f"output_root={tmp_path}/dask", "progress=off"]),
                          on_shard_done=kill_a_busy_worker)
    assert killed, "no worker was busy when the first shard came back"
    cluster.client.wait_for_workers(2, timeout=60)       # the nanny started a new one
    assert killed[0] not in cluster.client.run(os.getpid).values()
    local = sgi_run.run(sgi_run.compose(overrides + [f"output_root={tmp_path}/local", "progress=off"]))
    assert_same_files(local, on_dask)


@pytest.mark.slow
def test_a_killed_client_and_scheduler_resume_from_the_finished_shards(cluster, tmp_path):
    """The client (and the LocalCluster's scheduler in it) is SIGKILLed mid-run; the same command
    resumes from the shards it had saved, to the numbers of an uninterrupted local run."""
    overrides = ["integrator=midpoint", "plan.paths=16000", "plan.shard_size=1000", "plan.T=10", "plan.dt=0.01",
                 "plan.output_dt=1", "plan.keep_paths=2", f"output_root={tmp_path}/dask"]
    proc = subprocess.Popen([sys.executable, "-m", "sgi_run.cli", *overrides, *DASK, "progress=on"], cwd=tmp_path,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.time() + 180
    try:
        while time.time() < deadline and not list((tmp_path / "dask").glob("*/*/shards/shard-*.npz")):
            assert proc.poll() is None, proc.stderr.read().decode()
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)      # client, scheduler and its worker processes
        proc.wait()
    kept = len(list((tmp_path / "dask").glob("*/*/shards/shard-*.npz")))
    assert 1 <= kept < 16 and not list((tmp_path / "dask").glob("*/*/ensemble.h5"))
    planned = proc.stderr.readline().decode()          # the progress says where the run runs
    assert "16000 paths x 1000 steps" in planned and "on dask LocalCluster (2 worker processes" in planned

    resumed = sgi_run.run(sgi_run.compose(overrides + DASK + ["progress=off"]))
    assert resumed.shards_resumed == kept
    local = sgi_run.run(sgi_run.compose(overrides[:-1] + [f"output_root={tmp_path}/local", "progress=off"]))
    assert_same_files(local, resumed)


class DyingBuilder:
    """A simulator builder whose worker process dies as it builds (as one killed for its memory would)."""

    def __call__(self):
        os._exit(1)


class PidBuilder:
    """A simulator builder whose shards return the pid of the worker that ran them."""

    def __call__(self):
        return self

    def run_shard(self, shard, resume):
        return os.getpid()


def in_thread(run, seconds=120):
    """What ``run()`` returns, or None when it has not finished after ``seconds`` (a cluster with no worker
    left would wait forever: a daemon thread, so a fault fails the test instead of hanging the suite)."""
    out = []
    thread = threading.Thread(target=lambda: out.append(run()), daemon=True)
    thread.start()
    thread.join(timeout=seconds)
    return out[0] if out else None


def test_a_shard_that_kills_every_worker_it_runs_on_is_one_line(own_cluster):
    def lost():
        with pytest.raises(executor.ShardLost) as err:
            list(own_cluster.run_shards(DyingBuilder(), [3], {}))
        return str(err.value)
    message = in_thread(lost)
    assert message is not None, "the run neither finished nor declared the shard lost"
    assert message.startswith("shard 3 was lost: every worker that ran it died (out of memory?") and "\n" not in message


def test_the_next_run_has_every_worker_after_dask_closed_some(own_cluster):
    """dask's LocalCluster closes a nanny when no worker of its name is up at the instant it looks,
    lost-worker-timeout (15 s) after a loss: workers dying again and again meet it (seen in CI), and every
    later run had fewer workers. Here one is closed as dask closes it; the next run starts it again, under
    a name never used (the closed nanny's last worker may still hold its name at the scheduler, which then
    refused the new one: seen in CI) and on the lost worker's cores."""
    cluster, owned = own_cluster, own_cluster._owned
    cluster.client.wait_for_workers(2, timeout=60)
    cores_before = _cores_by_slot(cluster)
    lost = sorted(owned.workers, key=str)[-1]
    names_before = set(owned.workers)

    async def close_as_dask_does():       # SpecCluster._update_worker_status, lost-worker-timeout after a loss
        await owned.workers.pop(lost).close()

    owned.sync(close_as_dask_does)
    assert len(owned.workers) == 1
    pids = in_thread(lambda: list(cluster.run_shards(PidBuilder(), [0, 1], {})))
    assert pids is not None and len(pids) == 2, "the run found no worker"
    (new,) = set(owned.workers) - names_before
    assert new != lost and slot_of(new, 2) == slot_of(lost, 2)
    assert len(cluster.client.scheduler_info()["workers"]) == 2
    assert _cores_by_slot(cluster) == cores_before


def _cores_by_slot(cluster) -> dict[int, list[int]]:
    """The cores each worker of the cluster may use, by its slot."""
    from sgi_run.engine.dask_worker import facts
    names = {address: info["name"] for address, info in cluster.client.scheduler_info()["workers"].items()}
    return {slot_of(names[address], 2): f["cores"] for address, f in cluster.client.run(facts).items()}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _refusal_of(address: str, tmp_path, within: float) -> str:
    """The one-line refusal of a run at ``address`` with a 2 s connect timeout, which must come within
    ``within`` seconds (a bound on a hang, with room for a loaded machine) with nothing computed."""
    cfg = sgi_run.compose([f"output_root={tmp_path}", "progress=off", "executor=dask", f"executor.address={address}",
                           "executor.connect_timeout=2"])
    started = time.perf_counter()
    with pytest.raises(ConfigError) as err:
        sgi_run.run(cfg)
    assert time.perf_counter() - started < within
    assert not list(tmp_path.glob("*/*/shards")) and not list(tmp_path.glob("*/*/ensemble.h5"))
    assert "\n" not in str(err.value)
    return str(err.value)


@pytest.mark.slow
def test_an_unreachable_scheduler_is_refused_in_seconds_and_nothing_is_computed(tmp_path):
    address = f"tcp://127.0.0.1:{_free_port()}"
    assert _refusal_of(address, tmp_path, within=15).startswith(
        f"executor.address='{address}' is not allowed: the address of a running dask scheduler (none answered within 2 s")


def _serve(answer, seconds=8.0) -> int:
    """A TCP server on 127.0.0.1 (the port returned) that is not a dask scheduler: ``answer(connection)``
    for every connection, for ``seconds``; it stops by itself."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.1)
    end = time.monotonic() + seconds

    def serve():
        with server:
            while time.monotonic() < end:
                try:
                    connection, _ = server.accept()
                except OSError:
                    continue
                with connection:
                    answer(connection, end)

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1]


def _http(connection, end):
    """What a web server does: wait for a whole request (its headers end in an empty line)."""
    connection.settimeout(max(0.01, end - time.monotonic()))
    request = b""
    try:
        while not request.endswith(b"\r\n\r\n"):
            chunk = connection.recv(1024)
            if not chunk:
                break
            request += chunk
    except OSError:
        pass


def _garbage(connection, end):
    """Random bytes: their first 8 read as a frame length (exabytes); then silence."""
    connection.sendall(np.random.default_rng(0).bytes(64))
    _http(connection, end)


@pytest.mark.slow
@pytest.mark.parametrize("answer, what", [(_http, "sent no dask handshake within 2 s"),
                                          (_garbage, "answered with bytes that are not a dask handshake")],
                         ids=["http_server", "garbage"])
def test_a_service_that_is_not_a_dask_scheduler_is_refused_within_the_timeout(tmp_path, answer, what):
    port = _serve(answer)     # it answers for 8 s: a client that waits for it to close takes longer than that
    address = f"tcp://127.0.0.1:{port}"
    assert _refusal_of(address, tmp_path, within=7) == (
        f"executor.address='{address}' is not allowed: the address of a running dask scheduler (127.0.0.1:{port} {what})")


def test_a_running_schedulers_address_is_accepted(cluster):
    # A worker killed by an earlier test of the module is restarted by its nanny (or, if dask closed the
    # nanny, by the cluster): wait for it (seen missing on a loaded 2-core machine).
    cluster.replace_lost_workers()
    cluster.client.wait_for_workers(2, timeout=60)
    address = cluster.client.scheduler.address
    attached = executor.connect(executor.spec_of({"name": "dask", "address": address, "connect_timeout": 5}))
    assert attached.where == f"dask scheduler {address} (2 workers)"


@pytest.mark.parametrize("override, shown", [("executor.shards_at_once=0", "0"),
                                             ("executor.shards_at_once=two", "'two'")])
def test_bad_local_options_are_one_line(override, shown):
    with pytest.raises(ConfigError) as err:
        sgi_run.compose([override])
    assert str(err.value) == (f"executor.shards_at_once={shown} is not allowed: 'auto' (one per core on a CPU, one "
                              "on an accelerator) or an integer >= 1")


@pytest.mark.parametrize("override, message", [
    ("executor.workers=0", "executor.workers=0 is not allowed: 'auto' (one per core) or an integer >= 1"),
    ("executor.workers=-2", "executor.workers=-2 is not allowed: 'auto' (one per core) or an integer >= 1"),
    ("executor.threads_per_worker=0", "executor.threads_per_worker=0 is not allowed: an integer >= 1"),
    ("executor.address=localhost:8786", "executor.address='localhost:8786' is not allowed: null (start a "
     "LocalCluster) or a scheduler address: tcp://|tls://|ucx://|inproc://host:port"),
    ("executor.connect_timeout=0", "executor.connect_timeout=0 is not allowed: a number of seconds > 0 and at most "
     "600 (ten minutes)"),
    ("executor.connect_timeout=1e9", "executor.connect_timeout=1000000000.0 is not allowed: a number of seconds > 0 "
     "and at most 600 (ten minutes)"),
])
def test_bad_dask_options_are_one_line(override, message):
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(["executor=dask", override])
    assert str(err.value) == message


def test_a_slurm_executor_needs_a_queue_and_whole_worker_processes():
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(["executor=slurm"])
    assert str(err.value) == ("executor='slurm' is not allowed: one that fits the default executor.queue=None (the "
                              "SLURM partition the workers' jobs go to (e.g. queue=compute)), or set executor.queue too")
    with pytest.raises(ConfigError, match=r"^executor.processes=3 is not allowed: a divisor of cores = 8"):
        sgi_run.compose(["executor=slurm", "executor.queue=compute", "executor.processes=3"])
    with pytest.raises(ConfigError, match=r"^executor.job_extra=\['' \]|^executor.job_extra="):
        sgi_run.compose(["executor=slurm", "executor.queue=compute", "executor.job_extra=['']"])


SLURM_TIMES = "minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes or days-hours:minutes:seconds"


@pytest.mark.parametrize("override, message", [
    ("executor.memory=lots", "executor.memory='lots' is not allowed: a size per job of at least 1KiB, e.g. 16GiB (a "
     "number with a unit: kB, MB, GB, KiB, MiB, GiB, ...)"),
    ("executor.memory=1e400GB", None), ("executor.memory=-5GiB", None), ("executor.memory=100B", None),
    ("executor.walltime=forever", f"executor.walltime='forever' is not allowed: a SLURM time limit: {SLURM_TIMES}, "
     "e.g. 01:00:00"),
    ("executor.walltime='1:00:00:00'", None), ("executor.walltime=-5", None), ("executor.walltime=''", None),
    ("executor.connect_timeout=1e9", "executor.connect_timeout=1000000000.0 is not allowed: a number of seconds > 0 "
     "and at most 600 (ten minutes)"),
])
def test_bad_slurm_options_are_one_line(override, message):
    """dask-jobqueue's parse of memory=lots was a traceback; walltime and connect_timeout were not checked."""
    with pytest.raises(ConfigError) as err:
        sgi_run.compose(["executor=slurm", "executor.queue=compute", override])
    assert "\n" not in str(err.value) and err.value.key == override.split("=")[0]
    assert message is None or str(err.value) == message


@pytest.mark.parametrize("walltime", ["30", "30:00", "01:00:00", "2-12", "2-12:30", "2-12:30:00", "90"])
def test_slurms_time_formats_are_accepted(walltime):
    cfg = sgi_run.compose(["executor=slurm", "executor.queue=compute", f"executor.walltime={walltime}"])
    assert str(cfg.executor.walltime) == walltime


def test_slurm_without_sbatch_is_refused_in_one_line_before_anything_starts(tmp_path, monkeypatch):
    """dask-jobqueue logged a traceback for the missing sbatch and the run waited for its workers until killed."""
    cfg = sgi_run.compose(["executor=slurm", "executor.queue=compute", f"output_root={tmp_path}", "progress=off",
                           "plan.paths=10", "plan.T=1"])
    monkeypatch.setenv("PATH", str(tmp_path))      # no sbatch there

    def started(**options):
        raise AssertionError("a SLURMCluster was started")
    monkeypatch.setattr("dask_jobqueue.SLURMCluster", started)
    with pytest.raises(ConfigError) as err:
        sgi_run.run(cfg)
    assert str(err.value) == ("executor='slurm' is not allowed: local or dask on this machine: SLURM's sbatch is not "
                              "on PATH (executor=slurm submits its workers' jobs with it: run sgi-run on the cluster's "
                              "login node)")
    assert not list(tmp_path.glob("*/*/shards/*")) and not list(tmp_path.glob("*/*/ensemble.h5"))


def test_the_slurm_config_makes_the_job_script_it_documents():
    """dask-jobqueue's own job script from conf/executor/slurm.yaml's keys (no SLURM needed to write it)."""
    from dask_jobqueue.slurm import SLURMJob

    cfg = sgi_run.compose(["executor=slurm", "executor.queue=compute", "executor.account=proj42", "executor.cores=8",
                           "executor.processes=2", "executor.memory=32GiB", "executor.walltime=02:00:00",
                           "executor.job_extra=['--gres=gpu:1']"])
    spec = executor.spec_of(sgi_run.config.as_python(cfg.executor))
    script = SLURMJob(scheduler="tcp://127.0.0.1:8786", name="sgi-run", **spec.cluster_options()).job_script()
    for line in ("#SBATCH -p compute", "#SBATCH -A proj42", "#SBATCH -n 1", "#SBATCH --cpus-per-task=8",
                 "#SBATCH -t 02:00:00", "#SBATCH --gres=gpu:1", "--nworkers 2", "--nthreads 4",
                 "export OMP_NUM_THREADS='1'"):
        assert line in script, (line, script)


def test_a_cluster_executor_without_the_cluster_extra_is_refused_in_one_line(monkeypatch):
    """A plain install has no Dask: executor=dask names the extra that brings it, before anything starts."""
    import importlib.util
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "distributed" else real(name, *a))
    with pytest.raises(ConfigError, match=r"^executor='dask' is not allowed: local, or dask with the cluster extra "
                       r"installed \(pip install 'sgi-run\[cluster\]': distributed is missing\)$"):
        executor.spec_of({"name": "dask"})
    assert executor.spec_of({"name": "local"}) is not None
