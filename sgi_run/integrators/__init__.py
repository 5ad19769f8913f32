"""Integrators: pure JAX one-step maps grouped by family; each method is a tableau in its YAML.

``make_integrator(cfg)`` builds one from an ``integrator`` config node: ``family`` picks the
implementation, ``tableau`` holds the coefficients (numbers or arithmetic strings over
``parameters``), and the remaining keys are the family's options (Newton tolerance, ...).
``integrator_config(integrator)`` is its inverse: the node an integrator is built of, so that one
made in Python (``sgi_run.integrator``, or a family's class with a tableau object) runs as a config.
"""
from __future__ import annotations

import copy
import dataclasses
from typing import Any
from collections.abc import Mapping

from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import real
from sgi_run.integrators.base import Integrator
from sgi_run.integrators.explicit_srk import ExplicitSRK, SERKTableau
from sgi_run.integrators.langevin_splitting import LangevinSplitting, LangevinSplittingTableau
from sgi_run.integrators.lda_prk import LdAPartitionedRK, LdAPRKTableau
from sgi_run.integrators.isospectral import IsospectralIntegrator, IsospectralScheme
from sgi_run.integrators.lie_group_variational import CayleyLGVI, CayleyTableau
from sgi_run.integrators.lie_poisson import LiePoissonIntegrator, LiePoissonScheme
from sgi_run.integrators.weak_lda_rk import WeakLdARK, WeakLdATableau
from sgi_run.integrators.weak_srk import WeakSRK, WeakSRKTableau

FAMILIES: dict[str, tuple[type[Integrator], Any]] = {
    "lda_prk": (LdAPartitionedRK, LdAPRKTableau),
    "explicit_srk": (ExplicitSRK, SERKTableau),
    "weak_lda_rk": (WeakLdARK, WeakLdATableau),
    "weak_srk": (WeakSRK, WeakSRKTableau),
    "langevin_splitting": (LangevinSplitting, LangevinSplittingTableau),
    "lie_poisson": (LiePoissonIntegrator, LiePoissonScheme),
    "isospectral": (IsospectralIntegrator, IsospectralScheme),
    "lie_group_variational": (CayleyLGVI, CayleyTableau),
}


def make_integrator(cfg: Mapping) -> Integrator:
    family = cfg["family"]
    if family not in FAMILIES:
        raise ConfigError("integrator.family", family, f"one of {sorted(FAMILIES)}")
    cls, tableau_cls = FAMILIES[family]
    params = cfg.get("parameters") or {}
    if not isinstance(params, Mapping):
        raise ConfigError("integrator.parameters", params, "a mapping of parameter names to numbers")
    for name, value in params.items():
        real(f"integrator.parameters.{name}", value)
    if not isinstance(cfg.get("tableau"), Mapping):
        raise ConfigError("integrator.tableau", cfg.get("tableau"), f"the {family} coefficients, a mapping")
    tableau = tableau_cls.from_config(cfg["tableau"], dict(params))
    options = {k: v for k, v in cfg.items() if k not in ("name", "family", "tableau", "parameters")}
    integrator = cls(name=cfg["name"], tableau=tableau, **options)
    # Not a field: equality, hashing and dataclasses.replace see the built method alone (a replaced one is
    # described by its tableau's numbers).
    object.__setattr__(integrator, "_built_of", copy.deepcopy(dict(cfg)))
    return integrator


def integrator_config(integrator: Integrator) -> dict:
    """The config node of ``integrator``: the node ``make_integrator`` built it of (its coefficients as that file
    wrote them, so its config hash is the command line's), else its family, its tableau's numbers
    (``tableau_config``) and its options."""
    built_of = getattr(integrator, "_built_of", None)
    if built_of is not None:
        return copy.deepcopy(built_of)
    options = {f.name: getattr(integrator, f.name) for f in dataclasses.fields(integrator)
               if f.name not in ("name", "tableau")}
    return {"name": integrator.name, "family": integrator.family, "parameters": {},
            "tableau": tableau_config(integrator.tableau), **options}


def tableau_config(tableau) -> dict:
    """A tableau as the ``tableau`` mapping its family's ``from_config`` reads back to an equal one: each field,
    arrays as nested lists of numbers; a tableau with fields derived from others has its own ``config()``."""
    if hasattr(tableau, "config"):
        return tableau.config()
    as_plain = lambda v: v.tolist() if hasattr(v, "tolist") else dict(v) if isinstance(v, Mapping) else v
    return {f.name: as_plain(getattr(tableau, f.name)) for f in dataclasses.fields(tableau)}


__all__ = ["FAMILIES", "Integrator", "integrator_config", "make_integrator", "tableau_config"]
