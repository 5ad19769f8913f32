"""The charts of a Lie-Poisson formula system: an algebra named by its text (so3, se3, so(n), su(N) or a product
``so3 x so3`` of those) with the coordinates its formulas are written in."""
from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from typing import ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from sgi_run.core import lie
from sgi_run.core.errors import require
from sgi_run.core.space import Leaf, StateSpace

# The largest so(n), su(N) a formula system takes: its formulas name each of the matrix's coordinates (255 for
# su(16)); a larger algebra is a class's (zeitlin.py, su(N) up to 256).
MATRIX_MAX = 16
ALGEBRAS = f"so3, se3, so(n) or su(N) (n, N from 2 to {MATRIX_MAX})"
# A product a x b x .. of those (lie.Product), of at most this many factors.
MAX_FACTORS = 16
_MATRIX = re.compile(r"(so|su)\((\d{1,3})\)")


@dataclasses.dataclass(frozen=True)
class Chart:
    """An algebra named by its text, with the coordinates its formulas are written in: their symbols, their
    values at a dual element, the state's leaves and the keys of the initial state. ``kind`` is ``so3``
    (R^3, as ``rigid_body``), ``se3`` (two 3-vectors, as ``heavy_top``), ``so`` or ``su`` (n x n matrices)."""
    kind: str
    n: int = 3

    @classmethod
    def of(cls, text) -> Chart | ProductChart:
        """The chart of an algebra's text: one algebra, or a product ``so3 x so3`` (no algebra's name has an x)."""
        compact = "".join(text.split()).lower() if isinstance(text, str) else ""
        factors = compact.split("x")
        allowed = f"one of {ALGEBRAS}, or a product a x b x .. of 2 to {MAX_FACTORS} of them (so3 x so3)"
        require("algebra", text, len(factors) <= MAX_FACTORS, allowed)
        charts = []
        for factor in factors:
            matched = _MATRIX.fullmatch(factor)
            require("algebra", text, factor in ("so3", "se3") or (matched is not None and 2 <= int(matched[2]) <= MATRIX_MAX),
                    allowed)
            charts.append(cls(factor) if factor in ("so3", "se3") else cls(matched[1], int(matched[2])))
        return charts[0] if len(charts) == 1 else ProductChart(tuple(charts))

    @property
    def algebra(self):
        if self.kind in ("so3", "se3"):
            return lie.SO3() if self.kind == "so3" else lie.SE3()
        return lie.MatrixAlgebra(self.n, complex=self.kind == "su")

    @functools.cached_property
    def entries(self) -> tuple[tuple[int, int, bool], ...]:
        """A matrix's coordinates as (row, column, imaginary part?), row by row: so(n) the entries above the
        diagonal; su(N) the real and imaginary parts of those and the imaginary diagonal (traceless)."""
        if self.kind == "so":
            return tuple((i, j, False) for i in range(self.n) for j in range(i + 1, self.n))
        return tuple((i, j, imaginary) for i in range(self.n) for j in range(i, self.n)
                     for imaginary in ((True,) if i == j else (False, True)))

    @functools.cached_property
    def symbols(self) -> tuple[str, ...]:
        """so3: pi1, pi2, pi3; se3: those and gamma1, gamma2, gamma3; so(n): m12, m13, .., m23, ..; su(N): re12,
        im12, .., im11, im22, ..; from n = 10 the indices are apart (m1_10), so no two read the same."""
        if self.kind in ("so3", "se3"):
            return tuple(f"{v}{k}" for v in ("pi", "gamma")[: 1 if self.kind == "so3" else 2] for k in (1, 2, 3))
        sep = "_" if self.n >= 10 else ""
        part = lambda imaginary: "m" if self.kind == "so" else ("im" if imaginary else "re")
        return tuple(f"{part(imaginary)}{i + 1}{sep}{j + 1}" for i, j, imaginary in self.entries)

    @property
    def initial_keys(self) -> tuple[str, ...]:
        return {"so3": ("pi0",), "se3": ("pi0", "gamma0")}.get(self.kind, ("m0",))

    def initial_sizes(self) -> tuple[int, ...]:
        return (3,) * len(self.initial_keys) if self.kind in ("so3", "se3") else (len(self.symbols),)

    @property
    def space(self) -> StateSpace:
        if self.kind in ("so3", "se3"):
            leaves = tuple(Leaf(name, (3,)) for name in ("pi", "gamma")[: len(self.initial_keys)])
            return StateSpace(leaves, bare=len(leaves) == 1)
        return StateSpace((Leaf("M", (self.n, self.n), "complex128" if self.kind == "su" else "float64"),), bare=True)

    def key_symbols(self, key: str) -> tuple[str, ...]:
        """The symbols an initial key's entries give, in order (pi0: pi1 pi2 pi3; m0: every symbol)."""
        return self.symbols if key == "m0" else tuple(s for s in self.symbols if s.startswith(key[:-1]))

    def dual(self, z):
        """The dual element of a state (se3: the pair of its leaves)."""
        return (z["pi"], z["gamma"]) if self.kind == "se3" else z

    def state(self, mu):
        return {"pi": mu[0], "gamma": mu[1]} if self.kind == "se3" else mu

    def initial(self, values: Mapping[str, Sequence]):
        """The dual element of an initial state's entries (float64 scalars by key)."""
        if self.kind in ("so3", "se3"):
            vectors = tuple(jnp.stack(values[k]) for k in self.initial_keys)
            return vectors if self.kind == "se3" else vectors[0]
        # As typed: an su(N) diagonal that sums to 0 at round-off (check) stays so, as every step's commutators
        # keep the trace; subtracting it would move the entries the user gave.
        return self.matrix(values["m0"])

    def su_diagonals(self, mu) -> list[list[float]]:
        """The imaginary diagonal of an su(N) element (whose sum, the trace, must vanish); none elsewhere."""
        return [[float(v) for v in np.imag(np.diagonal(np.asarray(mu)))]] if self.kind == "su" else []

    def values(self, mu) -> list:
        """The coordinates' values at the dual element ``mu`` (real scalars)."""
        if self.kind == "so3":
            return [mu[k] for k in range(3)]
        if self.kind == "se3":
            return [v[k] for v in mu for k in range(3)]
        rows, cols, imaginary = (np.asarray(c) for c in zip(*self.entries))
        x = mu[rows, cols]
        x = jnp.where(imaginary, jnp.imag(x), jnp.real(x)) if self.kind == "su" else x
        return [x[k] for k in range(len(self.entries))]

    def matrix(self, values) -> jax.Array:
        """The so(n) or su(N) matrix of coordinates' values (the inverse of ``values``), in JAX: a random initial
        law's values are traced."""
        m = jnp.zeros((self.n, self.n), jnp.complex128 if self.kind == "su" else jnp.float64)
        for (i, j, imaginary), v in zip(self.entries, values):
            if i == j:
                m = m.at[i, i].set(1j * v)
            elif imaginary:
                m = m.at[i, j].add(1j * v).at[j, i].add(1j * v)
            else:
                m = m.at[i, j].add(v).at[j, i].add(-v)
        return m


@dataclasses.dataclass(frozen=True)
class ProductChart:
    """A product a x b x .. of charts (``lie.Product``): factor k's symbols are its own with the suffix ``_k``
    (``pi1_1 .. pi3_1, pi1_2 ..``), as ``lie.Product`` names the factors' Casimirs (``C2_1``), so the one rule
    names everything of a factor, and no two factors' symbols read the same. The state's leaves are the factors'
    with that suffix (``pi_1``, ``gamma_2``, ``M_3``). An initial key (``pi0``, ``gamma0``, ``m0``) lists its
    entries for every factor that has the key, factor by factor: the keys stay the system's fields, whatever the
    product."""
    factors: tuple[Chart, ...]
    kind: ClassVar[str] = "product"

    @property
    def algebra(self):
        return lie.Product([f.algebra for f in self.factors])

    @functools.cached_property
    def symbols(self) -> tuple[str, ...]:
        return tuple(f"{s}_{k}" for k, f in enumerate(self.factors, 1) for s in f.symbols)

    def key_symbols(self, key: str) -> tuple[str, ...]:
        return tuple(f"{s}_{k}" for k, f in enumerate(self.factors, 1) if key in f.initial_keys for s in f.key_symbols(key))

    @property
    def initial_keys(self) -> tuple[str, ...]:
        return tuple(k for k in ("pi0", "gamma0", "m0") if any(k in f.initial_keys for f in self.factors))

    def initial_sizes(self) -> tuple[int, ...]:
        return tuple(len(self.key_symbols(k)) for k in self.initial_keys)

    @property
    def space(self) -> StateSpace:
        return StateSpace(tuple(dataclasses.replace(leaf, name=f"{leaf.name}_{k}")
                                for k, f in enumerate(self.factors, 1) for leaf in f.space.leaves))

    def dual(self, z):
        parts = []
        for k, f in enumerate(self.factors, 1):
            leaves = {leaf.name: z[f"{leaf.name}_{k}"] for leaf in f.space.leaves}
            parts.append(f.dual(f.space.from_leaves(leaves)))
        return tuple(parts)

    def state(self, mu):
        return {f"{name}_{k}": v for k, (f, x) in enumerate(zip(self.factors, mu), 1)
                for name, v in f.space.leaves_of(f.state(x)).items()}

    def initial(self, values: Mapping[str, Sequence]):
        taken, parts = dict.fromkeys(values, 0), []
        for f in self.factors:
            own = {}
            for key, size in zip(f.initial_keys, f.initial_sizes()):
                own[key], taken[key] = values[key][taken[key]: taken[key] + size], taken[key] + size
            parts.append(f.initial(own))
        return tuple(parts)

    def su_diagonals(self, mu) -> list[list[float]]:
        return [d for f, x in zip(self.factors, mu) for d in f.su_diagonals(x)]

    def values(self, mu) -> list:
        return [v for f, x in zip(self.factors, mu) for v in f.values(x)]

