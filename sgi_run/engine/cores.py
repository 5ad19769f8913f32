"""Sharing a machine's cores among processes: XLA sizes its CPU thread pool by a process's CPU
affinity, so each worker or parallel job is pinned to its own block of cores before JAX starts (one
thread pool per core block, never two on one core)."""
from __future__ import annotations

import os


def share(slot: int, slots: int, cores: list[int] | None = None) -> list[int]:
    """The cores of ``slot`` when ``slots`` processes share ``cores`` (this process's, by default):
    consecutive blocks of equal size; more slots than cores share them round robin."""
    cores = sorted(os.sched_getaffinity(0)) if cores is None else sorted(cores)
    if slots >= len(cores):
        return [cores[slot % len(cores)]]
    size = len(cores) // slots
    return cores[slot * size:(slot + 1) * size]


def pin(slot: int, slots: int) -> list[int]:
    """Pin this process to its share of the cores (before JAX starts, which sizes its pool by them):
    every thread it has, since an affinity is a thread's (a dask worker's task thread exists before
    its plugins run), and so every thread it starts later."""
    mine = share(slot, slots)
    for thread in threads():
        try:
            os.sched_setaffinity(thread, mine)
        except ProcessLookupError:     # the thread ended meanwhile
            pass
    return mine


def threads() -> list[int]:
    """The ids of this process's threads."""
    return [int(t) for t in os.listdir("/proc/self/task")]


_claimed: list = []     # the lock of the slot this process holds, kept open while it lives


def claim_cores(directory: str, slots: int) -> list[int] | None:
    """Pin this process to the cores of the first of ``slots`` slots no other process holds (a lock file
    per slot in ``directory``, held until this process ends): how a sweep's parallel jobs, started by a
    launcher that does not number them, share the cores. None when every slot is taken."""
    import fcntl
    if _claimed:
        return sorted(os.sched_getaffinity(0))
    for slot in range(slots):
        fd = os.open(os.path.join(directory, f"slot-{slot}.lock"), os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        _claimed.append(fd)
        return pin(slot, slots)
    return None
