r"""The stochastic Euler-Zeitlin equations on su(N) (Ephrati et al. 2024 section 6.4), written
as their physics on the Lie-Poisson base.

The state is the N x N skew-Hermitian traceless matrix :math:`X = X^q/\hbar`, :math:`\hbar = 2/\sqrt{N^2-1}`
(the project's reading of Ephrati et al.'s (2024) units, documented in docs/papers/ephrati_2023.md): :math:`X^q` is the vorticity matrix in quflow's
normalisation (O(1) coefficients for an O(1) vorticity function), :math:`X` the one the paper's formulas
(40)-(44) use verbatim. The dynamics

.. math::
    dX = [\Delta_N^{-1}X, X]\,dt + \sum_{l=l_{\min}}^{N-1}\sum_{m=-l}^{l}[\nabla H_{lm}(X)^*, X]\circ dW^{lm}

are the Lie-Poisson equation of (this package's conventions: drift :math:`[X, \nabla h]`, IsoMP generator
:math:`-\nabla h`)

- :math:`h(X) = -\tfrac12\langle\Delta_N^{-1}X, X\rangle = \tfrac12\sum_{lm}c_{lm}^2/(l(l+1)) \ge 0`, the
  kinetic energy, so that :math:`\nabla h = -\Delta_N^{-1}X` and the drift is exactly (40);
- ``projection`` noise: :math:`h_{lm} = \tfrac{c}{2l(l+1)}c_{lm}^2`, :math:`\nabla h_{lm} =
  \tfrac{c}{l(l+1)}c_{lm}T_{lm}`; ``constant`` noise: :math:`h_{lm} = \tfrac{c}{l(l+1)}c_{lm}`;

with :math:`c_{lm} = \langle T_{lm}, X\rangle = \mathrm{Re\,tr}(T_{lm}^*X)` the coefficients in the real
Hoppe-Yau basis (Ephrati et al. 2024 section 6.4 and its refs. [41], [42]: Hoppe; Hoppe & Yau). ``HoppeYau`` holds that basis WITHOUT any dense basis: per diagonal
m the real orthogonal eigenvector matrix :math:`V^{(m)}` of the Laplacian's symmetric tridiagonal block,
and the O(N^3) transforms (not in Ephrati et al. (2024); as in quflow) written in jax.numpy (jax.grad and vmap go through them). The
blocks of diagonals m and N - m (sizes N - m and m) share one N x N slot of a (N//2 + 1, N, N) tensor,
so each transform is one batched matrix product (about N^3/2 multiply-adds, 8.5 MB of constants at N = 128).

Coefficients, everywhere outside the class's internals, are flat real vectors of length N^2 indexed
:math:`l^2 + l + m` (l = 0..N-1, m = -l..l; the l = 0 entry is the trace part, zero on su(N)).

What a figure makes of a state (its map, spectra, quflow coefficients) is ``sgi_run.figures.fields.zeitlin``:
no run computes with it, so the code digest does not read it.
"""
from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.core.space import Leaf, StateSpace
from sgi_run.systems.lie_poisson import LiePoissonSystem


def hbar(n: int) -> float:
    """Zeitlin's Planck constant :math:`\\hbar = 2/\\sqrt{N^2-1}`: :math:`X = X^q/\\hbar`."""
    return 2.0 / math.sqrt(n * n - 1)


def flat_index(l: int, m: int) -> int:
    """Position of (l, m) in a flat coefficient vector."""
    return l * l + l + m


def degrees(n: int) -> np.ndarray:
    """(N^2,) the degree l of every flat coefficient."""
    return np.repeat(np.arange(n), 2 * np.arange(n) + 1)


def tridiagonal_block(n: int, m: int, dtype=float) -> tuple[np.ndarray, np.ndarray]:
    """The Hoppe-Yau Laplacian on the m-th sub-diagonal (entries (k + m, k), k = 0..N-m-1; Hoppe & Yau, Ephrati et al.'s (2024) ref. [42]):
    diagonal :math:`d_k = -2(s(s+1) - (k+m-s)(k-s))`, off-diagonal
    :math:`e_k = \\sqrt{(k+m+1)(N-k-m-1)}\\sqrt{(k+1)(N-k-1)}`; eigenvalues :math:`-l(l+1)`, l = m..N-1."""
    s = dtype(n - 1) / 2
    k = np.arange(n - m).astype(dtype)
    d = -2 * (s * (s + 1) - (k + m - s) * (k - s))
    k = k[:-1]
    e = np.sqrt((k + m + 1) * (n - k - m - 1)) * np.sqrt((k + 1) * (n - k - 1))
    return d, e


def block_eigenvectors(n: int, m: int) -> np.ndarray:
    """:math:`V^{(m)}` ((N-m) x (N-m), real orthogonal): column j is the unit eigenvector of degree
    l = m + j, its last component of sign :math:`(-1)^m` (Hoppe's / quflow's orientation).

    LAPACK's QR driver (``stev``) gives them to :math:`\\epsilon\\|\\Delta_N\\|/\\text{gap}` (3e-13 at N = 128
    for l = 1: the rounding of the float64 off-diagonal alone moves them that much); one Ogita-Aishima
    refinement step in extended precision (``numpy.longdouble``), with the exact eigenvalues
    :math:`-l(l+1)`, brings them to float64 rounding (T_10 = sqrt(3/N) hbar i J_3 to 1e-16, orthogonal to
    1e-15). About 0.7 s for all blocks at N = 128, once per N."""
    d, e = tridiagonal_block(n, m)
    if n - m == 1:
        return np.ones((1, 1)) * (-1.0) ** m
    _, v = scipy.linalg.eigh_tridiagonal(d, e, lapack_driver="stev")
    v = v[:, ::-1]                               # ascending eigenvalues -l(l+1): l descending -> ascending
    v = v * np.where(np.sign(v[-1]) == (-1.0) ** m, 1.0, -1.0)
    # Refinement (Ogita & Aishima 2018): with R = I - X^T X, S = X^T A X, exact lam:
    # X <- X + X E, E_ij = (S_ij + lam_j R_ij)/(lam_j - lam_i) (i != j), E_ii = R_ii / 2.
    wide = np.longdouble
    d, e = tridiagonal_block(n, m, wide)
    x = v.astype(wide)
    ax = d[:, None] * x
    ax[:-1] += e[:, None] * x[1:]
    ax[1:] += e[:, None] * x[:-1]
    l = np.arange(m, n).astype(wide)
    lam = -l * (l + 1)
    r = np.eye(n - m, dtype=wide) - x.T @ x
    gap = lam[None, :] - lam[:, None]
    np.fill_diagonal(gap, 1)
    correction = (x.T @ ax + lam[None, :] * r) / gap
    np.fill_diagonal(correction, np.diag(r) / 2)
    return (x + x @ correction).astype(float)


class HoppeYau:
    r"""The real Hoppe-Yau basis :math:`T_{lm}` of u(N) (Ephrati et al. 2024 section 6.4) as per-diagonal eigenvector blocks,
    and the fast transforms between N x N matrices and flat coefficient vectors (not in Ephrati et al. (2024); as in quflow).

    ``forward(X)`` = :math:`\langle T_{lm}, X\rangle = \mathrm{Re\,tr}(T_{lm}^*X)` (for any complex X: the
    pairing with its skew-Hermitian part), ``backward(c)`` = :math:`\sum c_{lm}T_{lm}` (exactly
    skew-Hermitian); they are each other's adjoints and inverses on u(N). ``apply(X, w)`` is the
    operator :math:`\sum_{lm}w_{lm}\langle T_{lm},X\rangle T_{lm}` without leaving the internal layout.
    Internals: slot (b, i) of the folded layout holds diagonal ``slot_m[b, i]`` (entry k = i - offset on
    the input side, degree ``slot_l[b, i]`` on the output side); P holds the m >= 0 coefficients, Q the
    m < 0 ones (:math:`c_{l,-m}`)."""

    def __init__(self, n: int):
        self.n = n
        self.blocks = [block_eigenvectors(n, m) for m in range(n)]      # V^(m), m = 0..N-1
        nb = n // 2 + 1
        where = {}                                                        # m -> (block, offset)
        for m in range(n):
            where[m] = (m, 0) if m <= n - m else (n - m, m)
        V = np.zeros((nb, n, n))
        slot_m = np.full((nb, n), -1)
        slot_k = np.zeros((nb, n), int)
        for m, (b, o) in where.items():
            size = n - m
            V[b, o:o + size, o:o + size] = self.blocks[m]
            slot_m[b, o:o + size] = m
            slot_k[b, o:o + size] = np.arange(size)
        valid = slot_m >= 0
        mm = np.where(valid, slot_m, 0)
        self.V, self.valid, self.nb = V, valid, nb
        self.slot_m, self.slot_l = slot_m, np.where(valid, mm + slot_k, -1)   # the j-th column is l = m + j
        # Input side: slot (b, i) reads X[k + m, k] (and its mirror X[k, k + m]).
        self.in_lo = np.where(valid, (slot_k + mm) * n + slot_k, 0)
        self.in_up = np.where(valid, slot_k * n + slot_k + mm, 0)
        sign = (-1.0) ** mm
        r2 = math.sqrt(2.0)
        m0 = mm == 0
        # Coefficients from y = V^T d: c_{l0} = Im y, c_{lm} = (-1)^m sqrt2 Im y, c_{l,-m} = -(-1)^m sqrt2 Re y.
        self.sp = np.where(valid, np.where(m0, 1.0, sign * r2), 0.0)
        self.sq = np.where(valid & ~m0, -sign * r2, 0.0)
        # Back: y' = bq Q + i bp P, X[k + m, k] = (V y')_k.
        self.bp = np.where(valid, np.where(m0, 1.0, sign / r2), 0.0)
        self.bq = np.where(valid & ~m0, -sign / r2, 0.0)
        # Output side: X[r, c] = Y[slot(m = r - c, k = c)] for r >= c, -conj(Y[slot(m = c - r, k = r)]) above.
        slot_of = {(m, k): where[m][0] * n + where[m][1] + k for m in range(n) for k in range(n - m)}
        r, c = np.indices((n, n))
        self.lower = r >= c
        self.out_lo = np.array([[slot_of[(i - j, j)] if i >= j else 0 for j in range(n)] for i in range(n)])
        self.out_up = np.array([[slot_of[(j - i, i)] if i < j else 0 for j in range(n)] for i in range(n)])
        # Flat coefficients <-> [P, Q] slots (flat P + Q has 2 nb n entries; one extra zero at the end).
        size = nb * n
        flat_to_slot = np.zeros(n * n, int)
        p_from_flat = np.full(size, n * n)
        q_from_flat = np.full(size, n * n)
        for l in range(n):
            for m in range(-l, l + 1):
                b, o = where[abs(m)]
                s = b * n + o + l - abs(m)
                flat_to_slot[flat_index(l, m)] = s if m >= 0 else size + s
                (p_from_flat if m >= 0 else q_from_flat)[s] = flat_index(l, m)
        self.flat_to_slot, self.p_from_flat, self.q_from_flat = flat_to_slot, p_from_flat, q_from_flat
        # Compiled once, for numbers outside traced code (initial conditions, figures, checks).
        self.forward_numbers = jax.jit(self.forward)
        self.backward_numbers = jax.jit(self.backward)

    # --- internal layout --------------------------------------------------------------------------
    def slot_weights(self, per_degree: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """A weight per degree l (N,) as (P, Q) slot weights (0 on the padding)."""
        w = np.where(self.valid, np.asarray(per_degree, float)[np.maximum(self.slot_l, 0)], 0.0)
        return w, np.where(self.slot_m > 0, w, 0.0)

    def forward_slots(self, x):
        """(P, Q), each (N//2 + 1, N): the coefficients of X in the folded layout."""
        xf = x.reshape(x.shape[:-2] + (-1,))
        d = 0.5 * (jnp.take(xf, self.in_lo, axis=-1) - jnp.conj(jnp.take(xf, self.in_up, axis=-1)))
        d = jnp.where(self.valid, d, 0.0)
        y = jnp.einsum("bij,...bic->...bjc", self.V, jnp.stack([jnp.real(d), jnp.imag(d)], -1))
        return self.sp * y[..., 1], self.sq * y[..., 0]

    def backward_slots(self, p, q):
        """The matrix :math:`\\sum c_{lm}T_{lm}` of folded coefficients: exactly skew-Hermitian."""
        y = jnp.einsum("bij,...bjc->...bic", self.V, jnp.stack([self.bq * q, self.bp * p], -1))
        yf = jax.lax.complex(y[..., 0], y[..., 1]).reshape(y.shape[:-3] + (-1,))
        lo = jnp.take(yf, self.out_lo, axis=-1)
        up = jnp.take(yf, self.out_up, axis=-1)
        return jnp.where(self.lower, lo, -jnp.conj(up))

    # --- flat coefficients ------------------------------------------------------------------------
    def to_flat(self, p, q):
        pq = jnp.concatenate([p.reshape(p.shape[:-2] + (-1,)), q.reshape(q.shape[:-2] + (-1,))], -1)
        return jnp.take(pq, self.flat_to_slot, axis=-1)

    def from_flat(self, c):
        c = jnp.concatenate([c, jnp.zeros(c.shape[:-1] + (1,), c.dtype)], -1)
        shape = c.shape[:-1] + (self.nb, self.n)
        pick = lambda index: jnp.take(c, index, axis=-1).reshape(shape)
        return pick(self.p_from_flat), pick(self.q_from_flat)

    def forward(self, x):
        """(..., N^2) real: :math:`\\mathrm{Re\\,tr}(T_{lm}^*X)` at :math:`l^2 + l + m`."""
        return self.to_flat(*self.forward_slots(x))

    def backward(self, c):
        """(..., N, N) complex: :math:`\\sum_{lm}c_{lm}T_{lm}`."""
        return self.backward_slots(*self.from_flat(c))

    def apply(self, x, w):
        """:math:`\\sum w_{lm}\\langle T_{lm},X\\rangle T_{lm}` for flat weights w (N^2,) (one forward, one
        backward transform)."""
        p, q = self.forward_slots(x)
        wp, wq = self.from_flat(jnp.asarray(w))
        return self.backward_slots(wp * p, wq * q)

    # --- small N only (tests, checks) ---------------------------------------------------------------
    def dense(self, l: int, m: int) -> np.ndarray:
        """The N x N matrix :math:`T_{lm}` (one basis element; never the whole basis at large N)."""
        c = np.zeros(self.n * self.n)
        c[flat_index(l, m)] = 1.0
        with jax.ensure_compile_time_eval():
            return np.asarray(self.backward_numbers(c))


@functools.cache
def hoppe_yau(n: int) -> HoppeYau:
    """The basis of su(N), built once per N (about 0.8 s at N = 128)."""
    return HoppeYau(n)


def diagonals(a):
    """``d[k, m] = a[k, k + m]`` (diagonal m of an n x n matrix, upward, as column m; zero past its end), by padding
    and reshaping: a gather by index arrays cost the Poisson solve a quarter of its time."""
    n = a.shape[-1]
    rows = jnp.pad(a, ((0, 0), (0, n))).reshape(-1)                   # row k holds a[k, :] then n zeros
    return jnp.pad(rows, (0, n)).reshape(n, 2 * n + 1)[:, :n]          # rows of 2n + 1: entry (k, m) is a[k, k + m]


class PoissonSolver:
    r""":math:`\Delta_N^{-1}X` on su(N) by one tridiagonal solve per diagonal (O(N^2)
    instead of the O(N^3) pair of transforms): diagonal m of X (entries X[k + m, k]) goes through the block
    of ``tridiagonal_block``. The blocks are negative definite for m >= 1, so their LDU (Thomas) factors
    need no pivoting and are computed once. The two sweeps are ``lax.scan`` over k, all diagonals at once:
    0.08 ms at N = 128 on one core (0.11 with the diagonals gathered by index), against 0.36 ms for
    ``lax.linalg.tridiagonal_solve`` on the same batch (LAPACK gtsv with pivoting, per system) and 0.97 ms for
    the transform pair.

    The m = 0 block is singular on the constant diagonal (the trace, l = 0). Pinning one unknown and making
    the solution traceless again loses digits to the cancellation (3e-13 relative at N = 128, against a
    long-double solve); instead the diagonal goes through the block's own eigenvectors (``block_eigenvectors``,
    refined to float64 rounding): :math:`V^{(0)}\,\mathrm{diag}(-1/(l(l+1)), 0 \text{ at } l = 0)\,V^{(0)T}`, one
    N x N product (1e-15 relative). The diagonals m >= 1 are accurate to about cond * eps."""

    def __init__(self, n: int):
        self.n = n
        lower, upper, diagonal = np.zeros((n, n)), np.zeros((n, n)), np.ones((n, n))    # padding: identity rows
        for b in range(n):
            d, e = tridiagonal_block(n, b)
            diagonal[b, :n - b], lower[b, 1:n - b], upper[b, :n - b - 1] = d, e, e
        lower[0, n - 1], diagonal[0, n - 1] = 0.0, 1.0             # m = 0 sweeps: well defined, replaced below
        multiplier, pivot = np.zeros((n, n)), diagonal.copy()
        for j in range(1, n):
            multiplier[:, j] = lower[:, j] / pivot[:, j - 1]
            pivot[:, j] = diagonal[:, j] - multiplier[:, j] * upper[:, j - 1]
        # Along k first (the scans' axis), one column per diagonal.
        self.multiplier, self.upper, self.inverse_pivot = multiplier.T, upper.T, (1.0 / pivot).T
        r, c = np.indices((n, n))
        self.lower = r >= c
        self.out_lo = np.where(self.lower, c * n + (r - c), 0)       # X[r, c] = Y[k = c, m = r - c], r >= c
        self.out_up = np.where(self.lower, 0, r * n + (c - r))       # above: -conj(Y[k = r, m = c - r])
        v = block_eigenvectors(n, 0)
        l = np.arange(n, dtype=float)
        weights = np.divide(-1.0, l * (l + 1), out=np.zeros(n), where=l > 0)     # 0 on the trace (l = 0)
        self.diagonal_inverse = (v * weights) @ v.T

    def __call__(self, x):
        n = self.n
        b = 0.5 * (diagonals(jnp.swapaxes(x, -1, -2)) - jnp.conj(diagonals(x)))      # skew part, (k, m)
        # m = 0: traceless. Its right-hand side 0.5 (X_kk - conj X_kk) is exactly i Im X_kk, so one real product
        # (the (k, m) layout's column and a complex product cost the solve 20%).
        y0 = 1j * (self.diagonal_inverse @ jnp.imag(jnp.diagonal(x)))

        def forward(z, row):
            b, multiplier = row
            z = b - multiplier * z
            return z, z

        def backward(y, row):
            z, upper, inverse_pivot = row
            y = (z - upper * y) * inverse_pivot
            return y, y
        zero = jnp.zeros(n, b.dtype)
        _, z = jax.lax.scan(forward, zero, (b, self.multiplier))
        _, y = jax.lax.scan(backward, zero, (z, self.upper, self.inverse_pivot), reverse=True)
        y = y.at[:, 0].set(y0).reshape(-1)
        return jnp.where(self.lower, jnp.take(y, self.out_lo), -jnp.conj(jnp.take(y, self.out_up)))


@functools.cache
def poisson_solver(n: int) -> PoissonSolver:
    return PoissonSolver(n)


def spin_matrices(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Hermitian spin-s matrices :math:`J_1, J_2, J_3` (s = (N-1)/2): :math:`[J_1, J_2] = iJ_3`."""
    s = (n - 1) / 2
    r = np.arange(n - 1)
    jp = np.diag(np.sqrt((r + 1) * (n - 1 - r)), -1).astype(complex)
    return 0.5 * (jp + jp.T), (jp - jp.T) / 2j, np.diag(np.arange(n) - s).astype(complex)


def laplacian(x):
    """Hoppe-Yau :math:`\\Delta_N X = -\\sum_a[J_a,[J_a,X]]` by the commutator form (O(N^3); checks only)."""
    n = x.shape[-1]
    out = 0
    for j in spin_matrices(n):
        inner = j @ x - x @ j
        out = out - (j @ inner - inner @ j)
    return out


def matrix_quflow(omega) -> np.ndarray:
    """:math:`X^q = \\sum\\omega_{lm}\\sqrt N\\,T_{lm}` of flat coefficients (N^2,)."""
    omega = np.asarray(omega, float)
    n = math.isqrt(omega.shape[-1])
    with jax.ensure_compile_time_eval():      # numbers, also when called while a function is traced
        return np.asarray(hoppe_yau(n).backward_numbers(jnp.asarray(omega) * math.sqrt(n)))


@functools.cache
def _initial_matrix(n: int, lmax: int, rms: float, seed: int) -> np.ndarray:
    """:math:`X_0 = X^q_0/\\hbar`: :math:`\\omega_{lm}\\sim\\mathcal N(0,1)` for 1 <= l <= lmax (drawn in flat
    order by ``numpy.random.default_rng(seed)``), zero otherwise, scaled to :math:`\\sum\\omega^2 = rms^2`."""
    draws = np.random.default_rng(seed).standard_normal((lmax + 1) ** 2 - 1)
    omega = np.zeros(n * n)
    omega[1:(lmax + 1) ** 2] = draws * rms / np.linalg.norm(draws)
    x = matrix_quflow(omega) / hbar(n)
    return x - np.trace(x) / n * np.eye(n)          # the transform's round-off trace (1e-13 ||X|| at N = 128)


@dataclasses.dataclass(frozen=True)
class ZeitlinEuler(LiePoissonSystem):
    r"""Stochastic Euler-Zeitlin on su(N) (Ephrati et al. 2024 section 6.4; module docstring for the physics): the
    state ``X`` :math:`= X^q/\hbar`; drift :math:`[\Delta_N^{-1}X, X]` (40); noises :math:`(l, m)`,
    :math:`l = l_{\min}..N-1`, :math:`m = -l..l` in that order (``noises`` = :math:`\sum(2l+1)`); a fixed
    initial condition from ``ic_seed`` (the path key is not used). Observables: ``H`` (kinetic energy,
    > 0), ``C2`` = :math:`\mathrm{tr}(X^2)` (< 0), ``spectrum`` (the sorted eigenvalues of :math:`iX`; and
    ``lambda1``.. for N <= 12)."""
    N: int = 128
    noise_amplitude: float = 0.1
    noise_kind: str = "projection"
    noise_lmin: int = 0        # 0: ceil(N/2), the paper's N/2 (the config has no optional integers)
    ic_lmax: int = 10          # DEFAULT_IC_LMAX; the config's auto: settle_defaults
    ic_rms: float = 1.0
    ic_seed: int = 0

    NOISE_KINDS = ("projection", "constant")
    DEFAULT_IC_LMAX = 10      # the paper's (Figs 2/10)
    MAX_N = 256       # the paper's largest is 128; compose builds the basis (the observables' shapes)

    @classmethod
    def settle_defaults(cls, parameters: dict) -> dict:
        """``ic_lmax: auto``: DEFAULT_IC_LMAX, or every mode (N - 1) of a smaller matrix, so that a small N
        typed never contradicts it ('auto' while N is not an integer: N's own check refuses that)."""
        settled = dict(parameters)
        n = settled.get("N")
        if settled.get("ic_lmax") == "auto" and isinstance(n, int) and not isinstance(n, bool):
            settled["ic_lmax"] = min(cls.DEFAULT_IC_LMAX, n - 1)
        return settled

    def check(self):
        n = self.N
        require("N", n, 2 <= n <= self.MAX_N, f"an integer in [2, {self.MAX_N}] (the basis holds N^3/2 numbers, "
                "refined in extended precision at O(N^4): 0.8 s at N = 128)")
        require("noise_amplitude", self.noise_amplitude, self.noise_amplitude >= 0, "a number >= 0")
        require("noise_kind", self.noise_kind, self.noise_kind in self.NOISE_KINDS, f"one of {list(self.NOISE_KINDS)}")
        require("noise_lmin", self.noise_lmin, 0 <= self.noise_lmin <= n - 1,
                f"0 (ceil(N/2)) or an integer in [1, N-1] = [1, {n - 1}]")
        require("ic_lmax", self.ic_lmax, 1 <= self.ic_lmax <= n - 1, f"an integer in [1, N-1] = [1, {n - 1}]")
        require("ic_rms", self.ic_rms, self.ic_rms > 0, "a number > 0")
        require("ic_seed", self.ic_seed, self.ic_seed >= 0, "an integer >= 0")

    # --- structure ------------------------------------------------------------------------------------
    @property
    def lmin(self) -> int:
        return self.noise_lmin or -(-self.N // 2)

    @property
    def noises(self) -> int:
        """:math:`\\sum_{l=l_{\\min}}^{N-1}(2l+1) = N^2 - l_{\\min}^2` (3N^2/4 for even N: 12288 at N = 128)."""
        return self.N**2 - self.lmin**2

    @property
    def basis(self) -> HoppeYau:
        return hoppe_yau(self.N)

    @property
    def hbar(self) -> float:
        return hbar(self.N)

    @property
    def algebra(self):
        return lie.MatrixAlgebra(self.N)

    @property
    def space(self) -> StateSpace:
        return StateSpace((Leaf("X", (self.N, self.N), "complex128"),), bare=True, project=self.project)

    def project(self, x):
        """Onto su(N): the skew-Hermitian part (an exact no-op on IsoMP's exactly skew iterates) less the
        trace (round-off; the project's check of Ephrati et al. (2024) Figure 10 wants it <= 1e-12 ||X||)."""
        return self.algebra.project(x)

    # --- physics ----------------------------------------------------------------------------------------
    def _inverse_degrees(self) -> np.ndarray:
        """1/(l(l+1)) per degree, 0 at l = 0."""
        l = np.arange(self.N, dtype=float)
        return np.divide(1.0, l * (l + 1), out=np.zeros(self.N), where=l > 0)

    def hamiltonian(self, x):
        """:math:`h = \\tfrac12\\sum c_{lm}^2/(l(l+1)) = -\\tfrac12\\langle\\Delta_N^{-1}X, X\\rangle`:
        :math:`\\nabla h = -\\Delta_N^{-1}X`, drift :math:`[X, \\nabla h] = [\\Delta_N^{-1}X, X]` (40)."""
        p, q = self.basis.forward_slots(x)
        w, _ = self.basis.slot_weights(self._inverse_degrees())
        return 0.5 * jnp.sum(w * (p * p + q * q))

    def noise_weights(self) -> np.ndarray:
        """(noises,) :math:`c/(l(l+1))` of each noise (l, m)."""
        return self.noise_amplitude * self._inverse_degrees()[degrees(self.N)[self.lmin**2:]]

    def noise_hamiltonians(self, x):
        """All :math:`h_{lm}`, l >= lmin, from one forward transform."""
        c = self.basis.forward(x)[..., self.lmin**2:]
        w = self.noise_weights()
        return 0.5 * w * c * c if self.noise_kind == "projection" else w * c

    def inverse_laplacian(self, x):
        """:math:`\\Delta_N^{-1}X` (weights :math:`-1/(l(l+1))`, 0 at l = 0) by tridiagonal solves."""
        return poisson_solver(self.N)(x)

    def generator(self, x, dt, dw):
        """:math:`\\Delta t\\nabla h + \\sum dW_{lm}\\nabla h_{lm}` at the cost of the drift alone: without noise
        :math:`-\\Delta t\\Delta_N^{-1}X` by the tridiagonal solves; with it one forward and one backward
        transform, every mode weighted at once (the derived form transforms twice for each term)."""
        if self.noise_amplitude == 0:
            return -dt * self.inverse_laplacian(x)
        p, q = self.basis.forward_slots(x)
        drift_p, drift_q = self.basis.slot_weights(self._inverse_degrees())
        flat = jnp.concatenate([jnp.zeros(dw.shape[:-1] + (self.lmin**2,)), self.noise_weights() * dw], -1)
        noise_p, noise_q = self.basis.from_flat(flat)
        if self.noise_kind == "projection":
            return self.basis.backward_slots((dt * drift_p + noise_p) * p, (dt * drift_q + noise_q) * q)
        return self.basis.backward_slots(dt * drift_p * p + noise_p, dt * drift_q * q + noise_q)

    def initial_state(self, key):
        return jnp.asarray(_initial_matrix(self.N, self.ic_lmax, float(self.ic_rms), self.ic_seed))

    # --- observables ---------------------------------------------------------------------------------------
    def enstrophy(self, x):
        """:math:`C_2 = \\mathrm{tr}(X^2) = -\\|X\\|_F^2`, real."""
        return jnp.real(jnp.sum(x * x.T))

    def casimir_observables(self) -> dict[str, Callable]:
        """The enstrophy only, not the N - 1 power-sum Casimirs (the spectrum holds them all)."""
        return {"C2": self.enstrophy}
