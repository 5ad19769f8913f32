"""The device a run computes on: its name, its memory, and how many paths a shard gets there.

JAX runs the same compiled simulator on a CPU or a GPU (``pip install -e ".[cuda]"``); which one is
JAX's default backend (``JAX_PLATFORMS=cpu`` forces the CPU). ``plan.shard_size: auto`` picks the
shard size for it:

* CPU: ``CPU_SHARD_SIZE`` paths, the size that keeps a shard's state in cache and was fastest
  (``benchmarks/scale.py``: the engine's overhead is under 1 % from there on), or fewer where that
  many do not fit ``MEMORY_SHARE`` of the host's memory (a Zeitlin N = 128 path holds ~2.6 MB);
* GPU (any accelerator): as many paths as fill ``MEMORY_SHARE`` of the device's free
  memory at the plan's estimated bytes per path, at most ``ACCELERATOR_SHARD_MAX``. A GPU needs
  ~10^6 paths in flight to be busy (``benchmarks/device_sweep.py``); larger shards only make the
  progress and the checkpoints coarser.

The numbers do not depend on the shard size (random numbers are addressed by path and step), so a
run on a GPU reproduces the CPU's to round-off (the shards' statistics merge in another grouping).
"""
from __future__ import annotations

import functools
import platform as _platform

import jax

CPU_SHARD_SIZE = 10_000
MEMORY_SHARE = 0.5     # of the memory a shard may fill (the rest: statistics, kept paths, XLA)
ACCELERATOR_SHARD_MAX = 2**22


def platform() -> str:
    """JAX's default backend: ``cpu``, ``gpu`` (CUDA or ROCm) or ``tpu``."""
    return jax.default_backend()


def on_accelerator() -> bool:
    return platform() != "cpu"


@functools.cache
def describe() -> str:
    """What a run's summary and HDF5 attributes name: ``NVIDIA H200 (gpu, 105 GiB for JAX)`` or ``cpu (AMD EPYC)``."""
    if not on_accelerator():
        return f"cpu ({_cpu_model()})"
    first = jax.devices()[0]
    total = _memory_stats(first).get("bytes_limit")
    size = f", {total / 2**30:.0f} GiB for JAX" if total else ""
    count = f"{len(jax.devices())} x " if len(jax.devices()) > 1 else ""
    return f"{count}{first.device_kind} ({platform()}{size})"


def _cpu_model() -> str:
    """The processor's name (not its core count: a dask worker pinned to one core is the same device)."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return _platform.machine() or "unknown"


def _memory_stats(device) -> dict:
    try:
        return device.memory_stats() or {}
    except Exception:  # a backend without memory statistics
        return {}


def free_bytes() -> int | None:
    """Memory the accelerator can still give JAX (None on a CPU: the host's memory is checked instead)."""
    if not on_accelerator():
        return None
    stats = _memory_stats(jax.devices()[0])
    if "bytes_limit" not in stats:
        return None
    return int(stats["bytes_limit"] - stats.get("bytes_in_use", 0))


def auto_shard_size(bytes_per_path: int, paths: int, host_bytes: int | None = None) -> int:
    """Paths per shard for ``plan.shard_size: auto`` on this device (see the module's docstring);
    ``host_bytes``: the memory a run may use on the host (budget.memory_limit), None: unbounded."""
    if not on_accelerator():
        fits = CPU_SHARD_SIZE if host_bytes is None else int(MEMORY_SHARE * host_bytes // max(1, bytes_per_path))
        return max(1, min(CPU_SHARD_SIZE, fits))
    free = free_bytes()
    if free is None:     # a backend that does not say: the cap alone
        return max(1, min(ACCELERATOR_SHARD_MAX, paths))
    fits = int(MEMORY_SHARE * free // max(1, bytes_per_path))
    return max(1, min(fits, ACCELERATOR_SHARD_MAX, paths))
