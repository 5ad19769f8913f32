"""States that are pytrees ({R, Pi}; a complex 32 x 32 matrix) through the engine, the store and the
runner: shapes and dtypes intact, shard invariance, vector observables, resume."""
import jax.numpy as jnp
import numpy as np
import pytest

import sgi_run
from sgi_run.core.errors import ConfigError
from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import Simulator
from tests.pytree_systems import EulerOnLeaves, NoCoefficients, SkewHermitianFlow, TumblingBody, config, registered

EULER = EulerOnLeaves(name="test_euler", tableau=NoCoefficients())


def _both(system, shards, **plan):
    return [run_shards(Simulator(system, EULER, Plan(**plan, shards=s)), None) for s in shards]


@pytest.mark.slow
def test_a_rigid_body_state_keeps_its_leaves_and_does_not_depend_on_shards():
    plan = dict(paths=60, dt=0.01, T=0.2, output_dt=0.1, keep_paths=4, snapshots=[0.1, 0.2],
                observables=["energy", "Pi_sorted", "orthogonality"])
    one, four = _both(TumblingBody(), (1, 4), **plan)
    assert one.kept["R"].shape == (4, 3, 3, 3) and one.kept["Pi"].shape == (4, 3, 3)
    assert one.kept["Pi_sorted"].shape == (4, 3, 3) and one.kept["energy"].shape == (4, 3)
    assert set(one.snapshots) == {"R", "Pi"} and one.snapshots["R"].shape == (2, 60, 3, 3)
    for name in one.kept:
        assert np.array_equal(one.kept[name], four.kept[name])
    for name in one.snapshots:
        assert np.array_equal(one.snapshots[name], four.snapshots[name])
    assert one.moments.mean.shape == (3, 1 + 3 + 1)        # energy, three sorted entries, orthogonality
    assert np.allclose(one.moments.mean, four.moments.mean, rtol=1e-13, atol=1e-15)
    # The vector observable's entries are the kept paths' own values, sorted.
    assert np.all(np.diff(one.kept["Pi_sorted"], axis=-1) >= 0)
    assert np.allclose(one.kept["Pi_sorted"], np.sort(one.kept["Pi"], axis=-1), rtol=1e-15)


@pytest.mark.slow
def test_a_complex_matrix_state_keeps_its_imaginary_part():
    system = SkewHermitianFlow(n=32)
    plan = dict(paths=12, dt=0.01, T=0.04, output_dt=0.02, keep_paths=2, snapshots=[0.04],
                observables=["spectrum", "casimir"])
    one, three = _both(system, (1, 3), **plan)
    w = one.kept["W"]
    assert w.shape == (2, 3, 32, 32) and w.dtype == np.complex128
    assert np.abs(w.imag).max() > 0.01 and np.abs(w.real).max() > 0.01
    assert one.snapshots["W"].shape == (1, 12, 32, 32) and one.snapshots["W"].dtype == np.complex128
    assert np.array_equal(one.snapshots["W"][0, :2], w[:, -1])
    assert np.array_equal(w, three.kept["W"]) and np.array_equal(one.snapshots["W"], three.snapshots["W"])
    # The kept spectrum is that of the kept state (a real vector observable of 32 entries).
    spectrum = np.linalg.eigvalsh(1j * w[:, -1])
    assert np.allclose(one.kept["spectrum"][:, -1], spectrum, atol=1e-12)
    assert one.moments.mean.shape == (3, 33)


def test_a_complex_observable_is_refused_before_compute():
    class ComplexTrace(SkewHermitianFlow):
        def observables(self):
            return {"trace": lambda z: jnp.trace(z["W"])}
    with pytest.raises(ConfigError, match="plan.observables='trace'.*real-valued"):
        Simulator(ComplexTrace(n=4), EULER, Plan(paths=2, dt=0.1, T=0.1, output_dt=0.1, observables=["trace"]))


@pytest.fixture
def test_systems():
    with registered():
        yield


@pytest.mark.slow
def test_hdf5_keeps_each_leaf_whole_complex_included(runs_root, test_systems):
    cfg = config(runs_root, {"name": "skew_hermitian_flow", "n": 8},
                 dict(paths=20, dt=0.01, T=0.04, output_dt=0.02, keep_paths=3, snapshots=[0.02, 0.04],
                      observables=["spectrum", "casimir"], shards=2))
    result = sgi_run.run(cfg)
    ens = sgi_run.load(result.path)
    assert ens.verified and ens.paths["W"].shape == (3, 3, 8, 8) and ens.paths["W"].dtype == np.complex128
    assert ens.snapshots["W"].shape == (2, 20, 8, 8) and ens.snapshots["W"].dtype == np.complex128
    assert ens.observables["spectrum"]["mean"].shape == (3, 8) and ens.observables["spectrum"]["count"][-1, 0] == 20
    assert ens.observables["casimir"]["mean"].shape == (3,)
    assert np.array_equal(ens.paths["W"], result.ensemble.paths["W"])
    rows = {row["observable"]: row for row in result.summary}
    assert "spectrum [8 entries]" in rows and np.isfinite(rows["spectrum [8 entries]"]["max_rel_mc_error"])
    ds = ens.to_xarray()
    assert ds["path_W"].dims == ("kept_path", "t", "W_axis0", "W_axis1")
    assert ds["spectrum_mean"].dims == ("t", "spectrum_axis0")


@pytest.mark.slow
def test_an_interrupted_pytree_run_resumes_to_the_same_numbers(runs_root, test_systems, tmp_path):
    plan = dict(paths=30, dt=0.01, T=0.1, output_dt=0.05, keep_paths=5, snapshots=[0.1],
                observables=["energy", "Pi_sorted"], shards=3)
    whole = sgi_run.run(config(runs_root, {"name": "tumbling_body"}, plan))

    def stop_after_first(shard):
        raise KeyboardInterrupt
    cfg = config([f"output_root={tmp_path / 'other'}", "progress=off"], {"name": "tumbling_body"}, plan)
    with pytest.raises(KeyboardInterrupt):
        sgi_run.run(cfg, on_shard_done=stop_after_first)
    resumed = sgi_run.run(cfg)
    assert resumed.shards_resumed == 1
    for name in ("R", "Pi", "Pi_sorted", "energy"):
        assert np.array_equal(whole.ensemble.paths[name], resumed.ensemble.paths[name])
    assert np.array_equal(whole.ensemble.snapshots["R"], resumed.ensemble.snapshots["R"])
    assert np.array_equal(whole.ensemble.mean("Pi_sorted"), resumed.ensemble.mean("Pi_sorted"))


MIDPOINT = {"name": "test_midpoint", "family": "test_midpoint", "tableau": {}, "solver": "fixed_point", "tol": 1e-14}


@pytest.mark.slow
def test_a_fixed_point_solve_on_a_complex_state_is_reported_under_its_name(runs_root, test_systems):
    """The implicit midpoint rule on a commutator flow keeps the quadratic Casimir tr(W^2) to the solve's
    tolerance, and the run's diagnostics carry the fixed-point iterations (not Newton's)."""
    plan = dict(paths=10, dt=0.01, T=0.04, output_dt=0.02, keep_paths=10, observables=["casimir", "casimir_change"])
    result = sgi_run.run(config(runs_root, {"name": "skew_hermitian_flow", "n": 8}, plan, MIDPOINT))
    d, ens = result.ensemble.diagnostics, result.ensemble
    assert ens.attrs["solver"] == "fixed_point" and "newton_iterations" not in d
    assert d["fixed_point_unconverged_steps"].sum() == 0 and d["fixed_point_max_iterations"][1:].min() >= 3
    per_step = d["fixed_point_iterations"][1:] / (10 * 2)
    assert np.all((per_step >= 3) & (per_step <= d["fixed_point_max_iterations"][1:]))
    assert np.abs(ens.paths["casimir_change"]).max() <= 1e-12 * np.abs(ens.paths["casimir"]).max()


@pytest.mark.slow
def test_unconverged_steps_are_counted_or_end_the_path_as_asked(runs_root, test_systems):
    plan = dict(paths=6, dt=0.05, T=0.1, output_dt=0.05, keep_paths=0, observables=["energy"])
    counted, ended = (sgi_run.run(config(runs_root, {"name": "tumbling_body"}, plan,
                                         MIDPOINT | {"max_iter": 2, "on_fail": on_fail})).ensemble
                      for on_fail in ("count", "nan"))
    assert counted.diagnostics["fixed_point_unconverged_steps"][1:].tolist() == [6, 6]
    assert counted.diagnostics["nonfinite_paths"][-1] == 0
    assert ended.diagnostics["nonfinite_paths"][-1] == 6


@pytest.mark.slow
def test_a_pytree_shard_resumes_mid_way(tmp_path):
    from tests.engine.test_checkpoint import interrupted_then_resumed
    plan = Plan(paths=8, dt=0.01, T=0.2, output_dt=0.02, keep_paths=3, snapshots=[0.1, 0.2], checkpoint_every=3,
                observables=["spectrum", "casimir"])
    sim = Simulator(SkewHermitianFlow(n=6), EULER, plan)
    whole = run_shards(sim, None)
    _, resumed = interrupted_then_resumed(sim, tmp_path, stop_after_outputs=5)
    assert np.array_equal(whole.kept["W"], resumed.kept["W"]) and resumed.kept["W"].dtype == np.complex128
    assert np.array_equal(whole.snapshots["W"], resumed.snapshots["W"])
    assert np.array_equal(whole.moments.mean, resumed.moments.mean)
