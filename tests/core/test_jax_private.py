"""JAX's private API that sgi-run uses (sgi_run/core/jax_private.py), against the installed JAX: a release that
moves or changes one of these fails here, by name, where a run would only draw its noise more slowly."""
import jax
import numpy as np
from jax.extend.random import threefry2x32_p
from jax.interpreters import mlir

from sgi_run.core import jax_private, jax_setup


def test_the_unrolled_threefry_lowering_is_where_sgi_run_takes_it_from():
    rule = jax_private.unrolled_threefry_lowering()
    assert callable(rule)
    assert mlir._lowerings[threefry2x32_p].rule is rule       # JAX's default, for platforms without their own


def test_the_registered_lowering_reads_back_what_register_lowering_wrote():
    jax_setup.configure()          # as the test session is: the unrolled lowering on the CPU
    found = jax_private.registered_lowering(threefry2x32_p, "cpu")
    assert found.rule is jax_private.unrolled_threefry_lowering() and isinstance(found.inline, bool)

    def marker(*args, **kwargs):
        raise AssertionError("never lowered with")
    try:
        mlir.register_lowering(threefry2x32_p, marker, platform="cpu", inline=found.inline)
        assert jax_private.registered_lowering(threefry2x32_p, "cpu").rule is marker
    finally:
        mlir.register_lowering(threefry2x32_p, found.rule, platform="cpu", inline=found.inline)
    assert jax_private.registered_lowering(threefry2x32_p, "cpu").rule is found.rule
    assert jax_private.registered_lowering(object(), "cpu") is None


def test_the_unrolled_lowering_draws_the_same_bits():
    key = jax.random.key(7)
    draw = jax.jit(lambda k: jax.random.normal(k, (1000,)))
    unrolled = np.asarray(draw(key))
    previous = jax_private.registered_lowering(threefry2x32_p, "cpu")
    from jax._src.random import threefry2x32 as threefry     # JAX's rolled CPU rule, to compare with
    try:
        mlir.register_lowering(threefry2x32_p, threefry._threefry2x32_cpu_lowering_rule, platform="cpu")
        rolled = np.asarray(jax.jit(lambda k: jax.random.normal(k, (1000,)))(key))
    finally:
        mlir.register_lowering(threefry2x32_p, previous.rule, platform="cpu", inline=previous.inline)
    assert np.array_equal(unrolled, rolled)
