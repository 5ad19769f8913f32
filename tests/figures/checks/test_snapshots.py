"""Check kinds on the whole ensemble at one time (synthetic snapshots and kept paths): each one can PASS and
can FAIL."""
import math

import numpy as np
import pytest

from sgi_run.core.errors import ConfigError
from sgi_run.figures.checks import evaluate, validate
from sgi_run.figures.results import FAIL, PASS, SKIP, RunData
from tests.figures.checks.helpers import EXACT, LB, T, check, data_check, kept, run_data, series


def test_snapshot_variance_and_its_standard_error():
    rng = np.random.default_rng(1)
    v = rng.normal(0.0, 1.0, 40000)
    data = run_data({"H": EXACT}, snapshot={"x": rng.uniform(size=v.size), "v": v})
    ok = data_check("snapshot_variance", data, coordinate="v", reference="ergodic_mean:v_sq", min=-0.04, max=0.04)
    assert ok.verdict == PASS and ok.se == pytest.approx(np.sqrt(2 / v.size), rel=0.05)
    wide = run_data({"H": EXACT}, snapshot={"x": v, "v": 1.1 * v})
    assert data_check("snapshot_variance", wide, coordinate="v", reference=1.0, min=-0.04, max=0.04).verdict == FAIL
    assert data_check("snapshot_variance", run_data({"H": EXACT}), coordinate="v", max=1).verdict == SKIP


def test_density_l1_tells_the_gibbs_marginal_from_the_initial_one():
    """Samples of the Gibbs x-marginal (rejection from uniform) pass; samples of the initial
    positions (1 + eps cos 2 pi x) fail; positions are wrapped mod 1 first."""
    rng = np.random.default_rng(2)
    u = rng.uniform(size=400000)
    peak = LB.gibbs_density_x(np.linspace(0, 1, 2001)).max()
    gibbs = u[rng.uniform(size=u.size) * peak < LB.gibbs_density_x(u)][:100000] + rng.integers(-3, 3, 100000)
    spec = dict(coordinate="x", density="gibbs_density_x", bins=50, range=[0, 1], period=1, base=0.0, k=3)
    ok = data_check("density_l1", run_data({"H": EXACT}, snapshot={"x": gibbs, "v": gibbs}), **spec)
    assert ok.verdict == PASS and ok.value < 0.02
    initial = u[rng.uniform(size=u.size) * 1.25 < LB.initial_density_x(u)][:100000]
    assert data_check("density_l1", run_data({"H": EXACT}, snapshot={"x": initial, "v": initial}), **spec).verdict == FAIL


def test_ks_test_of_the_initial_positions():
    rng = np.random.default_rng(3)
    u = rng.uniform(size=200000)
    initial = u[rng.uniform(size=u.size) * 1.25 < LB.initial_density_x(u)]
    spec = dict(coordinate="x", cdf="initial_cdf_x", min_p=1e-3)
    assert data_check("ks_test", run_data({"H": EXACT}, snapshot={"x": initial, "v": u}), **spec).verdict == PASS
    assert data_check("ks_test", run_data({"H": EXACT}, snapshot={"x": u, "v": u}), **spec).verdict == FAIL


def test_constraint_residual_on_the_sphere():
    from sgi_run.systems.langevin import SphericalPendulum
    q = np.array([[0.0, 0.6], [0.0, 0.0], [-1.0, 0.8]])
    p = np.array([[1.0, -0.8], [0.5, 0.0], [0.0, 0.6]])
    snap = {**{f"q{i + 1}": q[i] for i in range(3)}, **{f"p{i + 1}": p[i] for i in range(3)}}
    data = RunData({"H": series(EXACT, exact=None)}, "H", SphericalPendulum(), lambda t: snap, 2)
    assert data_check("constraint_residual", data, max=1e-12).verdict == PASS
    snap["q1"] = q[0] * (1 + 1e-9)
    assert data_check("constraint_residual", data, max=1e-12).verdict == FAIL


def test_spectrum_fraction_of_a_snapshot_state():
    """Ephrati et al. (2024) Figure 2: the enstrophy (energy) fraction in chosen degrees of one path's state, from the
    system's enstrophy_spectrum; a synthetic su(6) state with S_l = 1, 2, 3, 4, 5 on l = 1..5."""
    from sgi_run.figures.results import RunData
    from sgi_run.systems.zeitlin import ZeitlinEuler, degrees, hbar, matrix_quflow

    system = ZeitlinEuler(N=6)
    l = degrees(6)
    omega = np.where(l > 0, np.sqrt(l / np.maximum(2 * l + 1, 1)), 0.0)        # S_l = (2l+1) l / (2l+1) = l
    x = matrix_quflow(omega) / hbar(6)
    snaps = {0.0: {"X": x[None]}, 5.0: {"X": np.stack([x, 2 * x])}}
    data = RunData({"H": series(EXACT, exact=None)}, "H", system, lambda t: snaps.get(5.0 if t is None else t), 1,
                   snapshot_times=(0.0, 5.0))
    enstrophy = {"id": "c", "kind": "spectrum_fraction", "quantity": "enstrophy", "at": 0.0, "above": 2}
    validate(enstrophy, "test")
    high = evaluate({**enstrophy, "min": 0.8}, "run", data)          # (3 + 4 + 5) / 15
    assert high.verdict == PASS and high.value == pytest.approx(12 / 15, rel=1e-12) and high.t == 0.0
    assert high.se is None and "l > 2" in high.detail
    assert evaluate({**enstrophy, "max": 0.7}, "run", data).verdict == FAIL
    band = evaluate({**enstrophy, "at_most": 4}, "run", data)         # 2 < l <= 4: (3 + 4) / 15
    assert band.value == pytest.approx(7 / 15, rel=1e-12) and "2 < l <= 4" in band.detail
    energy = {"id": "c", "kind": "spectrum_fraction", "quantity": "energy", "at_most": 1, "path": 1}
    validate(energy, "test")
    last = evaluate(energy, "run", data)          # the last snapshot by default; E_l = l / (l(l+1)) = 1/(l+1)
    expected = 0.5 / sum(1 / (k + 1) for k in range(1, 6))
    assert last.value == pytest.approx(expected, rel=1e-12) and last.t == 5.0 and last.verdict == PASS
    assert evaluate({**enstrophy, "at": 50.0}, "run", data).verdict == SKIP
    with pytest.raises(ConfigError, match="path"):
        evaluate({**enstrophy, "path": 1}, "run", data)        # one path stored at t = 0
    with pytest.raises(ConfigError, match=r"^test\.quantity='vorticity' is not allowed: one of "):
        validate({**enstrophy, "quantity": "vorticity"}, "test")
    with pytest.raises(ConfigError, match=r"^test\.above=10\.5 is not allowed: an integer"):
        validate({**enstrophy, "above": 10.5}, "test")


def test_effective_potential_of_the_heavy_top_from_a_runs_momenta():
    """Gay-Balmaz & Wu (2024) Sec. 8, Fig. 3: V(theta; p_psi = 1, p_phi = cos 0.15 pi) has its minimum 0.861102 at 0.528597,
    and V = E' = 0.873186 at 0.471239 (= 0.15 pi) and 0.591606; a later E' shows as a change of E'."""
    from types import SimpleNamespace

    from sgi_run.figures.results import RunData
    p_phi, e_prime = math.cos(0.15 * math.pi), 0.5 + 0.98 * math.cos(0.15 * math.pi) - 0.5
    curves = {"p_psi": kept(np.ones_like(T)), "p_phi": kept(np.full_like(T, p_phi)),
              "E_prime": kept(np.where(T < 20, e_prime, e_prime + 0.1))}
    run = RunData(curves, "p_psi", system=SimpleNamespace(inertia=(0.1, 0.1, 1.0), mg=0.98))
    expected = {"argmin": 0.528597, "min": 0.861102, "root_low": 0.15 * math.pi, "root_high": 0.591606,
                "E_prime": 0.873186}
    for statistic, value in expected.items():
        spec = {"id": "c", "kind": "effective_potential", "statistic": statistic, "at": 0,
                "min": value - 2e-6, "max": value + 2e-6}
        validate(spec, "test")
        result = evaluate(spec, "run", run)
        assert result.verdict == PASS, (statistic, result.value)
    convex = {"id": "c", "kind": "effective_potential", "statistic": "min_curvature", "window": [0.2, 1.0], "min": 0}
    assert evaluate(convex, "run", run).verdict == PASS
    change = {"id": "c", "kind": "effective_potential", "statistic": "E_prime", "at": 20, "minus_at": 0,
              "absolute": True, "min": 0.01}
    result = evaluate(change, "run", run)
    assert result.verdict == PASS and result.value == pytest.approx(0.1)
    assert result.measured().startswith("|E' (t=20) - E' (t=0)| = 0.1 at t=20 (band >= 0.01")
    assert evaluate({**change, "min": 0.2}, "run", run).verdict == FAIL
    assert evaluate({**change, "at": 500}, "run", run).verdict == SKIP
    with pytest.raises(ConfigError, match="statistic"):
        validate({**change, "statistic": "median"}, "test")


def test_ensemble_spread_and_its_growth_between_times():
    """Gay-Balmaz & Wu (2024) Fig. 2 gives no spread metric; the project's: the mean pairwise distance of the kept paths' pi; a list of times takes the largest."""
    from sgi_run.figures.results import RunData
    pi = np.zeros((3, len(T), 3))
    pi[1, :, 0], pi[2, :, 1] = T / 100, T / 50          # at T = 100: distances 1, 2 and sqrt 5
    run = RunData({"pi1": kept(*pi[:, :, 0])}, "pi1", kept={"pi": pi})
    spec = {"id": "c", "kind": "ensemble_spread", "at": 100, "min": 1.7, "max": 1.8}
    validate(spec, "test")
    result = evaluate(spec, "run", run)
    assert result.verdict == PASS and result.value == pytest.approx((1 + 2 + np.sqrt(5)) / 3)
    growth = evaluate({**spec, "at": [50, 100], "minus_at": 10, "min": 0, "max": None}, "run", run)
    assert growth.verdict == PASS and growth.value == pytest.approx((1 + 2 + np.sqrt(5)) * 0.9 / 3)
    assert evaluate({**spec, "at": 500}, "run", run).verdict == SKIP
    with pytest.raises(ConfigError, match=r"^test\.at=\[\] is not allowed: an output time"):
        validate({**spec, "at": []}, "test")


# --- the solvability map of the Cayley LGVI's implicit equations (Gay-Balmaz & Wu 2024 Fig. 14) ----------------------
def test_solvability_of_the_rigid_bodys_implicit_equations_from_the_runs_integrator(make_integrator):
    """Gay-Balmaz & Wu (2024) Fig. 14, as measured by the project: converged everywhere in <= 10 iterations, ||(A, B)|| = sqrt 2 (1 +- 4e-5),
    [1.4142145, 1.4142224] without noise; "D" is the run's truncation bound."""
    from sgi_run.figures.results import RunData
    from sgi_run.systems import RigidBody
    system = RigidBody(inertia=(1.0, 2.0, 3.0), noise_kind="linear", noise_amplitude=0.02, pi0=(-0.5878, 0.0, 0.809))
    run = RunData({"H": kept(np.ones_like(T))}, "H", system, dt=0.01, integrator=make_integrator("lgvi_cayley", tol=1e-15),
                  increment_bound=float(np.sqrt(4 * abs(np.log(0.01)) * 0.01)))
    spec = {"id": "c", "kind": "solvability", "statistic": "norm_max", "increments": [[0, 0, 0], ["D", "D", "D"]],
            "min": 1.41420, "max": 1.41426}
    validate(spec, "test")
    result = evaluate(spec, "map", run)
    assert result.verdict == PASS and "ΔW = (D, D, D), D = 0.42919" in result.detail and "16471 points" in result.detail
    zero = evaluate({**spec, "increments": [[0, 0, 0]], "min": 1.4142145, "max": 1.4142225}, "map", run)
    assert zero.verdict == PASS and zero.value == pytest.approx(1.4142224, abs=1e-7)
    assert evaluate({**spec, "statistic": "max_iterations", "min": None, "max": 10}, "map", run).verdict == PASS
    assert evaluate({**spec, "statistic": "unconverged", "min": None, "max": 0}, "map", run).value == 0
    assert len(run.memo) == 2          # one map per increment vector, computed once
    for bad in ([[0, "E", 0]], [], [1, 2]):
        with pytest.raises(ConfigError, match=r"^test\.increments=.* is not allowed: a list of increment vectors"):
            validate({**spec, "increments": bad}, "test")


def test_across_paths_fractions_and_medians_of_per_path_values():
    """Gay-Balmaz & Wu (2024) Figs 7, 9, 12: a statistic over every kept path, each reduced to x(at), |x(at) - x(0)| or its
    running min/max; the fraction carries the binomial SE, the median its normal-approximation SE."""
    ramps = [1 + c * T / 100 for c in (0.0, 0.005, 0.02, 0.05)]      # |x(100) - x(0)| = 0, 0.005, 0.02, 0.05
    run = kept(*ramps)
    moved = check("across_paths", run, per_path="abs_change", at=100, statistic="fraction_above", threshold=0.01,
                  min=0.4)
    assert moved.verdict == PASS and moved.value == 0.5 and moved.se == pytest.approx(0.25)
    assert check("across_paths", run, per_path="abs_change", at=100, statistic="fraction_above", threshold=0.01,
                 min=0.9).verdict == FAIL
    median = check("across_paths", run, per_path="value", at=50, statistic="median", min=1.0, max=1.02)
    assert median.verdict == PASS and median.value == pytest.approx(1 + 0.0125 / 2)
    lowest = check("across_paths", kept(np.cos(T / 20), np.sin(T / 20) + 2), per_path="running_min", at=40,
                   statistic="fraction_below", threshold=0.0, max=0)
    assert lowest.verdict == FAIL and lowest.value == 0.5          # cos dips below 0 by t = 40, sin + 2 never
    assert check("across_paths", run, per_path="value", at=55, statistic="median").verdict == SKIP
    for key, value in (("per_path", "mean"), ("statistic", "mode")):
        with pytest.raises(ConfigError, match=rf"^test\.{key}='{value}' is not allowed: one of"):
            validate({"id": "c", "kind": "across_paths", "per_path": "value", "statistic": "median", key: value}, "test")
