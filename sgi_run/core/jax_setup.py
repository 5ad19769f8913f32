"""The JAX settings sgi-run computes under, in one place: float64, the persistent compilation cache, and
threefry's unrolled lowering on a CPU.

Importing sgi-run changes none of them: a notebook's or a library's JAX stays as its author set it.
``configure()`` sets them for a whole process that sgi-run owns (the ``sgi-run`` and ``sgi-figures``
commands, a dask worker, the test session); ``scope()`` sets them for the duration of one call in a
caller's process (``sgi_run.run``, ``sgi_run.simulate``, ``sgi_run.compose``) and puts them back after.
``require_float64()`` is the check of the functions a caller uses inside their own JAX code
(``sgi_run.step``): they compute in the caller's precision, so they refuse a process without float64
rather than compute in float32. ``scope()`` also refuses, in one line, platforms asked for (``JAX_PLATFORMS``) that
JAX cannot start here (``check_platforms``).
"""
from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import jax
from jax.extend import backend
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

from sgi_run.core import jax_private
from sgi_run.core.errors import ConfigError

COMPILATION_CACHE_ENV = "SGI_RUN_COMPILATION_CACHE"
# Every program is kept: a trivial run compiles ~130 small ones, and keeping only those over 0.2 s
# saved 2.5 of its 12 s where keeping all saved 6 (measured on the 2-core development machine).
CACHE_MIN_COMPILE_SECONDS = 0.0
CACHE_MAX_BYTES = 2 * 2**30
# What a caller does to use sgi-run's functions in their own JAX code (the refusal says it).
ENABLE_X64 = 'jax.config.update("jax_enable_x64", True)'


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
        try:
            return Path(setting).expanduser()
        except RuntimeError:        # ~user of a user this machine does not have
            raise ConfigError(COMPILATION_CACHE_ENV, setting, "a directory to keep compiled programs in (~ for a home "
                              "this machine has), or off") from None
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "sgi-run" / "jax"


def _cache_settings() -> dict:
    """The compilation cache's JAX settings (none where it is off, or where JAX reads its own variable)."""
    where = compilation_cache_dir()
    if where is None or os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return {}
    return {"jax_compilation_cache_dir": str(where),
            "jax_persistent_cache_min_compile_time_secs": CACHE_MIN_COMPILE_SECONDS,
            "jax_compilation_cache_max_size": CACHE_MAX_BYTES}


def _unrolled_threefry() -> Callable | None:
    """Threefry's default lowering (a platform's without one of its own), on the CPU too: its 20 rounds written out, not a loop of
    5 iterations. JAX rolls the loop on the CPU to compile faster, but each iteration is then a pass over
    memory of its own, and the normal transform cannot be fused with the hash: a one-noise draw took 71
    ns, unrolled 19 (one core, 10^6 paths). The same hash, so the same bits. None where this JAX keeps
    the lowering elsewhere: the draws are then the same and slower."""
    return jax_private.unrolled_threefry_lowering()


def threefry_cpu_lowering():
    """The lowering threefry has on the CPU now (JAX's own entry; None where this JAX has none there)."""
    return jax_private.registered_lowering(threefry2x32_p, "cpu")


def _lower_threefry_unrolled() -> None:
    rule = _unrolled_threefry()
    if rule is not None:
        mlir.register_lowering(threefry2x32_p, rule, platform="cpu")


def configure() -> None:
    """Set sgi-run's JAX settings for this whole process: float64 (``jax_enable_x64``), the persistent
    compilation cache (``compilation_cache_dir``) and threefry's unrolled CPU lowering. For processes
    sgi-run owns, before they make an array: the command-line entry points, a dask worker, the tests."""
    jax.config.update("jax_enable_x64", True)
    for name, value in _cache_settings().items():
        jax.config.update(name, value)
    _lower_threefry_unrolled()


def check_platforms() -> None:
    """Refuse (one ``ConfigError`` line) platforms asked for (``JAX_PLATFORMS``) that JAX cannot start on this
    machine, naming those it can: JAX fails at the first array (``cuda`` without a GPU: an AssertionError)."""
    asked = jax.config.jax_platforms
    if not asked:
        return          # JAX chooses among those it can start
    try:
        jax.devices()
    except (RuntimeError, AssertionError) as err:
        key = "JAX_PLATFORMS" if os.environ.get("JAX_PLATFORMS") == asked else "jax_platforms"
        reason = str(err).partition("\n")[0].split(" (set JAX_PLATFORMS", 1)[0]
        raise ConfigError(key, asked, f"platforms JAX can start on this machine ({', '.join(_startable())}), comma-"
                          f"separated, or unset for JAX's choice; {asked} is not available here"
                          + (f" ({reason})" if reason else "")) from None


def _startable() -> list[str]:
    """The platforms JAX starts here when none is asked for (JAX's own list of started backends)."""
    asked = jax.config.jax_platforms
    try:
        jax.config.update("jax_platforms", None)
        return sorted(backend.backends())
    except (ImportError, AttributeError, RuntimeError):
        return ["cpu"]        # XLA's CPU backend is always there
    finally:
        jax.config.update("jax_platforms", asked)


@contextlib.contextmanager
def scope() -> Iterator[None]:
    """sgi-run's JAX settings for the work inside the ``with`` block, the caller's put back after: float64
    on this thread (``jax.enable_x64``; threads the block starts take it with ``carried``), the compilation
    cache where the caller has none of their own, threefry's CPU lowering. The cache and the lowering are
    process-wide while the block runs (the lowering gives the same bits, only faster)."""
    cache = {} if jax.config.jax_compilation_cache_dir is not None else _cache_settings()
    previous_cache = {name: getattr(jax.config, name) for name in cache}
    previous_lowering = threefry_cpu_lowering()
    # In a process configure() set up (the commands, the tests) nothing changes: JAX's global state is left
    # untouched rather than set to what it already is, and the lowering is not registered again.
    relower = previous_lowering is None or previous_lowering.rule is not _unrolled_threefry()
    try:
        for name, value in cache.items():
            jax.config.update(name, value)
        if relower:
            _lower_threefry_unrolled()
        check_platforms()
        with contextlib.nullcontext() if jax.config.jax_enable_x64 else jax.enable_x64(True):
            yield
    finally:
        for name, value in previous_cache.items():
            jax.config.update(name, value)
        if relower and previous_lowering is not None:
            mlir.register_lowering(threefry2x32_p, previous_lowering.rule, platform="cpu",
                                   inline=previous_lowering.inline)


def carried(function: Callable) -> Callable:
    """``function`` to be called from another thread with this thread's float64 setting (``jax.enable_x64``
    holds for the thread that enters it; a new thread starts from the process's)."""
    x64 = bool(jax.config.jax_enable_x64)

    def with_the_callers_precision(*args, **kwargs):
        with jax.enable_x64(x64):
            return function(*args, **kwargs)
    return with_the_callers_precision


def require_float64() -> None:
    """Refuse (one line, with what to do) where JAX computes in float32: sgi-run's numbers are float64."""
    if not jax.config.jax_enable_x64:
        raise ConfigError("jax_enable_x64", False,
                          f"True: sgi-run computes in float64; call {ENABLE_X64} before making arrays")
