"""A formula system's initial law.

Each entry of an initial state (``q0``, ``p0``; ``pi0``, ``gamma0``, ``m0``) is a number (a deterministic start)
or a formula in independent standard normal variables ``xi1, xi2, ..``, uniform variables on [0, 1) ``u1, u2, ..``
and the parameters (``q0: "2 + 0.1*xi1"``). Each path draws them once, from its own key (``initial_state(key)``:
``jax.random`` on the engine's ``noise.init_key`` of the path), so the same seed gives the same starts whatever
the shards; a variable named in two entries is one draw (``q0: xi1, p0: xi1`` is one draw twice). A condition on
the start (a constraint manifold, an su(N) trace) is checked on CHECKED_DRAWS draws of fixed keys, before any run.
"""
from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

import jax
import jax.numpy as jnp

from sgi_run.core.errors import require

# An initial law's random variables: xi<k> independent standard normals, u<k> independent uniforms on [0, 1), drawn
# once per path from the path's own key and shared by every entry of its initial state that names them. At most
# MAX_RANDOM of each: each is an argument of the generated functions. No parameter's symbol may read as one.
RANDOM = re.compile(r"(xi|u)([1-9]\d*)")
MAX_RANDOM = 1000
RANDOM_SHOWN = ("xi1, xi2, .. (independent standard normals)", "u1, u2, .. (uniform on [0, 1))")
# A random initial law is checked (a constraint, a trace) on this many draws, from keys of its own (not a run's).
CHECKED_DRAWS = 16


def as_entries(value):
    """An initial state's value as the config gives it: a number (float), a formula (text), or a tuple of those."""
    entry = lambda v: v if isinstance(v, str) else float(v)
    return tuple(map(entry, value)) if isinstance(value, (list, tuple)) else entry(value)


def as_optional_entries(value):
    """``as_entries`` of a list; anything else (None where the algebra has no such key) as it is, for ``check``."""
    return as_entries(value) if isinstance(value, (list, tuple)) else value


@dataclasses.dataclass(frozen=True)
class InitialLaw:
    """Each initial key's entries (a number, or the compiled function of a formula) and how many normals (xi)
    and uniforms (u) a path draws for them."""
    entries: Mapping[str, tuple | None]
    normals: int
    uniforms: int

    @classmethod
    def compile(cls, compile, state: Mapping[str, object]) -> InitialLaw:
        """Each entry of the initial state's keys (``state``: key -> its value): a number as it is, a formula
        compiled in the random variables ``xi1..xiK``, ``u1..uL`` (K, L the largest indices any entry names) and
        the parameters. Called before the compiler's ``finish``, so a parameter only an initial law uses is used."""
        texts = [(key, v) for key, value in state.items() for v in (value if isinstance(value, tuple) else (value,))
                 if isinstance(v, str)]
        largest = {"xi": 0, "u": 0}
        for key, text in texts:
            for name in re.findall(r"[A-Za-z_]\w*", text):
                matched = RANDOM.fullmatch(name)
                if matched:
                    require(key, text, int(matched[2]) <= MAX_RANDOM, f"an initial law in at most xi{MAX_RANDOM} and "
                            f"u{MAX_RANDOM} (not {name})")
                    largest[matched[1]] = max(largest[matched[1]], int(matched[2]))
        randoms = [f"xi{k}" for k in range(1, largest["xi"] + 1)] + [f"u{k}" for k in range(1, largest["u"] + 1)]
        law = {}
        for key, value in state.items():
            entries = value if isinstance(value, tuple) else (value,)
            law[key] = None if value is None else tuple(compile(key, v, randoms, RANDOM_SHOWN) if isinstance(v, str)
                                                        else v for v in entries)
        return cls(law, largest["xi"], largest["u"])

    @property
    def random(self) -> bool:
        return self.normals + self.uniforms > 0

    def values(self, key, parameter_values: Sequence[float]) -> dict:
        """Each initial key's entries (float64 scalars), drawn from the path's ``key`` (not None where the law is
        random): xi from one half of it, u from the other (jax.random, so a path's start depends on its key alone,
        whatever the shards)."""
        drawn = ()
        if self.random:
            k_xi, k_u = jax.random.split(key)
            drawn = (*jax.random.normal(k_xi, (self.normals,), jnp.float64),
                     *jax.random.uniform(k_u, (self.uniforms,), jnp.float64))
        value = lambda e: jnp.asarray(e(*drawn, *parameter_values) if callable(e) else e, dtype=jnp.float64)
        return {k: None if entries is None else tuple(map(value, entries)) for k, entries in self.entries.items()}
