"""The drift of a system's declared invariants in every ensemble run: the largest |I(z_k) - I(z_0)| over every
step of every finite path, at round-off for a method that keeps the invariant, the same whatever the shards or a
resume, and never NaN because some path went non-finite."""
import functools

import numpy as np

from sgi_run.config import compose_setup
from sgi_run.engine import invariants
from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from sgi_run.systems import Kubo
from tests.engine.test_checkpoint import interrupted_then_resumed
from tests.engine.test_simulate import BlowsUpAboveUnitEnergy

# The heavy top's Casimirs C1 = pi.gamma, C2 = |gamma|^2 (Luesink et al. 2023 section 5): TMK keeps every iterate on the
# coadjoint orbit; the trapezoidal rule applied to the Lie-Poisson equation keeps neither.
HEAVY_TOP = ["system=heavy_top", "plan.paths=30", "plan.T=2", "plan.dt=0.1", "plan.output_dt=0.5"]


@functools.cache
def heavy_top(integrator: str, *more: str):
    """(Simulator, its ensemble result) of the heavy top with ``integrator`` (computed once per process)."""
    _, setup = compose_setup(HEAVY_TOP + [f"integrator={integrator}", *more])
    sim = Simulator(setup.system, setup.integrator, setup.plan)
    return sim, run_shards(sim, None)


def test_tmk_keeps_the_casimirs_to_round_off_and_the_trapezoidal_rule_does_not():
    sim, tmk = heavy_top("tmk")
    _, trapezoidal = heavy_top("lp_trapezoidal")
    assert sim.invariant_names == ("C1", "C2")
    assert tmk.invariant_drift.shape == trapezoidal.invariant_drift.shape == (sim.plan.outputs + 1, 2)
    assert np.all(tmk.invariant_drift[0] == 0) and np.all(trapezoidal.invariant_drift[0] == 0)
    assert np.all(tmk.invariant_drift[-1] > 0) and np.all(tmk.invariant_drift[-1] < 1e-13)
    assert np.all(trapezoidal.invariant_drift[-1] > 1e-6)
    # No path was lost, so the running largest never decreases.
    assert np.all(np.diff(trapezoidal.invariant_drift, axis=0) >= 0)


def test_the_drift_is_over_every_step_not_only_the_output_times():
    """Undamped Kubo declares H, which the symplectic Stormer-Verlet rule keeps only up to a bounded oscillation:
    recorded at every step, the drift of a run with one output interval is the largest over the steps of the same
    paths recorded at every step, more than their drift at the output time."""
    kubo = ["system=kubo", "system.nu=0", "integrator=stormer_verlet", "plan.paths=30", "plan.T=2", "plan.dt=0.1"]
    _, setup = compose_setup(kubo + ["plan.output_dt=0.1", "plan.keep_paths=30"])
    fine = run_shards(Simulator(setup.system, setup.integrator, setup.plan), None)
    _, setup = compose_setup(kubo + ["plan.output_dt=2"])
    coarse = run_shards(Simulator(setup.system, setup.integrator, setup.plan), None)
    h = fine.kept["H"]
    by_hand = np.max(np.abs(h - h[:, :1]))
    np.testing.assert_allclose(coarse.invariant_drift[-1, 0], by_hand, rtol=1e-10)
    np.testing.assert_allclose(fine.invariant_drift[-1, 0], by_hand, rtol=1e-10)
    assert np.max(np.abs(h[:, -1] - h[:, 0])) < 0.9 * by_hand    # what output times alone would have shown


def test_the_drift_is_the_same_whatever_the_shards():
    _, one = heavy_top("lp_trapezoidal")
    for shards in (2, 7):
        _, more = heavy_top("lp_trapezoidal", f"plan.shards={shards}")
        np.testing.assert_array_equal(more.invariant_drift, one.invariant_drift)


def test_a_resumed_shard_carries_its_paths_drift(tmp_path):
    """Part-way checkpoints hold each path's running sup: the resumed run's drift is the whole run's (undamped Kubo's
    H under Stormer-Verlet, whose drift comes and goes: a sup started again at the resume would be less)."""
    _, setup = compose_setup(["system=kubo", "system.nu=0", "integrator=stormer_verlet", "plan.paths=30", "plan.T=4",
                              "plan.dt=0.1", "plan.output_dt=0.1", "plan.checkpoint_every=19"])
    sim = Simulator(setup.system, setup.integrator, setup.plan)
    whole = run_shards(sim, None)
    _, resumed = interrupted_then_resumed(sim, tmp_path, stop_after_outputs=39)   # from output 38 of 40
    assert resumed.resumed_part_way == {0: 38}
    np.testing.assert_array_equal(resumed.invariant_drift, whole.invariant_drift)


def test_a_nonfinite_path_does_not_poison_the_drift(make_integrator):
    """The undamped oscillator declares H; Heun lets it drift. The paths that go non-finite are left out, as the
    statistics leave them out: the drift is the largest over the others, not NaN."""
    plan = Plan(paths=200, dt=0.1, T=1.0, output_dt=0.1, shards=3, keep_paths=200, observables=["H"])
    system = BlowsUpAboveUnitEnergy()
    result = run_shards(Simulator(system, make_integrator("heun"), plan), None)
    assert system.invariants() == ("H",)
    h = result.kept["H"]
    finite = np.all(np.isfinite(h), axis=1)
    assert 0 < (~finite).sum() == result.nonfinite[-1]
    by_hand = np.max(np.abs(h[finite] - h[finite, :1]))
    assert by_hand > 0
    np.testing.assert_allclose(result.invariant_drift[-1, 0], by_hand, rtol=1e-12)


def test_a_system_without_invariants_records_no_drift(make_integrator):
    plan = Plan(paths=20, dt=0.1, T=1.0, output_dt=0.5)
    sim = Simulator(Kubo(nu=0.3), make_integrator("heun"), plan)
    assert sim.invariant_names == () and run_shards(sim, None).invariant_drift is None


def test_largest_leaves_out_nonfinite_and_uncounted_paths_and_merges_exactly():
    sup = np.array([[1.0, np.nan], [3.0, np.inf], [2.0, np.nan]])
    counted = np.array([[True], [False], [True]])
    np.testing.assert_array_equal(invariants.largest(sup, counted), [2.0, np.nan])
    np.testing.assert_array_equal(invariants.largest(sup), [3.0, np.nan])
    np.testing.assert_array_equal(invariants.merge(np.array([2.0, np.nan, np.nan]), np.array([1.0, 4.0, np.nan])),
                                  [2.0, 4.0, np.nan])
