"""Integrators: pure JAX one-step maps grouped by family; each method is a tableau in its YAML.

``make_integrator(cfg)`` builds one from an ``integrator`` config node: ``family`` picks the
implementation, ``tableau`` holds the coefficients (numbers or arithmetic strings over
``parameters``), and the remaining keys are the family's options (Newton tolerance, ...).
"""
from __future__ import annotations

import math
from typing import Any
from collections.abc import Mapping

from sgi_run.core.errors import ConfigError
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
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)):
            raise ConfigError(f"integrator.parameters.{name}", value, "a finite number")
    if not isinstance(cfg.get("tableau"), Mapping):
        raise ConfigError("integrator.tableau", cfg.get("tableau"), f"the {family} coefficients, a mapping")
    tableau = tableau_cls.from_config(cfg["tableau"], dict(params))
    options = {k: v for k, v in cfg.items() if k not in ("name", "family", "tableau", "parameters")}
    return cls(name=cfg["name"], tableau=tableau, **options)


__all__ = ["FAMILIES", "Integrator", "make_integrator"]
