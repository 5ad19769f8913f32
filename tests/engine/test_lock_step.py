"""A study's state and its step (``engine.lock_step``): the levels stepped in one program keep every number of
the level-by-level lock-step it replaced."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.engine.lock_step import Levels, LockStep


class LevelByLevel(LockStep):
    """The lock-step as it was before the levels shared one program: each level's steps a scan of its own
    (the method's step compiled once per level), its step size a constant. The reference implementation of
    the test below."""

    def _steps(self, z0, dt, xi, compare_with=None):
        system, space = self.levels.inner, self.levels.inner.space

        def one(carry, inputs):
            z, sup = carry
            x, target = inputs
            z, stats = self.integrator.advance(system, z, dt, x)
            if target is not None:
                sup = jnp.maximum(sup, space.distance(z, target) ** 2)
            return (z, sup), (z if compare_with is None else None, stats)

        (z, sup), (path, stats) = jax.lax.scan(one, (z0, jnp.zeros(())), (xi, compare_with))
        return z, sup, path, stats.over_steps()

    def advance(self, system, z, dt, xi):
        from sgi_run.core import noise
        plan, n = self.plan, self.grid_steps
        bound = lambda dt: noise.truncation_bound(plan.truncate, dt)
        variables = lambda dt, name: (noise.coarsen(xi, plan.grid_dt, self.refine(dt), bound(dt))
                                      if system.shared else xi[name])
        out, total, reference_path = dict(z), None, None
        if plan.reference == "fine":
            ref, _, reference_path, total = self._steps(system.part(z, "reference"), plan.grid_dt,
                                                        variables(plan.grid_dt, "reference"))
            out = system.with_part(out, "reference", ref)
        elif system.strong:
            w = z["W"] + jnp.cumsum(xi[:, 0], axis=0)
            times = (z["k"] * n + jnp.arange(1, n + 1)) * plan.grid_dt
            reference_path = jax.vmap(system.inner.exact_state)(times, w[:, 0])
            out["W"] = w[-1]
        sups = []
        for i, level_dt in enumerate(plan.dts):
            r = self.refine(level_dt)
            target = jax.tree.map(lambda x: x[r - 1::r], reference_path) if system.strong else None
            state, sup, _, stats = self._steps(system.part(z, f"level{i}"), level_dt,
                                               variables(level_dt, f"level{i}"), compare_with=target)
            out = system.with_part(out, f"level{i}", state)
            sups.append(sup)
            total = stats if total is None else total.merge(stats)
        if system.strong:
            out["sup_sq_error"] = jnp.maximum(z["sup_sq_error"], jnp.stack(sups))
        out["k"] = z["k"] + 1
        return out, total


@pytest.mark.slow
@pytest.mark.parametrize("system, integrator, keys", [
    ("kubo", "midpoint", dict(error="strong", reference="exact", truncate="log_dt")),
    ("heavy_top", "tmk", dict(error="strong", reference="fine", reference_refine=4)),
    ("kubo", "srkw2", dict(error="weak", reference="fine", reference_refine=2, observable="H")),
    ("kubo", "rs2", dict(error="weak", reference="fine", reference_refine=2, observable="H")),
])
def test_the_levels_through_one_program_keep_every_number_to_round_off(system, integrator, keys):
    """A study's levels stepped in one program (a loop per level, its step size an argument) against each level
    stepped by a scan of its own with its step size a constant (as before): every error, SE and sup error
    equal to round-off, the solver's counts and the non-finite paths exactly, for strong studies against
    the exact path and a fine reference (an implicit Lie-Poisson method) and weak studies with shared
    Gaussian and independent three-point samples."""
    from sgi_run.config import compose_setup
    from sgi_run.engine.convergence import result_of, simulator
    from sgi_run.engine.ensemble import run_shards
    from sgi_run.engine.simulate import Simulator

    _, setup = compose_setup([f"system={system}", f"integrator={integrator}", "plan=convergence", "plan.paths=40",
                              "plan.T=0.5", "plan.dts=[0.125,0.0625,0.03125]", "plan.bootstrap=0",
                              *(f"plan.{k}={v}" for k, v in keys.items())])
    one_program = simulator(setup.system, setup.integrator, setup.plan)
    levels: Levels = one_program.system
    level_by_level = Simulator(levels, LevelByLevel(setup.integrator, levels), one_program.plan)
    results = [(sim, run_shards(sim, None)) for sim in (one_program, level_by_level)]
    (a, ens_a), (b, ens_b) = [(result_of(sim, ens), ens) for sim, ens in results]
    for name in ("error", "se", "sup_error", "sup_se"):
        x, y = getattr(a, name), getattr(b, name)
        if x is not None:
            np.testing.assert_allclose(x, y, rtol=1e-11, atol=0, err_msg=name)
    assert np.array_equal(a.nonfinite, b.nonfinite)
    for field in ("iterations", "max_iterations", "unconverged_steps", "stagnated_steps"):
        assert np.array_equal(getattr(ens_a.solver, field), getattr(ens_b.solver, field)), field
