r"""The state of one path, described by its space: named leaves, named views, a distance, a projection.

A state is a pytree of arrays. A space lists its leaves (name, shape, dtype; complex allowed): the
state is the dict ``{leaf name: array}``, or, for a space declared ``bare``, its single leaf's array
itself (canonical systems: ``z = (q, p)``, the flat vector every canonical integrator works on).
The engine vmaps, reduces, keeps, snapshots and checkpoints states leaf by leaf and never packs a
state into one flat vector: an su(N) state stays an N x N matrix.

``views`` are the named arrays a user reads back (kept paths, snapshots): by default each leaf by
its name; a canonical system names its coordinates (``q``, ``p``: ``z[0]``, ``z[1]``).
``distance`` is the norm that strong errors are measured in (default: the Euclidean/Frobenius norm
of the difference over all leaves); ``project`` maps a state back onto the space where the geometry
needs it (default: none).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping

import jax
import jax.numpy as jnp
import numpy as np

DTYPES = ("float64", "complex128")


def _unchanged(state):
    return state


@dataclasses.dataclass(frozen=True)
class Leaf:
    name: str
    shape: tuple[int, ...] = ()
    dtype: str = "float64"

    def __post_init__(self):
        object.__setattr__(self, "shape", tuple(int(n) for n in self.shape))
        if self.dtype not in DTYPES:
            raise ValueError(f"leaf {self.name!r}: dtype {self.dtype!r} is not one of {list(DTYPES)}")

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


def euclidean_distance(a: Mapping[str, jax.Array], b: Mapping[str, jax.Array]) -> jax.Array:
    """sqrt of the summed squared moduli of the differences of every leaf."""
    return jnp.sqrt(sum(jnp.sum(jnp.abs(a[k] - b[k]) ** 2) for k in a))


@dataclasses.dataclass(frozen=True, eq=False)
class StateSpace:
    leaves: tuple[Leaf, ...]
    bare: bool = False                    # the state is the single leaf's array, not a dict
    views: Mapping[str, Callable] | None = None      # name -> f(state) -> array; None: each leaf
    leaf_distance: Callable = euclidean_distance   # f(leaves of a, leaves of b) -> scalar
    project: Callable = _unchanged                  # f(state) -> the nearest state on the space

    def __post_init__(self):
        object.__setattr__(self, "leaves", tuple(self.leaves))
        names = [leaf.name for leaf in self.leaves]
        if not names or len(set(names)) != len(names):
            raise ValueError(f"a state space needs distinct leaf names, got {names}")
        if self.bare and len(self.leaves) != 1:
            raise ValueError("a bare state is one array: give one leaf")

    # --- state <-> leaves ----------------------------------------------------------------------
    def leaves_of(self, state) -> dict[str, jax.Array]:
        return {self.leaves[0].name: state} if self.bare else {leaf.name: state[leaf.name] for leaf in self.leaves}

    def from_leaves(self, leaves: Mapping[str, jax.Array]):
        return leaves[self.leaves[0].name] if self.bare else {leaf.name: leaves[leaf.name] for leaf in self.leaves}

    def zeros(self, batch: tuple[int, ...] = ()):
        """A state of zeros with leading axes ``batch`` (numpy: a host buffer)."""
        return self.from_leaves({leaf.name: np.zeros(batch + leaf.shape, leaf.dtype) for leaf in self.leaves})

    # --- per-path reductions (one path's state; the engine vmaps them) ----------------------------
    def is_finite(self, state) -> jax.Array:
        return jnp.all(jnp.stack([jnp.all(jnp.isfinite(x)) for x in self.leaves_of(state).values()]))

    def distance(self, a, b) -> jax.Array:
        return self.leaf_distance(self.leaves_of(a), self.leaves_of(b))

    # --- what a user reads back ---------------------------------------------------------------------
    def view_functions(self) -> dict[str, Callable]:
        if self.views is not None:
            return dict(self.views)
        return {leaf.name: (lambda state, name=leaf.name: self.leaves_of(state)[name]) for leaf in self.leaves}

    def view_specs(self) -> dict[str, jax.ShapeDtypeStruct]:
        """Shape and dtype of each view of one path's state."""
        example = self.from_leaves({leaf.name: jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for leaf in self.leaves})
        return {name: jax.eval_shape(f, example) for name, f in self.view_functions().items()}
