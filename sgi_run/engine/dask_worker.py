"""What runs inside a dask worker process (``engine.executor`` submits it): the shard task, the
plugin that pins a worker to its share of the cores, and what a test asks a worker about itself."""
from __future__ import annotations

import functools
import os

from distributed import WorkerPlugin

from sgi_run.engine import cores


def slot_of(name, slots: int) -> int:
    """A worker's number among the ``slots`` processes that share its host, from its name: a
    LocalCluster's first workers are 0..W-1 and those started again ``<n>-<slot>``; a SLURM job's
    processes end their names in -0..-P-1."""
    return int(str(name).rsplit("-", 1)[-1]) % slots


class PinCores(WorkerPlugin):
    """Pins each worker process to its block of the host's cores (its ``slot_of``) as it starts,
    before JAX does."""
    name = "sgi-run-pin-cores"

    def __init__(self, slots: int):
        self.slots = slots

    def setup(self, worker) -> None:
        if self.slots > 1:
            cores.pin(slot_of(worker.name, self.slots), self.slots)


@functools.lru_cache(maxsize=4)
def _simulator(build_simulator):
    """The simulator ``build_simulator()`` builds, once per worker process (its compiled steps are reused by
    every shard of the run that lands on this worker)."""
    return build_simulator()


def run_shard(build_simulator, shard: int, resume):
    from sgi_run.core import jax_setup

    jax_setup.configure()   # float64 on, before the simulator is built
    return _simulator(build_simulator).run_shard(shard, resume=resume)


def facts() -> dict:
    """What this worker process is: float64 on, how it was started, the cores any of its threads may use."""
    import jax

    from sgi_run.core import jax_setup

    jax_setup.configure()
    with open("/proc/self/cmdline", "rb") as f:
        spawned = b"spawn_main" in f.read()
    allowed = set()
    for thread in cores.threads():
        allowed |= os.sched_getaffinity(thread)
    return {"pid": os.getpid(), "x64": bool(jax.config.jax_enable_x64), "spawned": spawned, "cores": sorted(allowed)}
