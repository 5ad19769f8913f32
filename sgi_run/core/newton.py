"""Newton's method for the implicit stages of one path (callers ``vmap`` over paths).

The Jacobian comes from ``jax.jacfwd`` of the residual, so an integrator only writes its stage
equations. A path whose iterate goes non-finite stops at once; a path that has not converged after
``max_iter`` iterations comes back as NaN (and is then counted as a non-finite path): a
half-solved stage is never passed on as if it were a step of the method.
"""
from __future__ import annotations

from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from sgi_run.core.linalg import solve

DEFAULT_TOL = 1e-12
DEFAULT_MAX_ITER = 50


class NewtonResult(NamedTuple):
    x: jax.Array
    iterations: jax.Array
    converged: jax.Array


def newton_solve(residual: Callable[[jax.Array], jax.Array], x0: jax.Array,
                 tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER) -> NewtonResult:
    """Solve ``residual(x) = 0`` from ``x0``.

    Converged when the residual at the new iterate is small, ``|r(x)| <= tol * (1 + |x|)`` (max
    norms). Testing the new iterate's residual (one function evaluation) rather than the size of the
    next update (a Jacobian and a solve) lets a linear stage equation stop after one iteration.
    ``iterations`` counts Jacobian solves.
    """
    # One forward-mode pass gives both the Jacobian and the residual value.
    jac_and_value = jax.jacfwd(lambda x: (residual(x), residual(x)), has_aux=True)
    small = lambda r, x: jnp.max(jnp.abs(r)) <= tol * (1.0 + jnp.max(jnp.abs(x)))

    def keep_going(state):
        x, it, done = state
        return (it < max_iter) & ~done & jnp.all(jnp.isfinite(x))

    def iterate(state):
        x, it, _ = state
        jac, value = jac_and_value(x)
        x = x - solve(jac, value)
        return x, it + 1, small(residual(x), x)

    x, it, done = jax.lax.while_loop(keep_going, iterate, (x0, jnp.int32(0), jnp.bool_(False)))
    return NewtonResult(jnp.where(done, x, jnp.nan), it, done)
