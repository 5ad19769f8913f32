r"""Random variables consumed by the integrators.

Every random number is addressed by (seed, path index, fine step index), never by shard or
worker: ``path_key = fold_in(key(seed), path)`` and the increment of fine step ``k`` is drawn
from ``fold_in(noise_key(path), k)``, whose own 64 bits are its first normal (one threefry hash a
step: ``_words``). A run's numbers therefore do not depend on how paths are split into shards, on the
output grid, on resuming, or on the device (CPU or GPU: the same bits, the same transform).

Kinds (``NOISE_KINDS``), each an array of shape ``(rows, m)`` per step, ``m`` = number of noises:

* ``gaussian``: row 0 is :math:`\Delta W \sim N(0, \Delta t)`.
* ``gaussian_pair``: rows ``(\Delta W, \Delta Z)`` with
  :math:`\Delta Z = \int_{t_k}^{t_{k+1}} (W(s) - W(t_k))\,ds = \tfrac12\Delta t^{3/2}(\chi + \eta/\sqrt3)`,
  so :math:`\mathrm{Var}\,\Delta Z = \Delta t^3/3`, :math:`\mathrm{Cov}(\Delta W, \Delta Z) = \Delta t^2/2`
  (the joint law E1 needs; not in Kraus & Tyranowski (2021)). The :math:`\chi` of ``gaussian`` and ``gaussian_pair`` are the same draw,
  so E1 and a Gaussian method see the same Brownian path.
* ``three_point``: :math:`\hat I = \pm\sqrt{3\Delta t}` with probability 1/6 each, 0 with 2/3.

Gaussian increments can be drawn on a finer grid (``refine`` fine steps per step) and aggregated,
which is how strong-error studies share one Brownian path across step sizes. Truncation
(``truncation_bound``) clips :math:`\Delta W` of each step after the fine increments are summed, so
every step size of a study is truncated at its own bound.

On a CPU, threefry is lowered as on a GPU (unrolled: the same bits, faster) wherever sgi-run's JAX settings
hold (``core.jax_setup``).
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.extend.random import threefry2x32_p

NOISE_KINDS = {"gaussian": 1, "gaussian_pair": 2, "three_point": 1}
# Truncation rules besides a fixed bound: "log_dt" is Gay-Balmaz & Wu (2024), eq. (55), and Ephrati et al. (2024), section 4.2:
# A = sqrt(2 l |ln dt| dt) with l = 2, i.e. dW / sqrt(dt) clipped to sqrt(4 |ln dt|).
TRUNCATION_RULES = ("log_dt",)
LOG_DT_ELL = 2

_INIT_STREAM, _NOISE_STREAM = 0, 1


def truncation_bound(rule, dt: float) -> float | None:
    r"""The bound A of :math:`|\Delta W|` at step ``dt``: None (untruncated), a number (a fixed bound,
    Kraus & Tyranowski (2021) eq. 3.41) or ``"log_dt"``: :math:`A = \sqrt{2\ell\,|\ln \Delta t|\,\Delta t}`, l = 2."""
    if rule is None or not isinstance(rule, str):
        return rule
    if rule not in TRUNCATION_RULES:
        raise ValueError(f"truncation rule {rule!r} is not one of {list(TRUNCATION_RULES)}")
    return math.sqrt(2 * LOG_DT_ELL * abs(math.log(dt)) * dt)


def path_keys(seed: int, first_path: int, count: int) -> jax.Array:
    """Keys of paths ``first_path .. first_path + count - 1`` of the run with root ``seed``."""
    root = jax.random.key(seed)
    return jax.vmap(lambda i: jax.random.fold_in(root, i))(first_path + jnp.arange(count))


def init_key(path_key: jax.Array) -> jax.Array:
    """Stream for a path's random initial condition."""
    return jax.random.fold_in(path_key, _INIT_STREAM)


def noise_key(path_key: jax.Array) -> jax.Array:
    """Stream for a path's increments; fold in the fine step index to get one step's key."""
    return jax.random.fold_in(path_key, _NOISE_STREAM)


def _words(key: jax.Array, m: int, transform=lambda word: word) -> jax.Array:
    """``transform`` of m random 64-bit words from one step's key, as one m-vector. The key is itself
    threefry(path key, step): its own 64 bits are the first word, so a one-noise step costs one threefry
    hash, the least a counter-based draw addressed by (path, step) can (``jax.random.normal`` on that key
    would hash again, and a step's draw ran at half the generator's bulk rate). The others are
    ``jax.random.bits(key, (m - 1,), uint64)`` (partitionable threefry: word i hashes the counter pair
    (0, i)), hashed here directly: jax.random.bits split and joined its words along their short axis,
    and a rigid-body draw (three words) took three times one word's. The first word and the others are
    transformed apart and joined after, so the transform is never applied to a join."""
    k1, k2 = jax.random.key_data(key)
    word = lambda hi, lo: (hi.astype(jnp.uint64) << 32) | lo.astype(jnp.uint64)
    first = transform(word(k1, k2))[None]
    if m == 1:
        return first
    counter = jnp.arange(m - 1, dtype=jnp.uint32)
    others = threefry2x32_p.bind(jnp.full_like(counter, k1), jnp.full_like(counter, k2), jnp.zeros_like(counter), counter)
    return jnp.concatenate([first, transform(word(*others))])


def _uniform(bits: jax.Array, low: float) -> jax.Array:
    """Uniform on [low, 1) from 64-bit words, as ``jax.random.uniform`` makes it: the top 52 bits as
    the mantissa of a float in [1, 2)."""
    floats = jax.lax.bitcast_convert_type((bits >> 12) | jnp.uint64(0x3FF0000000000000), jnp.float64) - 1.0
    return jnp.maximum(low, floats * (1.0 - low) + low)


def _standard_normal(key: jax.Array, m: int) -> jax.Array:
    """m N(0, 1) from one step's key, by ``jax.random.normal``'s transform: sqrt(2) erfinv(u), u
    uniform on (-1, 1)."""
    return _words(key, m, lambda word: jnp.sqrt(2.0) * jax.lax.erf_inv(_uniform(word, jnp.nextafter(-1.0, 0.0))))


def _standard_pair(key: jax.Array, m: int) -> tuple[jax.Array, jax.Array]:
    """chi and eta ~ N(0,1)^m for one fine step; chi does not depend on whether eta is used."""
    return _standard_normal(key, m), _standard_normal(jax.random.fold_in(key, 1), m)


def fine_gaussian(key: jax.Array, fine_step, dt_fine, m: int, pair: bool) -> jax.Array:
    """Increments of one fine step: (1, m) dW, or (2, m) (dW, dZ)."""
    k = jax.random.fold_in(key, fine_step)
    if not pair:
        return (jnp.sqrt(dt_fine) * _standard_normal(k, m))[None]
    chi, eta = _standard_pair(k, m)
    dw = jnp.sqrt(dt_fine) * chi
    dz = 0.5 * dt_fine**1.5 * (chi + eta / jnp.sqrt(3.0))
    return jnp.stack([dw, dz])


def aggregate(fine: jax.Array, dt_fine) -> jax.Array:
    r"""Sum fine increments ``(r, rows, m)`` onto one coarse step.

    :math:`\Delta W = \sum_i \delta W_i`, and for pairs
    :math:`\Delta Z = \sum_i [\delta Z_i + (W_i - W_{start})\,\delta t]` with
    :math:`W_i - W_{start}` the partial sum before fine step ``i``.
    """
    dw = fine[:, 0]
    total_dw = dw.sum(axis=0)
    if fine.shape[1] == 1:
        return total_dw[None]
    before = jnp.cumsum(dw, axis=0) - dw
    total_dz = (fine[:, 1] + before * dt_fine).sum(axis=0)
    return jnp.stack([total_dw, total_dz])


def three_point(key: jax.Array, step, dt, m: int) -> jax.Array:
    """Weak three-point variable, shape (1, m)."""
    u = _words(jax.random.fold_in(key, step), m, lambda word: _uniform(word, 0.0))
    a = jnp.sqrt(3.0 * dt)
    return jnp.where(u < 1.0 / 6.0, -a, jnp.where(u > 5.0 / 6.0, a, 0.0))[None]


def increments(kind: str, key: jax.Array, step, dt, m: int, refine: int = 1, truncate=None) -> jax.Array:
    r"""The random variables of step ``step`` (of size ``dt``) for one path.

    Gaussian kinds: the ``refine`` fine steps of the grid ``refine`` times finer (``fine_increments``),
    summed onto the step and clipped to ``[-truncate, truncate]`` (``coarsen``), the draw every step
    size of a convergence study makes too; so runs at ``dt`` and ``dt / refine`` share one Brownian
    path, and each step size is truncated after summing. ``None`` leaves it untruncated.
    """
    if kind == "three_point":
        if refine != 1:
            raise ValueError("three_point increments cannot be aggregated from a finer grid")
        return three_point(key, step, dt, m)
    dt_fine = dt / refine
    return coarsen(fine_increments(kind, key, step, dt_fine, m, refine), dt_fine, refine, truncate)[0]


def fine_increments(kind: str, key: jax.Array, step, dt_fine, m: int, count: int) -> jax.Array:
    """The ``count`` fine Gaussian steps ``step * count ..`` of size ``dt_fine``: (count, rows, m). The
    variables of every step size of a convergence study are these, summed (``coarsen``)."""
    pair = kind == "gaussian_pair"
    return jax.vmap(lambda j: fine_gaussian(key, step * count + j, dt_fine, m, pair))(jnp.arange(count))


def coarsen(fine: jax.Array, dt_fine, refine: int, truncate=None) -> jax.Array:
    r"""Fine increments (n, rows, m) summed in groups of ``refine`` (``aggregate``) into n / refine steps,
    then :math:`\Delta W` of each clipped to ``[-truncate, truncate]``: truncation after summing."""
    groups = fine.reshape((fine.shape[0] // refine, refine) + fine.shape[1:])
    xi = jax.vmap(lambda group: aggregate(group, dt_fine))(groups)
    if truncate is not None:
        xi = xi.at[:, 0].set(jnp.clip(xi[:, 0], -truncate, truncate))
    return xi
