"""The drift of the invariants a system declares (``System.invariants``: a Lie-Poisson system's Casimirs, H where
no forcing or noise changes it): the largest :math:`|I(z_k) - I(z_0)|` over a path's steps and over the paths.

A path carries the running sup of each invariant's drift, updated after every step (not only at the output times:
a drift that grew and came back between two of them still counts), and a run reports the largest over its paths.
Both are maxima, so they merge exactly across shards, step sizes and resumes. A path that went non-finite has a
NaN drift from then on (``jnp.maximum`` propagates NaN) and is left out of the largest, as the statistics leave it
out of the means. One place for an ensemble run (``simulate``) and a convergence study's levels (``convergence``).
"""
from __future__ import annotations

import functools
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np


def values(system, names: Sequence[str], z):
    """(invariants,) the invariants ``names`` of a state of ``system`` (empty without names)."""
    named = system.observables()
    return jnp.stack([named[name](z) for name in names]) if names else jnp.zeros((0,))


def of_paths(system):
    """``f(z)``: (paths, invariants) every declared invariant (``system.invariants()``) of a batch of states."""
    return jax.vmap(functools.partial(values, system, system.invariants()))


def running_sup(sup, now, initial):
    """Each invariant's running sup of the drift :math:`|I(z) - I(z_0)|` after a step to the state whose invariants
    are ``now``; NaN once ``now`` or ``initial`` is (a path that went non-finite)."""
    return jnp.maximum(sup, jnp.abs(now - initial))


def largest(sup, counted=True):
    """The largest of the paths' (axis 0) running sups that are finite and ``counted`` (a padding path is not),
    for each invariant; NaN where there is none."""
    counted = jnp.logical_and(counted, jnp.isfinite(sup))
    return jnp.where(counted.any(axis=0), jnp.max(jnp.where(counted, sup, -jnp.inf), axis=0), jnp.nan)


def merge(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Two sets of paths' largest drifts as one set's: the larger, NaN only where both have none (exact, so the
    numbers do not depend on the shards)."""
    return np.fmax(a, b)
