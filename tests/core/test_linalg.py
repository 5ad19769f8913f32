import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core.linalg import solve


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 4, 8, 9, 12, 13])
def test_matches_numpy(n):
    rng = np.random.default_rng(n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=n)
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)


def test_needs_pivoting():
    a = np.array([[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]])
    b = np.array([1.0, 2.0, 3.0])
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-13)
    swap = np.array([[0.0, 1.0], [1.0, 0.0]])          # 2 x 2: Cramer's rule needs no pivot
    assert np.allclose(solve(swap, b[:2]), [2.0, 1.0], rtol=1e-15)


@pytest.mark.slow
@pytest.mark.parametrize("n", [1, 2, 3, 6, 8, 9, 12, 13])
def test_matrix_right_hand_sides_and_the_inverse_operator(n):
    """The chord method's frozen Jacobian: an explicit inverse up to UNROLL_MAX unknowns, LU above (13)."""
    from sgi_run.core.linalg import inverse_operator
    rng = np.random.default_rng(10 + n)
    a, b = rng.normal(size=(n, n)), rng.normal(size=(n, 3))
    assert np.allclose(solve(a, b), np.linalg.solve(a, b), rtol=1e-10, atol=1e-12)
    apply = inverse_operator(a)
    assert np.allclose(apply(b[:, 0]), np.linalg.solve(a, b[:, 0]), rtol=1e-10, atol=1e-12)


def test_complex_products_are_three_real_ones_to_round_off():
    """matmul: Gauss's three real products for complex matrices (normwise round-off: within a few n eps
    |A| |B| of the complex product), the plain product for real ones, batched like @."""
    from sgi_run.core.linalg import matmul
    rng = np.random.default_rng(3)
    n = 64
    a, b = (rng.normal(size=(2, n, n)) + 1j * rng.normal(size=(2, n, n)) for _ in range(2))
    exact = np.einsum("bij,bjk->bik", a.astype(np.clongdouble), b.astype(np.clongdouble))
    bound = 4 * n * np.finfo(float).eps * np.abs(a).max() * np.abs(b).max()
    assert 0 < np.abs(np.asarray(matmul(a, b)) - exact).max() <= bound
    real = rng.normal(size=(n, n))
    assert np.array_equal(np.asarray(matmul(real, real)), np.asarray(jnp.asarray(real) @ jnp.asarray(real)))


def test_small_products_written_out_agree_with_the_library_ones():
    """inner and matmul write out what sums at most SMALL terms: the same products to round-off (a few ulps
    of |a| |b|); larger ones are the library's."""
    from sgi_run.core.linalg import SMALL, inner, matmul
    rng = np.random.default_rng(4)
    for n in (3, 6, SMALL, SMALL + 1):
        a, b, v = rng.normal(size=(n, n)), rng.normal(size=(n, n)), rng.normal(size=n)
        bound = 2 * n * np.finfo(float).eps * np.abs(a).max() * max(np.abs(b).max(), np.abs(v).max())
        assert np.abs(np.asarray(matmul(a, b)) - a @ b).max() <= bound
        assert np.abs(np.asarray(matmul(a, v)) - a @ v).max() <= bound
        assert abs(float(inner(a[0], v)) - a[0] @ v) <= bound


def _two_hundred_steps(overrides):
    """A function that steps 64 paths 200 times on fixed draws (dt = 0.01), as the code now is, and gives the
    final states, the step's program as traced and the solver iterations summed."""
    import jax
    from sgi_run.config import compose_setup
    from sgi_run.engine.simulate import PATHS_AXIS, Simulator

    _, setup = compose_setup(overrides + ["plan.paths=64", "plan.dt=0.01", "plan.T=2", "plan.output_dt=2"])
    sim = Simulator(setup.system, setup.integrator, setup.plan)
    keys, noise_keys = sim._keys(0, 64)
    draws = sim._draws(noise_keys, 0, 200, sim.dt, sim.bound)

    def path():
        step = jax.jit(jax.vmap(lambda z, x: setup.integrator.advance(setup.system, z, sim.dt, x), in_axes=(0, PATHS_AXIS)))
        z = sim._initial_states(keys)
        program = step.lower(z, draws[0]).as_text()
        iterations = 0
        for x in draws:
            z, stats = step(z, x)
            assert not np.asarray(stats.unconverged).any()
            iterations += int(np.sum(stats.iterations))
        return np.concatenate([np.ravel(leaf) for leaf in jax.tree.leaves(z)]), program, iterations
    return path


def _assert_agree_to_round_off(path, change, iteration_tolerance):
    """``path`` (``_two_hundred_steps``) as the code is, then after ``change()``: two programs, whose solver
    iterations agree to ``iteration_tolerance`` (relative) and whose final states agree to round-off."""
    states, program, iterations = path()
    change()
    reference, reference_program, reference_iterations = path()
    assert program != reference_program                 # the two forms are two programs
    assert reference_iterations > 0 and abs(iterations - reference_iterations) <= iteration_tolerance * reference_iterations
    assert np.isfinite(states).all()
    assert np.abs(states - reference).max() <= 1e-12 * np.abs(reference).max()


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [["system=rigid_body", "integrator=isomp"],
                                       ["system=rigid_body", "integrator=lgvi_cayley", "system.R0=[[1,0,0],[0,1,0],[0,0,1]]"],
                                       ["system=heavy_top", "integrator=tmk"],
                                       ["system=manakov", "integrator=isomp"],
                                       ["system=kubo", "integrator=midpoint"],
                                       ["system=van_der_pol", "integrator=dirk"],
                                       ["system=heavy_top", "integrator=lp_trapezoidal"]])
def test_the_written_out_small_products_keep_every_step_to_round_off(monkeypatch, overrides):
    """The Lie-group and Lie-Poisson steps with their small dot products and 3 x 3 to 10 x 10 products
    written out, and Newton's stopping test with its max-norm written out (issue 26), against the same steps
    with the library's (SMALL = 0): 200 steps of 64 paths on the same draws agree to round-off, with the same
    solver iterations but where an update lies within an ulp of the tolerance."""
    from sgi_run.core import linalg

    # An update within an ulp of the tolerance may stop one iteration sooner or later (Manakov: 2 of 136731).
    _assert_agree_to_round_off(_two_hundred_steps(overrides), lambda: monkeypatch.setattr(linalg, "SMALL", 0), 1e-4)


def _exchanges(a, ties=False):
    """Whether partial pivoting (the first row of largest |entry|, as jnp.argmax) exchanges a row of ``a``; with
    ``ties``, also whether some entry below a pivot is as large as the pivot (which it does not exchange)."""
    m = np.array(a, dtype=float)
    for k in range(len(m)):
        pivot = k + int(np.argmax(np.abs(m[k:, k])))
        if pivot != k or (ties and (np.abs(m[k + 1:, k]) >= np.abs(m[k, k])).any()):
            return True
        m[k + 1:] -= np.outer(m[k + 1:, k] / m[k, k], m[k])
    return False


def test_a_batch_is_eliminated_without_exchanges_unless_a_matrix_needs_one():
    """Under vmap, solve eliminates without row exchanges where partial pivoting would make none (it says
    which; a tie, where it makes none, is sent to the pivoted one too), and the whole batch takes the pivoted
    elimination where any matrix needs an exchange: every solution within round-off of NumPy's either way, and
    those of the two eliminations within round-off of each other."""
    import jax
    from sgi_run.core import linalg
    rng = np.random.default_rng(7)
    n = 6
    dominant = np.eye(n) + 0.15 * rng.normal(size=(32, n, n))        # I - dt J: no exchange
    b = rng.normal(size=(32, n))
    mixed = dominant.copy()
    mixed[5] = rng.normal(size=(n, n))                                 # a general matrix
    mixed[9, :3, :3] = [[0.0, 1.0, 2.0], [1.0, 0.0, 1.0], [2.0, 1.0, 0.0]]   # a zero first pivot
    mixed[12, 1, 0] = mixed[12, 0, 0]                                  # a tie: argmax keeps row 0
    for a in (dominant, mixed):
        rows = lambda m, v: (linalg._rows(m), linalg._rows(v[:, None]))     # the eliminations' form
        _, exchanged = jax.vmap(lambda m, v: linalg._without_exchanges(*rows(m, v)))(a, b)
        assert list(np.asarray(exchanged)) == [_exchanges(m, ties=True) for m in a]
        x = np.asarray(jax.jit(jax.vmap(linalg.solve))(a, b))
        exact = np.linalg.solve(a, b[..., None])[..., 0]
        assert np.abs(x - exact).max() <= 1e-12 * np.abs(exact).max()
        pivoted = jax.vmap(lambda m, v: jnp.array(linalg._pivoted(*rows(m, v)))[:, 0])(a, b)
        assert np.abs(x - np.asarray(pivoted)).max() <= 1e-13 * np.abs(exact).max()
    assert not any(map(_exchanges, dominant)) and _exchanges(mixed[9])     # both branches were taken
    assert not _exchanges(mixed[12]) and _exchanges(mixed[12], ties=True)


@pytest.mark.slow
def test_srkw2s_twelve_unknowns_eliminated_keep_every_step_to_round_off(monkeypatch):
    """SRKw2's coupled stages on the Kubo oscillator (12 x 12 Newton systems) eliminated unrolled, between
    optimization barriers (issue 26), against LAPACK's solve (UNROLL_MAX = 8, as before): 200 steps of 64 paths
    on the same draws agree to round-off, with the same Newton iterations."""
    from sgi_run.core import linalg

    assert linalg.UNROLL_MAX >= 12 > linalg.FUSED_MAX
    _assert_agree_to_round_off(_two_hundred_steps(["system=kubo", "integrator=srkw2"]),
                               lambda: monkeypatch.setattr(linalg, "UNROLL_MAX", 8), 0)


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [["system=heavy_top", "integrator=tmk"],
                                       ["system=heavy_top", "integrator=lp_trapezoidal"]])
def test_elimination_without_exchanges_keeps_every_step_to_round_off(monkeypatch, overrides):
    """The chord's 6 x 6 inverse (TMK) and Newton's 6 x 6 solves (the trapezoidal rule) eliminated without row
    exchanges (issue 26) against the pivoted elimination every path took before: 200 steps of 64 paths on the
    same draws agree to round-off, with the same solver iterations."""
    from sgi_run.core import linalg

    _assert_agree_to_round_off(_two_hundred_steps(overrides),
                               lambda: monkeypatch.setattr(linalg, "_eliminate", linalg._pivoted), 0)


def test_components_compute_what_arrays_compute():
    """A 3-vector kept as components (``Components``) gives the cross and dot products and the vector arithmetic
    of the array it was split from, and is joined back to it; beside an unsplit vector it is refused."""
    import jax
    from sgi_run.core.linalg import Components, cross, inner, is_split, join_vectors, split_vectors
    rng = np.random.default_rng(3)
    a, b = jnp.asarray(rng.normal(size=3)), jnp.asarray(rng.normal(size=3))
    sa, sb = split_vectors(a), split_vectors(b)
    assert isinstance(sa, Components) and is_split((sa, b)) and not is_split((a, b))
    np.testing.assert_array_equal(join_vectors(sa), a)
    np.testing.assert_allclose(join_vectors(cross(sa, b)), np.cross(a, b), rtol=1e-15, atol=1e-15)
    np.testing.assert_allclose(float(inner(sa, sb)), float(a @ b), rtol=1e-15)
    combined = 2.0 - sa * 3.0 + sb / 4.0 - (-sa)
    np.testing.assert_allclose(join_vectors(combined), 2.0 - a * 3.0 + b / 4.0 + a, rtol=1e-15)
    # a pytree: the loops carry it and vmap maps over it
    batched = jax.vmap(lambda v: join_vectors(cross(split_vectors(v), split_vectors(v[::-1]))))(jnp.stack([a, b]))
    np.testing.assert_allclose(batched, np.cross(np.stack([a, b]), np.stack([a[::-1], b[::-1]])), atol=1e-15)
    assert not isinstance(split_vectors(jnp.ones((3, 3))), Components)      # matrices stay as they are
    with pytest.raises(TypeError, match="split_vectors"):
        sa + b


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [["system=rigid_body", "integrator=isomp"],
                                       ["system=rigid_body", "integrator=lgvi_cayley", "system.R0=[[1,0,0],[0,1,0],[0,0,1]]"],
                                       ["system=heavy_top", "integrator=lgvi_cayley"],
                                       ["system=heavy_top", "integrator=lp_midpoint"]])
def test_fixed_point_iterates_in_components_keep_every_step_to_round_off(monkeypatch, overrides):
    """A fixed-point step's so(3)* and se(3)* vectors iterated as components (``SolverOptions.in_components``,
    issue 26) against the same steps on arrays: 200 steps of 64 paths on the same draws agree to round-off, with
    the same solver iterations but where an update lies within an ulp of the tolerance."""
    from sgi_run.core import solvers

    _assert_agree_to_round_off(_two_hundred_steps(overrides),
                               lambda: monkeypatch.setattr(solvers.SolverOptions, "in_components", lambda self, tree: tree),
                               1e-4)


@pytest.mark.slow
@pytest.mark.parametrize("overrides", [["system=heavy_top", "integrator=tmk"], ["system=rigid_body", "integrator=tmk"]])
def test_the_chords_jacobian_on_components_keeps_every_step_to_round_off(monkeypatch, overrides):
    """The chord's Jacobian taken on the unknowns as components, one jvp per unknown, and it and its inverse kept
    as entries (issue 26), against the Jacobian by jacfwd on the flat vector, assembled: 200 TMK steps of 64
    paths on the same draws agree to round-off, with the same chord iterations."""
    from sgi_run.core import linalg

    _assert_agree_to_round_off(_two_hundred_steps(overrides),
                               lambda: monkeypatch.setattr(linalg, "split_vectors", lambda tree: tree), 0)
