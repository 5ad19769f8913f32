r"""Nonlinear solvers for the implicit equations of one path's step (callers ``vmap`` over paths), on
pytrees: a state ``{R, Pi}`` or a complex matrix is solved for as it is.

Two forms of equation: a root ``residual(x) = 0`` and a fixed point ``x = g(x)`` (most implicit
stages: the stage value is the right-hand side evaluated at itself). Three methods:

- ``newton``: the Jacobian of the residual (``jax.jacfwd``, over the real coordinates of the
  pytree: a complex leaf counts as its real and imaginary parts) at every iteration;
- ``chord``: the Jacobian at the starting iterate only, factored once and reused (cheaper
  iterations, linear convergence);
- ``fixed_point``: :math:`x \leftarrow g(x)` (no Jacobian at all), for fixed-point forms only.

Stopping rules. Newton and chord: the residual at the new iterate is small,
:math:`\|r(x)\| \le \mathrm{tol}\,(1 + \|x\|)`. Fixed point: the update is small,
:math:`\|x_{k+1} - x_k\| \le \mathrm{tol}\,\max(1, \|x_0\|)`, or it *stagnates*: the update stopped
decreasing while within ``ROUND_OFF_ULPS`` ulps of the iterate, which is as converged as the iteration
gets (Ephrati et al.'s (2024) absolute 1e-15 is unreachable when entries are large); a stagnation exit is
reported, not failed (an update that stops shrinking far above round-off is a failure). Not earlier: a
solve stopped where the contraction of its last two updates put the iterate within an ulp of the fixed
point (one iteration fewer) left a residual of one sign, and over the 2.56 x 10^5 steps of Ephrati et al.'s
Figure 4 the rigid body's spectrum drifted 4.6e-12 instead of 3e-14. Norms:
``max`` (entrywise, the default) or ``l2`` (over every leaf). Every method returns the iterations
and a converged flag; a solve that is neither converged nor stagnated after ``max_iter`` iterations
(or whose iterate went non-finite) is a failure: ``on_fail: nan`` returns NaN (the engine then
counts the path non-finite: a half-solved stage is never passed on as a step of the method),
``on_fail: count`` keeps the last iterate and the step is counted unconverged.

``iterations`` (``integrator.iterations``, default none; fixed-point iteration only): that many iterations are
taken without testing the stopping rule, then the loop goes on from there as always (tested after every
iteration, ``max_iter`` in all).
Why: under ``vmap`` the loop reduces over every path at every iteration, selects the paths still iterating and
re-tests finiteness, and on a GPU it waits for the host each time; a count that usually reaches the tolerance
leaves the loop one test to make. Every solve is judged by the same rule, so one that does not converge is
counted as the loop counts it (a divergence is not hidden by iterating on). Up to the iteration where the rule
stops a solve, the iterates are the loop's own; a count past it moves the result by at most the contraction
times ``tol``,
so the statistics agree with the default's to within ``tol``, which is why it is an option and not the
default. Not for Newton or chord: untested Newton updates before the loop, on SRKw2's 12-unknown solves (then
LAPACK's), deadlocked XLA's CPU runtime on 2 threads from a few thousand paths (jax 0.10.2).
"""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple
from collections.abc import Callable

import jax
import jax.numpy as jnp
import jax.scipy.linalg
import numpy as np
from jax.flatten_util import ravel_pytree

from sgi_run.core import linalg
from sgi_run.core.errors import require
from sgi_run.core.fields import choice, integer, real
from sgi_run.core.linalg import inverse_operator, solve

DEFAULT_TOL = 1e-12
DEFAULT_MAX_ITER = 50
METHODS = ("newton", "chord", "fixed_point")
NORMS = ("max", "l2")
ON_FAIL = ("nan", "count")
# More iterations than this per solve means it is not converging: refused as an option.
MAX_ITER_LIMIT = 10**6
# A relative tolerance below float64 round-off is met only by an exact zero: every solve would fail.
MIN_TOL = float(np.finfo(np.float64).eps)
# A fixed-point update that stops shrinking is at round-off only below this many ulps of the iterate
# (the project's estimate: the floor is about eps max|X| sqrt(N), 11 ulps at N = 128); above it the iteration is
# diverging or not contracting, and the solve has failed.
ROUND_OFF_ULPS = 1000


class SolveResult(NamedTuple):
    x: object                 # the solution, a pytree like x0 (NaN after a failure with on_fail = nan)
    iterations: jax.Array     # int32: Jacobian solves (Newton, chord) or map evaluations (fixed point)
    converged: jax.Array      # bool: the stopping rule was met
    stagnated: jax.Array      # bool: a fixed-point iteration stopped at its round-off floor instead


def _norm(kind: str, tree, written_out: bool = False) -> jax.Array:
    """The max or l2 norm over every leaf. ``written_out``: the max of at most ``linalg.SMALL`` entries as
    elementwise maxima, which XLA fuses with the code computing them, instead of a reduction (under vmap on a
    CPU, a library call of its own: YNNPACK). Only where the norm is the value's one consumer: a value also
    used elsewhere was then computed once per consumer (the fixed-point update: a heavy-top IM step took 1.5x
    as long; the chord's residual: TMK 1.35x)."""
    leaves = [jnp.abs(x) for x in jax.tree.leaves(tree)]
    if kind == "max":
        if written_out and sum(x.size for x in leaves) <= linalg.SMALL:
            return functools.reduce(jnp.maximum, [x.ravel()[i] for x in leaves for i in range(x.size)])
        return jnp.max(jnp.stack([jnp.max(x) for x in leaves]))
    return jnp.sqrt(sum(jnp.sum(x**2) for x in leaves))


def real_coordinates(tree):
    """(flat real vector, its inverse) of a pytree whose leaves may be complex."""
    as_real = jax.tree.map(lambda x: jnp.stack([x.real, x.imag]) if jnp.iscomplexobj(x) else x, tree)
    flat, unravel_real = ravel_pytree(as_real)
    back = lambda v: jax.tree.map(lambda r, x: r[0] + 1j * r[1] if jnp.iscomplexobj(x) else r,
                                  unravel_real(v), tree)
    return flat, back


def _finite(tree) -> jax.Array:
    return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in jax.tree.leaves(tree)]))


def _finish(result: SolveResult, on_fail: str) -> SolveResult:
    if on_fail == "count":
        return result
    ok = result.converged | result.stagnated
    return result._replace(x=jax.tree.map(lambda x: jnp.where(ok, x, jnp.nan), result.x))


def _coordinates(tree):
    """(v, back): a pytree's real unknowns as one vector ``v``, and the pytree of such a vector. A pytree split into
    components (``linalg.split_vectors``) whose every leaf is one real number per path is its leaves as
    ``Components``; any other is one flat array (``real_coordinates``)."""
    leaves, treedef = jax.tree.flatten(tree)
    if linalg.is_split(tree) and all(jnp.ndim(x) == 0 and not jnp.iscomplexobj(x) for x in leaves):
        return linalg.Components(*leaves), lambda v: jax.tree.unflatten(treedef, list(v.entries))
    return real_coordinates(tree)


def _jacobian_and_value(f, v):
    """(Df(v), f(v)) of a map between vectors of one of ``_coordinates``' two forms: on an array, one forward-mode
    pass (``jacfwd``) and the Jacobian an (n, n) array; on components, one ``jvp`` per unknown, each a column, and
    the Jacobian its rows' entries (``linalg.inverse_operator`` takes either)."""
    if not isinstance(v, linalg.Components):
        return jax.jacfwd(lambda v: (f(v), f(v)), has_aux=True)(v)
    unit = lambda j: linalg.Components(*(jnp.full_like(x, i == j) for i, x in enumerate(v.entries)))
    value_and_columns = [jax.jvp(f, (v,), (unit(j),)) for j in range(len(v))]
    columns = [column for _, column in value_and_columns]
    return [[column[i] for column in columns] for i in range(len(v))], value_and_columns[0][0]


def newton_solve(residual: Callable, x0, tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER,
                 norm: str = "max", frozen_jacobian: bool = False, on_fail: str = "nan",
                 linearization: Callable | None = None) -> SolveResult:
    """Solve ``residual(x) = 0`` from ``x0`` by Newton (or, ``frozen_jacobian``, the chord method).
    ``iterations`` counts linear solves. ``linearization`` (chord only): a function with the residual's value
    and Jacobian at ``x0`` that is cheaper to differentiate; the chord's one Jacobian comes from it, taken on
    ``x0``'s small vectors split into components (``linalg.split_vectors``; the linearization must take them so):
    one ``jvp`` per unknown, and the Jacobian and its inverse kept as entries. Why: under vmap on a CPU the
    (paths, 6, 6) Jacobian from ``jacfwd`` and the inverse assembled from it were written entry by entry,
    strided (a heavy-top TMK step 1.35x as long). The iterations stay on one flat vector: iterated as components,
    every carried entry was selected path by path in a loop of its own, into which XLA fused the map again
    (TMK 0.75x)."""
    flat0, back = real_coordinates(x0)
    to_flat = lambda f: (lambda v: real_coordinates(f(back(v)))[0])
    r = to_flat(residual)
    # Newton's residual is used by its stopping test alone (the next update evaluates it again, with the
    # Jacobian), so its norm is written out (Kubo midpoint, DIRK, heavy-top trapezoidal 1.1-1.2x a step); the
    # chord's is also its next update.
    written_out = not frozen_jacobian
    small = lambda value, v: _norm(norm, value, written_out) <= tol * (1.0 + _norm(norm, v, written_out))
    if frozen_jacobian:
        # The chord update reuses the residual of the last stopping test: one evaluation per iteration.
        if linearization is None:
            jacobian0, value0 = _jacobian_and_value(r, flat0)
        else:
            split0, split_back = _coordinates(linalg.split_vectors(x0))
            jacobian0, value0 = _jacobian_and_value(lambda v: _coordinates(linearization(split_back(v)))[0], split0)
            value0 = real_coordinates(linalg.join_vectors(split_back(value0)))[0]
        chord = inverse_operator(jacobian0)
        update = lambda v, value: chord(value)
    else:
        # Newton's Jacobian pass computes the residual at v anyway.
        value0 = jnp.zeros_like(flat0)
        update = lambda v, value: solve(*_jacobian_and_value(r, v))

    def keep_going(state):
        v, _, it, done = state
        return (it < max_iter) & ~done & jnp.all(jnp.isfinite(v))

    def iterate(state):
        v, value, it, _ = state
        v = v - update(v, value)
        value = r(v)
        return v, value, it + 1, small(value, v)

    v, _, it, done = jax.lax.while_loop(keep_going, iterate, (flat0, value0, jnp.int32(0), jnp.bool_(False)))
    return _finish(SolveResult(back(v), it, done, jnp.bool_(False)), on_fail)


def fixed_point_solve(g: Callable, x0, tol: float = DEFAULT_TOL, max_iter: int = DEFAULT_MAX_ITER,
                      norm: str = "max", on_fail: str = "nan", iterations: int | None = None) -> SolveResult:
    """Iterate ``x <- g(x)`` from ``x0`` until the update is below ``tol * max(1, |x0|)`` or stops
    decreasing (stagnation), at most ``max_iter`` times. ``iterations`` counts evaluations of ``g``;
    given, the first that many are taken untested (module docstring)."""
    bound = tol * jnp.maximum(1.0, _norm(norm, x0))
    update_size = lambda new, old: _norm(norm, jax.tree.map(jnp.subtract, new, old))

    def verdict(update, previous, x):
        """(the update is within tol, it is still shrinking, the iterate is finite) as the bits 1, 2, 4 of one
        int8: what stops the loop and what the solve is judged by, decided once. Why carried, not recomputed
        from the carried update after the loop: XLA may compute the update's norm twice, in two fusions, one
        with fused multiply-adds; an update within an ulp of tol then stopped the loop as converged and was
        judged unconverged after it (2 steps of 2 x 10^7, rigid-body IsoMP at tol = 1e-15, while its max-norm
        was written out as elementwise maxima). Why one number: under vmap each carried value is selected
        path by path in a loop of its own, into which XLA fuses the whole map again (three flags: rigid-body
        IsoMP 0.88x a step)."""
        bit = lambda flag, value: flag.astype(jnp.int8) * jnp.int8(value)
        return bit(update <= bound, 1) | bit(update < previous, 2) | bit(_finite(x), 4)

    def tests(code):
        """(small, shrinking, finite) of a verdict."""
        return code & 1 != 0, code & 2 != 0, code & 4 != 0

    def keep_going(state):
        small, shrinking, finite = tests(state[-1])
        return (state[1] < max_iter) & ~small & shrinking & finite

    def iterate(state):
        # The tests are taken here, beside the update's norm, and carried: under vmap the loop's condition
        # is evaluated twice an iteration, and there they cost a cheap map (heavy-top IM) 20%.
        x, it, error, _, _ = state
        x_new = g(x)
        update = update_size(x_new, x)
        return x_new, it + 1, update, error, verdict(update, error, x_new)

    inf = jnp.asarray(jnp.inf)
    state = (x0, jnp.int32(0), inf, inf, verdict(inf, inf, x0) | 2)         # not small, shrinking
    if iterations:
        # The loop's state after that many iterations: the iterate and its last two updates. Only those two
        # updates' norms are taken (running ``iterate`` K times, each with its norm, was 1.1-1.3x slower).
        before = jax.lax.fori_loop(0, iterations - 2, lambda _, x: g(x), x0) if iterations >= 2 else x0
        last = g(before) if iterations >= 2 else x0
        x = g(last)
        update, previous = update_size(x, last), update_size(last, before) if iterations >= 2 else inf
        state = (x, jnp.int32(iterations), update, previous, verdict(update, previous, x))
    x, it, error, _, code = jax.lax.while_loop(keep_going, iterate, state)
    small, shrinking, finite = tests(code)
    converged = small & finite
    at_round_off = error <= ROUND_OFF_ULPS * MIN_TOL * jnp.maximum(1.0, _norm(norm, x))
    stagnated = ~small & ~shrinking & at_round_off & finite
    return _finish(SolveResult(x, it, converged, stagnated), on_fail)


def on_fail_rule(value):
    """The on_fail rule as named: the command line reads the rule nan, as the README spells it
    (integrator.on_fail=nan), as the float nan (the config hash hashes the name too)."""
    return "nan" if isinstance(value, float) and math.isnan(value) else value


@dataclasses.dataclass(frozen=True)
class SolverOptions:
    """An integrator's solver, as its config gives it (``integrator.solver``, ``tol``, ...)."""
    method: str = "newton"
    tol: float = DEFAULT_TOL
    max_iter: int = DEFAULT_MAX_ITER
    norm: str = "max"
    on_fail: str = "nan"
    iterations: int | None = None     # iterations taken before the stopping rule is tested (module docstring)

    def __post_init__(self):
        object.__setattr__(self, "on_fail", on_fail_rule(self.on_fail))

    def check(self, fixed_point_form: bool = True) -> None:
        """Refuse (one line) what cannot run; ``fixed_point_form``: every equation the integrator
        solves is a fixed point x = g(x) (else some is a root, which has no fixed-point iteration)."""
        methods = list(METHODS if fixed_point_form else METHODS[:2])
        choice("integrator.solver", self.method, methods,
               f"one of {methods}" + ("" if fixed_point_form else " (its equations are roots, not fixed points)"))
        real("integrator.tol", self.tol, f"a tolerance: a number in [{MIN_TOL:.3g}, 1) (float64 round-off and up)",
             at_least=MIN_TOL, below=1)
        integer("integrator.max_iter", self.max_iter, f"an integer in [1, {MAX_ITER_LIMIT}]",
                at_least=1, at_most=MAX_ITER_LIMIT)
        require("integrator.iterations", self.iterations, self.iterations is None or self.method == "fixed_point",
                f"null with solver {self.method} (untested iterations are for solver=fixed_point)")
        if self.iterations is not None:
            integer("integrator.iterations", self.iterations,
                    f"null (test the stopping rule after every iteration) or an integer from 1 to integrator.max_iter "
                    f"({self.max_iter}): that many iterations before the rule is first tested",
                    at_least=1, at_most=self.max_iter)
        choice("integrator.norm", self.norm, NORMS)
        choice("integrator.on_fail", self.on_fail, ON_FAIL,
               "nan (an unconverged solve ends its path, counted non-finite) or count (keep the last iterate; "
               "the step is counted unconverged)")

    def in_components(self, tree):
        """A step's state in the form its iterates are fastest in: for fixed-point iteration, its small vectors as
        components (``linalg.split_vectors``: a fixed-point map of so(3)* or se(3)* vectors is then elementwise
        over the paths, rigid-body and heavy-top Cayley LGVI 1.6-2x a step, heavy-top IM 1.25x); for Newton and
        chord as they are (their unknowns are flattened into one vector for the Jacobian: in components, TMK's
        chord Jacobian was rebuilt by transposes and concatenates, 0.7x). ``linalg.join_vectors`` undoes it."""
        return linalg.split_vectors(tree) if self.method == "fixed_point" else tree

    def root(self, residual: Callable, x0, linearization: Callable | None = None) -> SolveResult:
        """Solve ``residual(x) = 0`` (Newton or chord; ``linearization``: ``newton_solve``'s)."""
        if self.method == "fixed_point":
            raise ValueError("a root equation has no fixed-point iteration (SolverOptions.check refuses it)")
        return newton_solve(residual, x0, self.tol, self.max_iter, self.norm,
                            frozen_jacobian=self.method == "chord", on_fail=self.on_fail, linearization=linearization)

    def fixed_point(self, g: Callable, x0, linearization: Callable | None = None) -> SolveResult:
        """Solve ``x = g(x)``: by iterating g, or by Newton or chord on ``x - g(x) = 0``. ``linearization``: a
        map with g's value and Jacobian at ``x0``, cheaper to differentiate, from which the chord method takes its
        Jacobian (Newton and fixed-point iteration do not use it)."""
        if self.method == "fixed_point":
            return fixed_point_solve(g, x0, self.tol, self.max_iter, self.norm, self.on_fail, self.iterations)
        minus = lambda f: (lambda x: jax.tree.map(jnp.subtract, x, f(x)))
        return self.root(minus(g), x0, None if linearization is None else minus(linearization))
