import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.systems import Kubo

SYSTEM = Kubo(beta=0.5, nu=0.3)
Z = jnp.array([1.3, -0.4])


def step(integrator, z, dt, dw):
    return integrator.step(SYSTEM, z, dt, jnp.array([[dw]]))[0]


def test_midpoint_is_the_cayley_map_on_kubo(make_integrator):
    """Kraus & Tyranowski (2021) Sec. 4.1, (3.36): midpoint = (I - tau K/2)^-1 (I + tau K/2), tau = dt + beta dW."""
    dt, dw = 0.2, 0.37
    tau = dt + 0.5 * dw
    K = np.array([[0, 1], [-1, -0.3]])
    cayley = np.linalg.solve(np.eye(2) - tau / 2 * K, (np.eye(2) + tau / 2 * K) @ np.asarray(Z))
    assert np.allclose(step(make_integrator("midpoint"), Z, dt, dw), cayley, rtol=1e-13)


def test_dirk_is_two_midpoint_substeps(make_integrator):
    """Kraus & Tyranowski (2021) (3.40), as resolved in docs/papers/kraus_tyranowski_2021.md: DIRK(lam) = midpoint(lam dt, lam dW) then midpoint((1-lam) dt, (1-lam) dW)."""
    midpoint = make_integrator("midpoint")
    for lam in (0.5, 0.3):
        dirk = make_integrator("dirk", parameters={"lam": lam})
        dt, dw = 0.4, -0.6
        two = step(midpoint, step(midpoint, Z, lam * dt, lam * dw), (1 - lam) * dt, (1 - lam) * dw)
        assert np.allclose(step(dirk, Z, dt, dw), two, rtol=1e-12)


def test_heun_and_r2_coincide_on_kubo(make_integrator):
    """Heun and R2 on Kubo (docs/papers/kraus_tyranowski_2021.md): both are I + tau K + tau^2 K^2 / 2 here."""
    for dw in (-0.8, 0.1, 1.4):
        a = step(make_integrator("heun"), Z, 0.1, dw)
        b = step(make_integrator("r2"), Z, 0.1, dw)
        assert np.allclose(a, b, rtol=1e-14)


@pytest.mark.slow
def test_stormer_verlet_jacobian_is_the_corrected_pade_factor(make_integrator):
    """Thm 3.9 with the sign corrected (docs/papers/kraus_tyranowski_2021.md): det = (1 - g/2)/(1 + g/2),
    gamma = dt*nu + dW*beta*nu, independent of the state."""
    sv = make_integrator("stormer_verlet")
    dt, dw = 0.2, 0.45
    gamma = dt * 0.3 + dw * 0.5 * 0.3
    for z in (Z, jnp.array([-2.0, 0.9])):
        det = np.linalg.det(jax.jacfwd(lambda z: step(sv, z, dt, dw))(z))
        assert np.isclose(det, (1 - gamma / 2) / (1 + gamma / 2), rtol=1e-12)


def test_midpoint_area_factor(make_integrator):
    """The exact flow contracts area by exp(-nu tau); the midpoint step (a Cayley map) by
    det(I + tau K/2) / det(I - tau K/2) = (1 - c nu + c^2) / (1 + c nu + c^2), c = tau/2."""
    dt, dw = 0.3, -0.2
    c = (dt + 0.5 * dw) / 2
    det = np.linalg.det(jax.jacfwd(lambda z: step(make_integrator("midpoint"), z, dt, dw))(Z))
    assert np.isclose(det, (1 - 0.3 * c + c**2) / (1 + 0.3 * c + c**2), rtol=1e-12)


def test_newton_iterations_are_reported(make_integrator):
    _, iterations = make_integrator("midpoint").step(SYSTEM, Z, 0.1, jnp.array([[0.2]]))
    assert 1 <= int(iterations) <= 3


@pytest.mark.parametrize("name", ["midpoint", "dirk"])
@pytest.mark.parametrize("solver", ["chord", "fixed_point"])
def test_every_solver_gives_the_newton_step(make_integrator, name, solver):
    """The solver is an option: chord and fixed-point iteration solve the same stage equations."""
    by_newton, stats_newton = make_integrator(name).advance(SYSTEM, Z, 0.1, jnp.array([[0.2]]))
    other, stats = make_integrator(name, solver=solver).advance(SYSTEM, Z, 0.1, jnp.array([[0.2]]))
    assert np.allclose(other, by_newton, rtol=0, atol=1e-11)
    assert not bool(stats.unconverged) and int(stats.iterations) >= int(stats_newton.iterations) >= 1


def test_an_unconverged_solve_is_nan_or_counted_as_asked(make_integrator):
    step = lambda on_fail: make_integrator("midpoint", solver="fixed_point", max_iter=2, on_fail=on_fail).advance(
        SYSTEM, Z, 0.5, jnp.array([[0.2]]))
    (z_nan, stats_nan), (z_kept, stats_kept) = step("nan"), step("count")
    assert np.isnan(z_nan).all() and bool(stats_nan.unconverged)
    assert np.isfinite(z_kept).all() and bool(stats_kept.unconverged) and int(stats_kept.iterations) == 2
