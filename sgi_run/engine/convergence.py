"""Strong (pathwise) error studies: several step sizes on one shared Brownian path per sample.

The Brownian path of each sample is drawn on the finest grid, ``min(dts)``, and summed onto every
coarser grid (``core.noise.increments`` with ``refine``), so the error differences between step
sizes are not masked by different noise. Errors are RMS over paths of the final-state error
against an exact solution ``exact(T, W(T))``.
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import noise
from sgi_run.engine.plan import _whole_ratio


@dataclasses.dataclass
class StrongErrors:
    dts: np.ndarray
    rms: np.ndarray          # RMS error at T for each dt
    sem: np.ndarray          # Monte Carlo standard error of each RMS (delta method)
    order: float             # least-squares slope of log rms against log dt
    order_ci: tuple[float, float]  # 95% interval of the slope from a path bootstrap


def final_states(system, integrator, dt: float, T: float, paths: int, seed: int, refine: int) -> jax.Array:
    keys = noise.path_keys(seed, 0, paths)
    noise_keys = jax.vmap(noise.noise_key)(keys)
    z0 = jax.vmap(lambda k: system.initial_state(noise.init_key(k)))(keys)
    kind, m, steps = integrator.noise_kind, system.noises, _whole_ratio(T, dt)

    @jax.jit
    def simulate(z, noise_keys):
        def one(z, k):
            xi = jax.vmap(lambda key: noise.increments(kind, key, k, dt, m, refine))(noise_keys)
            return jax.vmap(lambda z, xi: integrator.step(system, z, dt, xi)[0])(z, xi), None
        return jax.lax.scan(one, z, jnp.arange(steps))[0]

    return simulate(z0, noise_keys)


def brownian_endpoint(system, T: float, dt_fine: float, paths: int, seed: int) -> jax.Array:
    """W(T) of each path: the sum of its finest-grid increments. (paths, m)"""
    keys = jax.vmap(noise.noise_key)(noise.path_keys(seed, 0, paths))
    n = _whole_ratio(T, dt_fine)
    return jax.vmap(lambda k: noise.increments("gaussian", k, 0, T, system.noises, refine=n)[0])(keys)


def strong_errors(system, integrator, exact: Callable, T: float, dts: Sequence[float],
                  paths: int, seed: int = 0, bootstrap: int = 200) -> StrongErrors:
    dts = np.sort(np.asarray(dts, float))[::-1]
    finest = dts[-1]
    w_T = brownian_endpoint(system, T, finest, paths, seed)
    z_exact = jax.vmap(lambda w: exact(T, w[0]))(w_T)
    sq = []
    for dt in dts:
        refine = _whole_ratio(dt, finest)
        if refine is None:
            raise ValueError(f"dt={dt} is not a whole multiple of the finest dt={finest}")
        z = final_states(system, integrator, float(dt), T, paths, seed, refine)
        sq.append(np.asarray(jnp.sum((z - z_exact) ** 2, axis=1)))
    sq = np.array(sq)                                       # (dts, paths)
    mse = sq.mean(axis=1)
    rms = np.sqrt(mse)
    sem = sq.std(axis=1, ddof=1) / np.sqrt(paths) / (2 * rms)
    slope = lambda r: np.polyfit(np.log(dts), np.log(r), 1)[0]
    rng = np.random.default_rng(seed)
    boots = [slope(np.sqrt(sq[:, rng.integers(0, paths, paths)].mean(axis=1))) for _ in range(bootstrap)]
    return StrongErrors(dts, rms, sem, float(slope(rms)), tuple(np.percentile(boots, [2.5, 97.5])))
