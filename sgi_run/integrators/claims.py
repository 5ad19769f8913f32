"""What an integrator claims: its strong and weak orders per noise class, and the invariants it keeps exactly.

A bundled method states them in its YAML's ``claims`` block, which sgi-bench compares with what it measures:

.. code-block:: yaml

    claims:
      strong: {additive: 1, commutative: 1, general: 0.5}   # null: no claim for that class
      weak: {additive: 1, commutative: 1, general: 1}
      keeps: [quadratic]
      source: "Kraus & Tyranowski (2021), section 3.3, Theorem 3.5"

Noise classes (``NOISE_CLASSES``): ``additive`` (the noise fields do not depend on the state), ``commutative`` (the
noise fields commute, [Y_i, Y_j] = 0: every system with one noise) and ``general``. Orders are those of Stratonovich
SDEs with smooth coefficients: strong, the root mean square error of the final state; weak, the error of E f(X_T) for
smooth f. ``null`` makes no claim for a class (a weak method's strong order; a class the method never meets).
``keeps`` (``KEEPS``): ``quadratic``, every quadratic first integral of the flow; ``casimirs``, every Casimir of a
Lie-Poisson system (the coadjoint orbit), to round-off and solver tolerance.

The block is metadata: ``config.build_integrator`` validates and removes it before ``make_integrator``, and
``config.config_hash`` leaves it out, so a claim never changes a run's numbers or identity.
"""
from __future__ import annotations

import dataclasses
import types
from collections.abc import Mapping

from omegaconf import OmegaConf

from sgi_run.composition import ConfigSource, composed_groups, group_options
from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import choice, list_of, real, text

NOISE_CLASSES = ("additive", "commutative", "general")
KEEPS = ("quadratic", "casimirs")
ORDER_KINDS = ("strong", "weak")
KEY = "claims"       # the integrator node's key
_FIELDS = (*ORDER_KINDS, "keeps", "source")


def _frozen(orders: Mapping) -> Mapping[str, float | None]:
    return types.MappingProxyType({c: orders[c] for c in NOISE_CLASSES})


@dataclasses.dataclass(frozen=True)
class Claims:
    """Orders per noise class (``strong``, ``weak``: a number > 0, or None for no claim), the invariants kept
    exactly (``keeps``) and where the numbers come from (``source``)."""
    strong: Mapping[str, float | None]
    weak: Mapping[str, float | None]
    keeps: tuple[str, ...] = ()
    source: str = ""

    def __post_init__(self):
        object.__setattr__(self, "strong", _frozen(self.strong))
        object.__setattr__(self, "weak", _frozen(self.weak))
        object.__setattr__(self, "keeps", tuple(self.keeps))

    def __hash__(self):
        return hash((tuple(self.strong.items()), tuple(self.weak.items()), self.keeps, self.source))

    @classmethod
    def none(cls) -> Claims:
        """No claim at all: a method of one's own without a ``claims`` block."""
        nothing = dict.fromkeys(NOISE_CLASSES)
        return cls(nothing, nothing, (), "")

    @classmethod
    def from_config(cls, node, where: str = f"integrator.{KEY}") -> Claims:
        """The claims of a ``claims`` config node (None: no claim); a malformed one is a one-line ConfigError naming
        its key (``integrator.claims.strong.general``)."""
        if node is None:
            return cls.none()
        if not isinstance(node, Mapping):
            raise ConfigError(where, node, f"a mapping of {list(_FIELDS)}, or null for no claim")
        for key in node:
            choice(f"{where}.{key}", key, _FIELDS, f"a key of the claims: one of {list(_FIELDS)}")
        strong, weak = (_orders(node.get(kind), f"{where}.{kind}") for kind in ORDER_KINDS)
        keeps = list_of(f"{where}.keeps", node.get("keeps", []),
                        f"a list of the invariants kept exactly, each one of {list(KEEPS)}, none twice",
                        item=lambda k: isinstance(k, str) and k in KEEPS, distinct=True)
        source = text(f"{where}.source", node.get("source"), "the paper (authors and year, section) or theory "
                                                             "the numbers come from")
        return cls(strong, weak, keeps, source)

    def order(self, kind: str, noise_class: str) -> float | None:
        """The claimed ``kind`` (strong | weak) order for ``noise_class``; None where nothing is claimed."""
        choice("kind", kind, ORDER_KINDS)
        choice("noise_class", noise_class, NOISE_CLASSES)
        return getattr(self, kind)[noise_class]

    def config(self) -> dict:
        """The ``claims`` node these claims are read from."""
        return {"strong": dict(self.strong), "weak": dict(self.weak), "keeps": list(self.keeps),
                "source": self.source}


def _orders(node, where: str) -> dict[str, float | None]:
    allowed = f"a number > 0 or null (no claim), for each of {list(NOISE_CLASSES)}"
    if not isinstance(node, Mapping):
        raise ConfigError(where, node, f"a mapping of the noise classes to orders: {allowed}")
    for key in node:
        choice(f"{where}.{key}", key, NOISE_CLASSES, f"a noise class: one of {list(NOISE_CLASSES)}")
    orders = {}
    for noise_class in NOISE_CLASSES:
        key = f"{where}.{noise_class}"
        if noise_class not in node:
            raise ConfigError(key, "<missing>", f"present: {allowed}")
        value = node[noise_class]
        orders[noise_class] = None if value is None else real(key, value, "an order: a number > 0, or null (no "
                                                                            "claim)", above=0)
    return orders


def claims_of(option: str, source: ConfigSource = ConfigSource()) -> Claims:
    """The claims of the integrator option ``option`` (conf/integrator/<option>.yaml, as ``source`` composes it);
    a method without a ``claims`` block (one's own) claims nothing: ``Claims.none()``."""
    choice("integrator", option, group_options("integrator", source))
    node = composed_groups((f"integrator={option}",), source).integrator
    claims = node.get(KEY) if KEY in node else None
    return Claims.from_config(OmegaConf.to_container(claims, resolve=True) if OmegaConf.is_config(claims) else claims)


def split_claims(node: Mapping) -> tuple[dict, Claims]:
    """An integrator config node without its ``claims`` (what ``make_integrator`` builds) and the claims, validated."""
    node = dict(node)
    return node, Claims.from_config(node.pop(KEY, None))


__all__ = ["Claims", "KEEPS", "NOISE_CLASSES", "ORDER_KINDS", "claims_of", "split_claims"]
