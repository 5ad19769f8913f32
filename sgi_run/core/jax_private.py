"""The parts of JAX's private API sgi-run uses, all here, each with why no public API does.

sgi-run lowers threefry (the counter-based generator of every noise draw) on a CPU as JAX lowers it on a GPU:
its 20 rounds written out, which the CPU's compiler fuses with the normal transform (``jax_setup``). JAX 0.10
exposes the primitive (``jax.extend.random.threefry2x32_p``) and how to register a lowering
(``jax.interpreters.mlir.register_lowering``), but neither the lowering rules it ships nor a read of the lowering
registered now, which ``jax_setup.scope`` needs to put a caller's back. Each name below is tested against the
installed JAX (``tests/core/test_jax_private.py``): a release that moves or changes one fails that test by name,
where a run would only have drawn the same numbers more slowly.
"""
from __future__ import annotations

from collections.abc import Callable

from jax.interpreters import mlir


def unrolled_threefry_lowering() -> Callable | None:
    """JAX's threefry lowering with its rounds written out (its default, for a platform without one of its own;
    the CPU's rolls them into a loop); None where this JAX keeps it elsewhere."""
    try:
        from jax._src.random import threefry2x32 as threefry
        return threefry._threefry2x32_lowering_rule
    except (ImportError, AttributeError):
        return None


def registered_lowering(primitive, platform: str):
    """The lowering registered for ``primitive`` on ``platform`` now (its ``rule`` and ``inline``), None where
    there is none: JAX's own table, which ``register_lowering`` writes and nothing public reads."""
    return mlir._platform_specific_lowerings[platform].get(primitive)


__all__ = ["registered_lowering", "unrolled_threefry_lowering"]
