"""Dense solves for the small Newton systems of implicit stages (2N to 12N unknowns), the matrix product of
the isospectral methods, the small products of a step written out as arithmetic, and small vectors kept as
their components (``Components``).

Why not ``jnp.linalg.solve``: under ``vmap`` on a CPU it becomes one LAPACK call per path, which
made the stochastic midpoint rule ~4x slower than the whole rest of the step. Gaussian elimination,
unrolled at trace time for the static size, is plain vectorised arithmetic across paths instead: over a
batch of paths without row exchanges where partial pivoting would make none, as for every usable implicit
step's Jacobian I - dt J, and with partial pivoting for the whole batch where some matrix needs it. The
unrolled code grows as n^3; up to 12 unknowns (SRKw2's coupled stages on a one-degree-of-freedom system) it is
faster than LAPACK (Kubo SRKw2 on one core: 750-830 against 1210 ns a path-step) once its inputs and solution
are kept apart from the rest of the step (``FUSED_MAX``); larger systems go to ``jnp.linalg.solve``.
"""
from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import jax.scipy.linalg

UNROLL_MAX = 12
# Above this many unknowns a solve's elimination is kept apart from the rest of the step (an optimization
# barrier on its inputs and on its solution): XLA otherwise fused the Newton iteration's Jacobian and residual
# into the 144 entries' arithmetic and computed them again in many of its fusions (Kubo SRKw2, 12 x 12, one
# core: 1240 ns a path-step unrolled without the barriers, 1210 with LAPACK, 740-830 with them). Smaller
# systems fuse well as they are; the chord's inverse (``inverse_operator``) was slower with them (1330-1370
# against 1200-1270 ns, as with LAPACK's LU).
FUSED_MAX = 8
# Products that sum at most this many terms (a 3-vector's dot product, a 3 x 3 to 16 x 16 real matrix product)
# are written out as elementwise arithmetic. Why: under vmap, XLA on a CPU sends such a batched dot to a
# library kernel (YNNPACK), called on its own in every fixed-point iteration and fused with nothing; written
# out, it joins the iteration's elementwise code (rigid-body IsoMP 1.2x, Cayley LGVI 1.3x end to end).
SMALL = 16


@jax.tree_util.register_pytree_node_class
class Components:
    """A small vector kept as its separate components, each an array over whatever the vector is batched over
    (under vmap, one number per path), with the arithmetic of vectors and scalars. Why: a 3-vector's cross product
    builds a new vector from its entries; on arrays (paths, 3) that is a concatenate, which XLA on a CPU does not
    fuse into several consumers and so writes to memory, strided, once per cross product: a rigid-body Cayley LGVI
    iteration was eight separate loops over the paths. Kept as components, a fixed-point iteration's vector
    arithmetic is elementwise over the paths, one loop (``split_vectors``, ``join_vectors``)."""
    __slots__ = ("entries",)

    def __init__(self, *entries):
        self.entries = entries

    def tree_flatten(self):
        return self.entries, None

    @classmethod
    def tree_unflatten(cls, _, entries):
        return cls(*entries)

    def __len__(self):
        return len(self.entries)

    def __getitem__(self, i):
        return self.entries[i]

    def _with(self, other, op):
        if isinstance(other, Components):
            return Components(*map(op, self.entries, other.entries))
        if jnp.ndim(other) != 0:
            # a vector as an array beside one split into components: a caller forgot to split it
            raise TypeError(f"Components and an array of shape {jnp.shape(other)}: split_vectors it first")
        return Components(*(op(x, other) for x in self.entries))

    def __add__(self, other):
        return self._with(other, jnp.add)

    def __sub__(self, other):
        return self._with(other, jnp.subtract)

    def __mul__(self, other):
        return self._with(other, jnp.multiply)

    def __truediv__(self, other):
        return self._with(other, jnp.divide)

    __radd__, __rmul__ = __add__, __mul__          # IEEE addition and multiplication commute

    def __rsub__(self, other):
        return self._with(other, lambda x, y: y - x)

    def __neg__(self):
        return Components(*(-x for x in self.entries))


def _is_components(x) -> bool:
    return isinstance(x, Components)


def _entries(v):
    return v.entries if _is_components(v) else [v[..., i] for i in range(v.shape[-1])]


def split_vectors(tree):
    """Every real vector (one axis, at most ``SMALL`` entries) of a pytree as ``Components``."""
    small_vector = lambda x: x.ndim == 1 and x.shape[0] <= SMALL and not jnp.iscomplexobj(x)
    return jax.tree.map(lambda x: Components(*_entries(x)) if small_vector(x) else x, tree)


def join_vectors(tree):
    """Every ``Components`` of a pytree as an array again (the inverse of ``split_vectors``), entry by entry as
    selects: a stack, under vmap, became a (entries, paths) concatenate and a transpose, in every evaluation of
    the gradient that a fixed-point map takes on arrays (``LiePoissonSystem.gradient``)."""
    def join(x):
        if not _is_components(x):
            return x
        position = jnp.arange(len(x))
        return functools.reduce(lambda v, i: jnp.where(position == i, x[i][..., None], v), range(1, len(x)),
                                jnp.broadcast_to(x[0][..., None], (*jnp.shape(x[0]), len(x))))
    return jax.tree.map(join, tree, is_leaf=_is_components)


def is_split(tree) -> bool:
    return any(map(_is_components, jax.tree.leaves(tree, is_leaf=_is_components)))


def inner(u, v):
    """The dot product of two vectors (the last axis, or ``Components``)."""
    if not is_split((u, v)) and u.shape[-1] > SMALL:
        return jnp.sum(u * v, axis=-1)
    return functools.reduce(jnp.add, [x * y for x, y in zip(_entries(u), _entries(v))])


def cross(a, b):
    """The cross product of two 3-vectors: ``Components`` if either is, else an array (``jnp.cross``)."""
    if not is_split((a, b)):
        return jnp.cross(a, b)
    (a0, a1, a2), (b0, b1, b2) = _entries(a), _entries(b)
    return Components(a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0)


def solve(a, b):
    """x with a @ x = b, for one square ``a`` (n, n) and ``b`` (n,) or (n, k)."""
    n = a.shape[0]
    if n > UNROLL_MAX:
        return jnp.linalg.solve(a, b)
    if n == 2:
        # Cramer's rule: the Newton systems of every one-degree-of-freedom method (midpoint, DIRK,
        # SRKw2 with additive noise: four a step). Half the step time of the pivoted elimination
        # for SRKw2 on van der Pol; a Jacobian I - dt J(z) is far from singular.
        det = a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
        return jnp.stack([a[1, 1] * b[0] - a[0, 1] * b[1], a[0, 0] * b[1] - a[1, 0] * b[0]]) / det
    vector = b.ndim == 1
    rows = _apart((_rows(a), _rows(b[:, None] if vector else b)), n)
    x = jnp.array(_apart(_eliminate(*rows), n))
    return x[:, 0] if vector else x


def _apart(tree, n: int):
    """An elimination's inputs or outputs kept apart from the code around them above ``FUSED_MAX`` unknowns."""
    return jax.lax.optimization_barrier(tree) if n > FUSED_MAX else tree


def _rows(a):
    """A matrix as the lists of its rows' entries (what the unrolled eliminations work on)."""
    return [[a[i, j] for j in range(a.shape[1])] for i in range(a.shape[0])]


def _pivoted(a, b):
    """Gaussian elimination with partial pivoting; ``a`` and ``b`` (n x k) as their rows' entries, the solution as
    its rows' entries. The stages are a loop, not unrolled: the branch is rarely taken, and unrolled it was
    half of the compilation of an SRKw2 step (3.4 of 6.2 s for 12 unknowns)."""
    n = len(a)
    m = jnp.concatenate([jnp.array(a), jnp.array(b)], axis=1)
    index = jnp.arange(n)

    def stage(k, m):
        # jnp.argmax keeps the first of equal entries and takes NaN for the largest, as on the rows k..n-1 alone
        pivot = jnp.argmax(jnp.where(index >= k, jnp.abs(m[:, k]), -1.0))
        row_k, row_p = m[k], m[pivot]
        m = m.at[pivot].set(row_k).at[k].set(row_p)
        factors = jnp.where(index > k, m[:, k] / m[k, k], 0.0)
        return jnp.where((index > k)[:, None], m - factors[:, None] * m[k], m)
    return _back_substitute(_rows(jax.lax.fori_loop(0, n, stage, m)), n)


def _without_exchanges(a, b):
    """(x, exchanged): the elimination of ``_pivoted`` entry by entry and without row exchanges, and whether
    partial pivoting would have exchanged a row (or an entry is not finite); where it would not, the two
    compute the same numbers, to round-off."""
    n = len(a)
    m = [list(row_a) + list(row_b) for row_a, row_b in zip(a, b)]
    exchanged = jnp.bool_(False)
    for k in range(n):
        for i in range(k + 1, n):
            factor = m[i][k] / m[k][k]
            # Partial pivoting exchanges unless |m_ik| <= |m_kk| (jnp.argmax keeps the first of equal entries).
            # Tested as |factor| < 1, which holds only where |m_ik| < |m_kk| (rounding is monotone): equal
            # entries and NaN go to _pivoted, which computes the same numbers. Why the factor: it is kept for
            # the row's update anyway, where the entries' own test made XLA compute the whole elimination a
            # second time inside the flag's reduction (SRKw2's 12 x 12 systems: 170 ns of an 830 ns step).
            exchanged = exchanged | ~(jnp.abs(factor) < 1)
            m[i] = [x - factor * y for x, y in zip(m[i], m[k])]
    return _back_substitute(m, n), exchanged


def _back_substitute(m, n):
    """The solution of an eliminated system, entry by entry: ``m``'s rows (lists of entries) are upper triangular
    in their first n entries, with the right-hand sides after them."""
    x = [None] * n
    for k in reversed(range(n)):
        x[k] = [functools.reduce(jnp.subtract, [m[k][j] * x[j][c] for j in range(k + 1, n)], m[k][n + c]) / m[k][k]
                for c in range(len(m[k]) - n)]
    return x


@jax.custom_batching.custom_vmap
def _eliminate(a, b):
    """x with a x = b, each matrix as its rows' entries (``_rows``)."""
    return _pivoted(a, b)


@_eliminate.def_vmap
def _eliminate_batched(axis_size, in_batched, a, b):
    """Over a batch (the paths), the elimination without row exchanges, and the pivoted one only if some
    matrix of the batch needs an exchange. Why: under vmap on a CPU a row exchange by a per-path index is a
    gather and a scatter, and the back-substitution a batched dot, each a library call or a copy of its
    own (a heavy-top TMK step's chord inverse, 6 x 6: two thirds of the step); without exchanges it is
    elementwise arithmetic across paths. An implicit step's Jacobian I - dt J is diagonally dominant for any
    usable step, so the pivoted branch is the exception; where it is taken every path gets its numbers.
    Entries that are the same for every path (the identity the chord method inverts against) stay one number."""
    axes = jax.tree.map(lambda batched: 0 if batched else None, in_batched)
    x, exchanged = jax.vmap(_without_exchanges, in_axes=axes)(a, b)

    def pivoted():
        whole = lambda x, batched: x if batched else jnp.broadcast_to(x, (axis_size, *jnp.shape(x)))
        return jax.vmap(_pivoted)(*jax.tree.map(whole, (a, b), tuple(in_batched)))
    x = jax.lax.cond(jnp.any(exchanged), pivoted, lambda: x)
    return x, jax.tree.map(lambda _: True, x)


def inverse_operator(a):
    """``b -> a^-1 b`` for a matrix used many times (the chord method's frozen Jacobian), ``a`` an array or its
    rows' entries (``_rows``): the explicit inverse (one unrolled elimination, then a matrix-vector product per
    use: under ``vmap`` on a CPU, LAPACK's ``lu_solve`` is one call per path, ~30x the product for a 6 x 6
    system) up to UNROLL_MAX unknowns, an LU factorisation above. The inverse is kept as its entries, each one
    number per path, never assembled into a matrix (under vmap on a CPU, a (paths, 6, 6) array is written
    entry by entry, strided: a heavy-top TMK step's Jacobian and inverse, 0.2x of it)."""
    n = len(a)
    if n <= UNROLL_MAX:
        identity = [[jnp.asarray(float(i == j)) for j in range(n)] for i in range(n)]
        inverse = _eliminate(a if isinstance(a, list) else _rows(a), identity)
        return lambda b: _times(inverse, b)
    lu = jax.scipy.linalg.lu_factor(a if not isinstance(a, list) else jnp.array(a))
    return lambda b: jax.scipy.linalg.lu_solve(lu, b)


def _times(rows, b):
    """The product of a matrix given as its rows' entries and ``b`` (n,) or (n, k), written out."""
    return jnp.stack([functools.reduce(jnp.add, [row[k] * b[k] for k in range(len(row))]) for row in rows])


def matmul(a, b):
    """``a @ b``; for complex matrices, as three real products (Gauss's trick: (A + iB)(C + iD) = (AC - BD)
    + i((A + B)(C + D) - AC - BD)). Why: XLA's complex product on a CPU is slower than its real ones: at
    N = 128 on one core 0.50 ms, against 0.34 ms for four real products and 0.27 ms for three, and it is
    most of an Euler-Zeitlin IsoMP iteration. The three-product form is normwise stable (Higham, Accuracy
    and Stability of Numerical Algorithms, ch. 23, the 3M method): its error is of round-off size relative to
    |A + iB| |C + iD|."""
    if not (jnp.iscomplexobj(a) and jnp.iscomplexobj(b)):
        if a.ndim == 2 and b.ndim in (1, 2) and a.shape[1] <= SMALL:     # small and real: written out
            column = (lambda k: b[k]) if b.ndim == 1 else (lambda k: b[None, k, :])
            row = (lambda k: a[:, k]) if b.ndim == 1 else (lambda k: a[:, k, None])
            return functools.reduce(jnp.add, [row(k) * column(k) for k in range(a.shape[1])])
        return a @ b
    ar, ai, br, bi = jnp.real(a), jnp.imag(a), jnp.real(b), jnp.imag(b)
    ac, bd = ar @ br, ai @ bi
    return jax.lax.complex(ac - bd, (ar + ai) @ (br + bi) - ac - bd)
