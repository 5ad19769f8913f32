import jax
import jax.numpy as jnp
import numpy as np
import pytest

from sgi_run.core import noise

N = 200_000


def draws(kind, dt, refine=1, truncate=None, m=1):
    keys = jax.vmap(noise.noise_key)(noise.path_keys(7, 0, N))
    return np.asarray(jax.vmap(lambda k: noise.increments(kind, k, 3, dt, m, refine, truncate))(keys))


def within(sample, expected, sigmas=5):
    return abs(sample.mean() - expected) <= sigmas * sample.std(ddof=1) / np.sqrt(len(sample))


@pytest.mark.slow
def test_gaussian_increment_has_variance_dt():
    dw = draws("gaussian", 0.3)[:, 0, 0]
    assert within(dw, 0.0) and within(dw**2, 0.3)


@pytest.mark.slow
@pytest.mark.parametrize("refine", [1, 4])
def test_pair_moments(refine):
    dt = 0.5
    xi = draws("gaussian_pair", dt, refine)
    dw, dz = xi[:, 0, 0], xi[:, 1, 0]
    assert within(dw**2, dt) and within(dz**2, dt**3 / 3) and within(dw * dz, dt**2 / 2)


def test_pair_and_gaussian_share_the_brownian_increment():
    assert np.array_equal(draws("gaussian", 0.2)[:, 0], draws("gaussian_pair", 0.2)[:, 0])


def test_three_point_law():
    dt = 0.1
    i = draws("three_point", dt)[:, 0, 0]
    a = np.sqrt(3 * dt)
    assert set(np.unique(np.round(i / a, 12))) == {-1.0, 0.0, 1.0}
    assert within(i**2, dt) and within(i**4, 3 * dt**2)
    assert abs(np.mean(i == 0) - 2 / 3) < 5 * np.sqrt(2 / 9 / N)


@pytest.mark.slow
def test_aggregation_sums_the_fine_path():
    key = noise.noise_key(noise.path_keys(1, 0, 1)[0])
    fine = jnp.stack([noise.increments("gaussian_pair", key, s, 0.25, 1) for s in range(8, 12)])
    coarse = noise.increments("gaussian_pair", key, 2, 1.0, 1, refine=4)
    w_before = jnp.cumsum(fine[:, 0, 0]) - fine[:, 0, 0]
    assert np.isclose(coarse[0, 0], fine[:, 0, 0].sum(), rtol=1e-14)
    assert np.isclose(coarse[1, 0], (fine[:, 1, 0] + w_before * 0.25).sum(), rtol=1e-14)


def test_truncation_clips_dw_only():
    xi = draws("gaussian_pair", 1.0, truncate=0.5)
    assert np.abs(xi[:, 0]).max() <= 0.5 and np.abs(xi[:, 1]).max() > 0.5


def test_three_point_refuses_refinement():
    with pytest.raises(ValueError):
        noise.increments("three_point", noise.path_keys(0, 0, 1)[0], 0, 0.1, 1, refine=2)


def test_streams_depend_on_path_index_not_on_batch():
    a = noise.path_keys(5, 0, 10)
    b = noise.path_keys(5, 6, 4)
    assert np.array_equal(jax.random.key_data(a[6:]), jax.random.key_data(b))


def test_the_log_dt_truncation_bound_is_that_of_papers_002_and_004():
    """Gay-Balmaz & Wu (2024) (55): D = 0.42919 at dt = 0.01; Ephrati et al. (2024) Sec. 4.2: A_h = sqrt(4 |ln h|) = 4.41, 4.71, 5.77, 6.66 for
    dW / sqrt(h) at h = 2^-7, 2^-8, 2^-12, 2^-16."""
    assert noise.truncation_bound("log_dt", 0.01) == pytest.approx(0.42919, abs=5e-6)
    for k, a in ((7, 4.41), (8, 4.71), (12, 5.77), (16, 6.66)):
        h = 2.0**-k
        assert noise.truncation_bound("log_dt", h) / np.sqrt(h) == pytest.approx(a, abs=0.005)
    assert noise.truncation_bound(None, 0.01) is None and noise.truncation_bound(2.5, 0.01) == 2.5


@pytest.mark.slow
def test_truncation_clips_each_level_after_its_increments_are_summed():
    key, h = jax.random.key(5), 0.5          # A = 1.18 = 1.66 standard deviations: about 1 step in 10 clipped
    bound = noise.truncation_bound("log_dt", h)
    fine = [noise.increments("gaussian", key, s, h / 8, 1) for s in range(8 * 40)]
    summed = np.array([float(sum(fine[8 * step:8 * step + 8])[0, 0]) for step in range(40)])
    coarse = np.array([float(noise.increments("gaussian", key, step, h, 1, refine=8, truncate=bound)[0, 0])
                       for step in range(40)])
    assert np.allclose(coarse, np.clip(summed, -bound, bound), rtol=0, atol=1e-14)
    assert (np.abs(summed) > bound).sum() >= 1


@pytest.mark.parametrize("m", [1, 3])
def test_gaussian_increments_follow_the_normal_law(m):
    """Each noise of a step is N(0, dt): the first from the step key's own bits, the others from
    jax.random.bits of it (core.noise._words). A KS test at p = 1e-6 (a correct law fails it once in
    a million runs; a wrong transform, e.g. a uniform or a half-normal, always)."""
    from scipy import stats

    dt = 0.3
    xi = draws("gaussian", dt, m=m)[:, 0, :] / np.sqrt(dt)
    for j in range(m):
        assert stats.kstest(xi[:, j], "norm").pvalue > 1e-6
        assert abs(np.mean(np.abs(xi[:, j]) > 3) - 0.0026998) < 5 * np.sqrt(0.0027 / N)   # the tails too
    for i in range(m):
        for j in range(i):
            assert abs(np.corrcoef(xi[:, i], xi[:, j])[0, 1]) < 5 / np.sqrt(N)


def test_consecutive_steps_are_uncorrelated():
    keys = jax.vmap(noise.noise_key)(noise.path_keys(7, 0, N))
    step = lambda s: np.asarray(jax.vmap(lambda k: noise.increments("gaussian", k, s, 1.0, 1))(keys))[:, 0, 0]
    assert abs(np.corrcoef(step(3), step(4))[0, 1]) < 5 / np.sqrt(N)
    assert abs(np.corrcoef(step(3) ** 2, step(4) ** 2)[0, 1]) < 5 / np.sqrt(N)


def test_uniform_from_bits_spans_its_interval():
    bits = jnp.array([0, 2**63, 2**64 - 1], dtype=jnp.uint64)
    u = np.asarray(noise._uniform(bits, -1.0))
    assert u[0] == -1.0 and u[1] == 0.0 and u[2] < 1.0 and u[2] > 1.0 - 1e-15


def test_threefry_as_this_process_lowers_it_gives_random123s_known_answer():
    """The draws' hash as compiled here (``noise`` lowers threefry unrolled on the CPU) is threefry2x32 with
    20 rounds: Random123's known-answer vector (key 13198a2e 03707344, counter 243f6a88 85a308d3)."""
    from jax.extend.random import threefry2x32_p

    u32 = lambda *v: jnp.array(v, dtype=jnp.uint32)
    hashed = jax.jit(lambda k1, k2, x1, x2: threefry2x32_p.bind(k1, k2, x1, x2))
    y1, y2 = hashed(u32(0x13198A2E, 0), u32(0x03707344, 0), u32(0x243F6A88, 0), u32(0x85A308D3, 0))
    assert (int(y1[0]), int(y2[0])) == (0xC4923A9C, 0x483DF7A0)
    assert (int(y1[1]), int(y2[1])) == (0x6B200159, 0x99BA4EFE)      # key 0, counter 0


def test_a_steps_words_are_its_key_and_jax_random_bits_of_it():
    """Word 0 of a step is its key's own 64 bits, words 1.. are ``jax.random.bits(key, (m - 1,), uint64)``,
    bit for bit: ``noise._words`` hashes them itself."""
    keys = jax.vmap(lambda k: jax.random.fold_in(noise.noise_key(k), 5))(noise.path_keys(7, 0, 1000))
    words = jax.jit(jax.vmap(lambda k: noise._words(k, 4)))(keys)
    hi, lo = jax.vmap(jax.random.key_data)(keys).astype(jnp.uint64).T
    expected = jnp.concatenate([((hi << 32) | lo)[:, None], jax.vmap(lambda k: jax.random.bits(k, (3,), jnp.uint64))(keys)], axis=1)
    assert np.array_equal(np.asarray(words), np.asarray(expected))
