"""Lowest layer: random variables, nonlinear solvers, float64 set-up. Pure JAX."""
import os
from pathlib import Path

import jax

# Every number in sgi-run is float64: set once, before any array is made.
jax.config.update("jax_enable_x64", True)

COMPILATION_CACHE_ENV = "SGI_RUN_COMPILATION_CACHE"
# Every program is kept: a trivial run compiles ~130 small ones, and keeping only those over 0.2 s
# saved 2.5 of its 12 s where keeping all saved 6 (measured on the 2-core development machine).
CACHE_MIN_COMPILE_SECONDS = 0.0
CACHE_MAX_BYTES = 2 * 2**30


def compilation_cache_dir() -> Path | None:
    """Where compiled XLA programs persist across processes, so repeating a run of the same shapes
    does not compile again (JAX's persistent compilation cache, least recently used entries evicted
    beyond CACHE_MAX_BYTES): ``$SGI_RUN_COMPILATION_CACHE`` (``off``: none), else
    ``$XDG_CACHE_HOME/sgi-run/jax``, by default ``~/.cache/sgi-run/jax``. JAX's own
    ``JAX_COMPILATION_CACHE_DIR``, when set, wins."""
    if os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return Path(os.environ["JAX_COMPILATION_CACHE_DIR"])
    setting = os.environ.get(COMPILATION_CACHE_ENV, "").strip()
    if setting == "off":
        return None
    if setting:
        return Path(setting).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sgi-run" / "jax"


def _use_compilation_cache() -> None:
    where = compilation_cache_dir()
    if where is None or os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return
    jax.config.update("jax_compilation_cache_dir", str(where))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECONDS)
    jax.config.update("jax_compilation_cache_max_size", CACHE_MAX_BYTES)


_use_compilation_cache()
