"""Where a run's shards execute: in this process (``executor=local``, ``shards_at_once`` threads) or as tasks on a
``dask.distributed`` cluster: a ``LocalCluster`` on this machine or a running scheduler
(``executor=dask``), or SLURM jobs started by ``dask_jobqueue.SLURMCluster`` (``executor=slurm``).

A task is ``(build_simulator, shard, resume)``: the worker rebuilds the simulator by calling
``build_simulator`` (a ``runner.SimulatorBuilder``: the run's config as text; built once per worker process
and kept), never from a pickled jitted function, and sends the finished shard back; this process saves it
as a checkpoint and merges the shards in shard order, so the numbers are those of ``executor=local``
whatever the workers. A worker that dies mid-shard has its shard recomputed by the scheduler (same random
numbers: they are addressed by path and step); a killed client keeps the shards it had saved, and the same
command resumes.

Workers are fresh processes (spawned, never forked: JAX deadlocks in a child forked after it
started its threads) that enable float64 before a task builds anything (``core.jax_setup.configure``). Each worker of a
LocalCluster or of a SLURM job is pinned to its own share of the cores before JAX starts: XLA sizes
its CPU thread pool by the process's CPU affinity (the XLA_FLAGS that once limited it no longer do:
measured, a process with them still kept 1.9 cores busy), so workers never run two thread pools on
one core. A sweep's jobs under the joblib launcher share the cores the same way (``cores.claim_cores``).
"""
from __future__ import annotations

import atexit
import logging
import dataclasses
import importlib.util
import math
import os
import re
import shutil
import socket
import time
from collections.abc import Callable, Iterator

from sgi_run.core.errors import ConfigError, require
from sgi_run.core.fields import auto_or, integer, is_integer, real, text
from sgi_run.engine.cores import share

NAMES = ("local", "dask", "slurm")
# Libraries that size their own thread pools by environment: one thread each in a worker, whose
# parallelism is its share of the cores (``pin``).
WORKER_ENV = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
_ADDRESS_SCHEMES = ("tcp://", "tls://", "ucx://", "inproc://")


# --- the config group, validated ---------------------------------------------------------------------
# A scheduler that has not answered in ten minutes will not: past this, a wrong address would hang the run.
CONNECT_TIMEOUT_MAX = 600


def _check_connect_timeout(v) -> None:
    real("executor.connect_timeout", v, f"a number of seconds > 0 and at most {CONNECT_TIMEOUT_MAX} (ten minutes)",
         above=0, at_most=CONNECT_TIMEOUT_MAX)


# sbatch --time's formats: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes,
# days-hours:minutes:seconds.
_WALLTIME = re.compile(r"\d+(:\d+){0,2}|\d+-\d+(:\d+){0,2}")


def _is_walltime(v) -> bool:
    return (isinstance(v, str) or is_integer(v)) and _WALLTIME.fullmatch(str(v)) is not None


# SLURM sizes memory in KiB at the least (dask-jobqueue's job script fails on less).
_MEMORY_MIN = 1024


def _job_memory_bytes(memory) -> float:
    """Bytes of a job's ``memory`` as dask-jobqueue reads it (``dask.utils.parse_bytes``), NaN where it reads none."""
    from dask.utils import parse_bytes
    try:
        return parse_bytes(memory) if isinstance(memory, str) else math.nan
    except (ValueError, OverflowError):
        return math.nan


@dataclasses.dataclass(frozen=True)
class Local:
    """Shards in this process, ``shards_at_once`` at a time, each from its own thread (``auto``: one per core
    of the process on a CPU, one on an accelerator). Why: XLA keeps one core busy with a shard of small
    states (its fusions are too small to split), so a 2-core machine ran at half its pace; the threads
    share XLA's one thread pool, so no core runs two. The numbers do not depend on it."""
    name: str = "local"
    shards_at_once: int | str = "auto"

    def check(self) -> None:
        auto_or(integer, "executor.shards_at_once", self.shards_at_once,
                "'auto' (one per core on a CPU, one on an accelerator) or an integer >= 1", at_least=1)

    @property
    def thread_count(self) -> int:
        """Shards at once as asked, before a run caps it (its shards, its memory, its library calls)."""
        from sgi_run.engine import device
        if self.shards_at_once != "auto":
            return int(self.shards_at_once)
        return 1 if device.on_accelerator() else len(os.sched_getaffinity(0))

    def describe(self, at_once: int = 1) -> str:
        return "local (this process" + (f", {at_once} shards at once)" if at_once > 1 else ")")


@dataclasses.dataclass(frozen=True)
class Dask:
    """A LocalCluster of ``workers`` processes (``auto``: one per core / threads_per_worker), or the
    running scheduler at ``address``."""
    name: str = "dask"
    address: str | None = None
    workers: int | str = "auto"
    threads_per_worker: int = 1
    connect_timeout: float = 5.0

    def check(self) -> None:
        require("executor.address", self.address, self.address is None or (
            isinstance(self.address, str) and self.address.startswith(_ADDRESS_SCHEMES)),
            f"null (start a LocalCluster) or a scheduler address: {'|'.join(_ADDRESS_SCHEMES)}host:port")
        auto_or(integer, "executor.workers", self.workers, "'auto' (one per core) or an integer >= 1", at_least=1)
        integer("executor.threads_per_worker", self.threads_per_worker, "an integer >= 1", at_least=1)
        _check_connect_timeout(self.connect_timeout)

    @property
    def worker_count(self) -> int:
        return (max(1, (os.cpu_count() or 1) // self.threads_per_worker) if self.workers == "auto"
                else int(self.workers))


@dataclasses.dataclass(frozen=True)
class Slurm:
    """``dask_jobqueue.SLURMCluster``: ``jobs`` SLURM jobs of ``cores`` cores and ``memory`` each, split
    into ``processes`` worker processes; ``job_extra`` are extra ``#SBATCH`` directives."""
    name: str = "slurm"
    queue: str | None = None
    account: str | None = None
    jobs: int = 1
    cores: int = 8
    processes: int = 1
    memory: str = "16GiB"
    walltime: str = "01:00:00"
    job_extra: tuple[str, ...] = ()
    interface: str | None = None
    connect_timeout: float = 5.0

    def check(self) -> None:
        text("executor.queue", self.queue, "the SLURM partition the workers' jobs go to (e.g. queue=compute)")
        if self.account is not None:
            text("executor.account", self.account, "null or a SLURM account")
        for key in ("jobs", "cores", "processes"):
            integer(f"executor.{key}", getattr(self, key), "an integer >= 1", at_least=1)
        require("executor.processes", self.processes, self.cores % self.processes == 0,
                f"a divisor of cores = {self.cores} (each worker process gets the same number of cores)")
        require("executor.memory", self.memory, _job_memory_bytes(self.memory) >= _MEMORY_MIN,
                "a size per job of at least 1KiB, e.g. 16GiB (a number with a unit: kB, MB, GB, KiB, MiB, GiB, ...)")
        require("executor.walltime", self.walltime, _is_walltime(self.walltime),
                "a SLURM time limit: minutes, minutes:seconds, hours:minutes:seconds, days-hours, days-hours:minutes "
                "or days-hours:minutes:seconds, e.g. 01:00:00")
        require("executor.job_extra", self.job_extra, all(isinstance(x, str) and x.strip() for x in self.job_extra),
                "a list of #SBATCH options, e.g. ['--gres=gpu:1']")
        if self.interface is not None:
            text("executor.interface", self.interface, "null or a network interface, e.g. ib0")
        _check_connect_timeout(self.connect_timeout)

    def cluster_options(self) -> dict:
        """The keyword arguments of ``dask_jobqueue.SLURMCluster``."""
        return {"queue": self.queue, "account": self.account, "cores": self.cores, "processes": self.processes,
                "memory": self.memory, "walltime": self.walltime, "job_extra_directives": list(self.job_extra),
                "interface": self.interface,
                "job_script_prologue": [f"export {k}='{v}'" for k, v in WORKER_ENV.items()]}


_SPECS = {"local": Local, "dask": Dask, "slurm": Slurm}


def spec_of(mapping) -> Local | Dask | Slurm:
    """The validated executor of a config's ``executor`` node (a plain mapping)."""
    mapping = dict(mapping)
    name = mapping.get("name")
    if not isinstance(name, str) or name not in _SPECS:
        raise ConfigError("executor.name", name, f"one of {list(NAMES)}")
    cls = _SPECS[name]
    # The cluster executors' libraries are an extra of their own (a plain install runs locally).
    needed = {"dask": ("distributed",), "slurm": ("distributed", "dask_jobqueue")}.get(name, ())
    missing = [module for module in needed if importlib.util.find_spec(module) is None]
    require("executor", name, not missing, f"local, or {name} with the cluster extra installed "
            f"(pip install 'sgi-run[cluster]': {', '.join(missing)} is missing)")
    known = [f.name for f in dataclasses.fields(cls)]
    for key, value in mapping.items():
        require(f"executor.{key}", value, key in known, f"a key of executor={name}: {known}")
    if "job_extra" in mapping:
        require("executor.job_extra", mapping["job_extra"], isinstance(mapping["job_extra"], (list, tuple)),
                "a list of #SBATCH options")
        mapping["job_extra"] = tuple(mapping["job_extra"])
    spec = cls(**mapping)
    spec.check()
    return spec


# --- this process's side ----------------------------------------------------------------------------
class ShardLost(RuntimeError):
    """A shard whose every try killed the worker running it (dask's ``allowed-failures``): a shard
    that does not fit a worker's memory, or a crash of the worker's process. One line."""


class Cluster:
    """A connected ``distributed.Client`` and what it runs on."""

    def __init__(self, client, where: str, owned=None, size: int | None = None):
        self.client, self.where, self._owned, self._size = client, where, owned, size
        self._replaced = 0

    def replace_lost_workers(self, timeout: float = 60.0) -> None:
        """Start again the workers of an owned LocalCluster that dask closed, and wait (up to ``timeout``
        seconds) until they are up. A nanny restarts its killed worker, but the cluster closes the nanny if
        no worker of its name is up at the one instant it looks, ``distributed.deploy.lost-worker-timeout``
        after a loss: a worker that dies again and again (a shard too big for its memory) meets that, and
        every later run would have fewer workers. A replacement takes a name never used, ``<n>-<slot>``
        (``PinCores`` gives it the lost worker's cores): the closed nanny's last worker may still be
        registered, and the scheduler refuses a second worker of its name (seen in CI)."""
        from sgi_run.engine.dask_worker import slot_of

        if self._size is None:
            return
        owned = self._owned
        up = {slot_of(name, self._size) for name in list(owned.workers)}
        lost = [slot for slot in range(self._size) if slot not in up]
        if not lost:
            return
        for name in [name for name in owned.worker_spec if name not in owned.workers]:
            del owned.worker_spec[name]
        started = []
        for slot in lost:
            self._replaced += 1
            started.append(f"{self._replaced}-{slot}")
            owned.worker_spec[started[-1]] = owned.new_spec
        owned.scale(self._size)          # applies the spec: starts the names not up
        deadline = time.monotonic() + timeout
        while not all(name in owned.workers for name in started) and time.monotonic() < deadline:
            time.sleep(0.1)

    def run_shards(self, build_simulator: Callable, shards: list[int], resumes: dict,
                   on_output: Callable[[int], None] | None = None, outputs: int = 1) -> Iterator:
        """Yield each of ``shards`` as a ``ShardResult`` when it finishes (in any order), starting
        those in ``resumes`` from their saved progress. ``on_output`` hears of a finished shard as
        of its paths at each of its ``outputs`` output intervals. Leaving early (Ctrl-C, an error)
        cancels the shards not yet finished."""
        from distributed import KilledWorker, as_completed

        from sgi_run.engine.dask_worker import run_shard

        self.replace_lost_workers()
        futures = [self.client.submit(run_shard, build_simulator, s, resumes.get(s), pure=False, priority=-s)
                   for s in shards]
        try:
            for future in as_completed(futures):
                try:
                    result = future.result()
                except KilledWorker:
                    shard = shards[futures.index(future)]
                    raise ShardLost(f"shard {shard} was lost: every worker that ran it died (out of memory? a "
                                    f"smaller plan.shard_size needs less; see the workers' logs); {self.where}") from None
                if on_output is not None:
                    on_output(result.paths * outputs)
                yield result
        finally:
            self.client.cancel([f for f in futures if not f.done()])

    def close(self) -> None:
        self.client.close()
        if self._owned is not None:
            self._owned.close()


_open: dict = {}


def connect(spec: Local | Dask | Slurm) -> Cluster | None:
    """The cluster of an executor (None: run here), started or attached once per process and kept
    for the process's later runs (a figure's runs share one LocalCluster)."""
    if isinstance(spec, Local):
        return None
    if spec not in _open:
        _open[spec] = _start(spec)
    return _open[spec]


def _start(spec: Dask | Slurm) -> Cluster:
    import dask
    from distributed import Client

    from sgi_run.engine.dask_worker import PinCores

    if isinstance(spec, Dask) and spec.address is not None:
        started = time.monotonic()
        _check_greeting(spec.address, spec.connect_timeout)
        try:
            client = Client(spec.address, timeout=f"{max(spec.connect_timeout - (time.monotonic() - started), 0.1)}s")
        except (OSError, TimeoutError) as err:
            raise ConfigError("executor.address", spec.address,
                              f"the address of a running dask scheduler (none answered within "
                              f"{spec.connect_timeout:g} s: {str(err).splitlines()[0]})") from None
        workers = len(client.scheduler_info(n_workers=-1)["workers"])
        return Cluster(client, f"dask scheduler {spec.address} ({workers} workers)")
    with dask.config.set({"distributed.worker.multiprocessing-method": "spawn"}):
        if isinstance(spec, Dask):
            from distributed import LocalCluster
            cluster = LocalCluster(n_workers=spec.worker_count, threads_per_worker=spec.threads_per_worker,
                                   processes=True, env=dict(WORKER_ENV), dashboard_address=":0",
                                   host="127.0.0.1", silence_logs=logging.ERROR)
            cores = share(0, spec.worker_count)
            where = (f"dask LocalCluster ({spec.worker_count} worker processes x {spec.threads_per_worker} "
                     f"thread{'s' if spec.threads_per_worker > 1 else ''}, {len(cores)} core"
                     f"{'s' if len(cores) > 1 else ''} each)")
        else:
            from dask_jobqueue import SLURMCluster
            # Without sbatch the jobs are never submitted, and the run would wait for their workers forever.
            require("executor", spec.name, shutil.which("sbatch") is not None,
                    "local or dask on this machine: SLURM's sbatch is not on PATH (executor=slurm submits its "
                    "workers' jobs with it: run sgi-run on the cluster's login node)")
            cluster = SLURMCluster(**spec.cluster_options())
            cluster.scale(jobs=spec.jobs)
            where = (f"dask SLURMCluster (queue {spec.queue}: {spec.jobs} job(s) x {spec.processes} worker "
                     f"process(es), {spec.cores} cores, {spec.memory})")
    client = Client(cluster, timeout=f"{spec.connect_timeout}s")
    # Every worker (and every one restarted later) pins itself before it runs a task.
    client.register_plugin(PinCores(spec.worker_count if isinstance(spec, Dask) else spec.processes))
    return Cluster(client, where, owned=cluster, size=spec.worker_count if isinstance(spec, Dask) else None)


# A scheduler's greeting is a few dozen bytes: a longer length prefix is not one.
_GREETING_MAX_BYTES = 1 << 16


def _check_greeting(address: str, timeout: float) -> None:
    """Refuse (ConfigError) a tcp:// address where no dask scheduler greets within ``timeout`` seconds.

    dask's own connect bounds only the TCP connection; it then waits without a bound for the peer's
    handshake (a web server on that port waits for a request: forever), and takes its first 8 bytes
    for a length to allocate (random bytes: exabytes). A scheduler speaks first: an 8-byte length,
    then a msgpack dict of its ``compression``, ``python`` and ``pickle-protocol``; that is read here,
    bounded in time and size, before dask connects. TLS and other transports are left to dask."""
    if not address.startswith("tcp://"):
        return
    host, _, port = address.removeprefix("tcp://").rpartition(":")
    if not port.isdigit():
        return                   # dask's default port, or an address dask itself refuses
    deadline, where = time.monotonic() + timeout, f"{host}:{port}"

    def refuse(what: str):
        return ConfigError("executor.address", address, f"the address of a running dask scheduler ({what})")

    while True:                  # nothing listening yet: retried until the deadline, as dask does
        try:
            connection = socket.create_connection((host.strip("[]"), int(port)),
                                                  timeout=max(deadline - time.monotonic(), 0.01))
            break
        except ConnectionRefusedError as err:
            if time.monotonic() + 0.1 >= deadline:
                raise refuse(f"none answered within {timeout:g} s: {err}") from None
            time.sleep(0.1)
        except OSError as err:
            raise refuse(f"none answered within {timeout:g} s: {err}") from None
    with connection:
        try:
            length = int.from_bytes(_receive(connection, 8, deadline), "little")
            greeting = _receive(connection, length, deadline) if 0 < length <= _GREETING_MAX_BYTES else b""
        except TimeoutError:
            raise refuse(f"{where} sent no dask handshake within {timeout:g} s") from None
        except OSError as err:
            raise refuse(f"{where} closed the connection without a dask handshake ({err})") from None
    if b"pickle-protocol" not in greeting:
        raise refuse(f"{where} answered with bytes that are not a dask handshake")


def _receive(connection: socket.socket, n: int, deadline: float) -> bytes:
    """``n`` bytes from ``connection`` by ``deadline`` (else TimeoutError)."""
    data = b""
    while len(data) < n:
        connection.settimeout(max(deadline - time.monotonic(), 0.001))
        chunk = connection.recv(min(n - len(data), 65536))
        if not chunk:
            raise ConnectionResetError("closed by the peer")
        data += chunk
    return data


@atexit.register
def close_all() -> None:
    """Close every cluster this process started or attached to (at exit, and between tests)."""
    for cluster in _open.values():
        try:
            cluster.close()
        except Exception:       # already gone (interpreter shutting down, scheduler killed)
            pass
    _open.clear()
