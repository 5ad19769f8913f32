"""Hydra composition, validation before compute, and construction of the run's pieces.

Every refusal is a ``ConfigError`` whose text is one line: the key, the bad value, what is allowed.
The CLI and the figure pipeline both come through ``compose``/``build``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Iterable, Sequence

from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.core.global_hydra import GlobalHydra
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sgi_run.core.errors import ConfigError
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import observable_functions
from sgi_run.integrators import Integrator, make_integrator
from sgi_run.systems import SYSTEMS, CanonicalSystem

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("system", "integrator", "plan", "executor")
EXECUTORS = ("local",)
PROGRESS = ("auto", "on", "off")
# cache: reuse a finished run (a stale one, computed by other numerics code, with a warning) |
# refresh_stale (recompute stale runs) | off (always recompute).
CACHE_POLICIES = ("reuse", "refresh_stale", "off")
# plan.kind: an ensemble (the default; plan/default.yaml has no kind key) or a convergence study.
PLAN_KINDS = ("ensemble", "convergence")
# Keys that change where and how a run is shown, never its numbers: left out of the config hash.
_NOT_HASHED = ("hydra", "progress", "output_root", "executor", "cache")


def group_options(group: str) -> list[str]:
    return sorted(p.stem for p in (CONF_DIR / group).glob("*.yaml"))


# --- overrides ---------------------------------------------------------------------------------
def _parsed(overrides: Sequence[str]):
    try:
        return OverridesParser.create().parse_overrides(list(overrides))
    except HydraException as err:
        raise ConfigError("override", " ".join(overrides), f"key=value overrides ({str(err).splitlines()[0]})") from None


def _values(override) -> list:
    if override.is_sweep_override():
        return list(override.sweep_string_iterator())
    return [override.value()]


def expand_sweeps(overrides: Sequence[str]) -> list[list[str]]:
    """All combinations a multirun over ``overrides`` would launch, as plain override lists."""
    import itertools
    choices = []
    for o in _parsed(overrides):
        prefix = "+" if o.is_add() else ("~" if o.is_delete() else "")
        choices.append([f"{prefix}{o.key_or_group}={v}" for v in _values(o)])
    return [list(c) for c in itertools.product(*choices)]


def check_overrides(overrides: Sequence[str]) -> None:
    """Refuse unknown group options and unknown keys, with the allowed ones named."""
    parsed = [o for o in _parsed(overrides) if not o.key_or_group.startswith("hydra")]
    group_choices = []
    for o in parsed:
        if o.key_or_group in GROUPS:
            allowed = group_options(o.key_or_group)
            for v in _values(o):
                if v not in allowed:
                    raise ConfigError(o.key_or_group, v, f"one of {allowed}")
            group_choices.append(f"{o.key_or_group}={_values(o)[0]}")
    keyed = [o for o in parsed if o.key_or_group not in GROUPS and not o.is_add()]
    if not keyed:
        return
    base = _hydra_compose(group_choices)
    for o in keyed:
        key = o.key_or_group
        if OmegaConf.select(base, key, default=_ABSENT) is _ABSENT:
            parent_key, _, leaf = key.rpartition(".")
            parent = OmegaConf.select(base, parent_key) if parent_key else base
            known = sorted(parent.keys()) if isinstance(parent, DictConfig) else []
            where = f"'{parent_key}'" if parent_key else "the top level"
            raise ConfigError(key, _values(o)[0], f"a known key; {where} has {known}")


_ABSENT = object()


def _hydra_compose(overrides: Sequence[str]) -> DictConfig:
    if GlobalHydra.instance().is_initialized():
        return hydra_compose("config", overrides=list(overrides))
    with initialize_config_dir(str(CONF_DIR), version_base=None):
        return hydra_compose("config", overrides=list(overrides))


def compose(overrides: Iterable[str] = ()) -> DictConfig:
    """The run config for ``overrides`` (as on the command line), validated; nothing is computed."""
    overrides = list(overrides)
    check_overrides(overrides)
    try:
        cfg = _hydra_compose(overrides)
    except (HydraException, OmegaConfBaseException) as err:
        raise ConfigError("override", " ".join(overrides), str(err).splitlines()[0]) from None
    build(cfg)
    return cfg


# --- construction --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Setup:
    system: CanonicalSystem
    integrator: Integrator
    plan: Plan | ConvergencePlan   # a ConvergencePlan when plan.kind = convergence


def _container(node):
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node


def build_system(cfg) -> CanonicalSystem:
    cfg = dict(_container(cfg))
    name = cfg.pop("name", None)
    if name not in SYSTEMS:
        raise ConfigError("system.name", name, f"one of {sorted(SYSTEMS)}")
    cls = SYSTEMS[name]
    unknown = sorted(set(cfg) - set(cls.parameter_names()))
    if unknown:
        raise ConfigError(f"system.{unknown[0]}", cfg[unknown[0]], f"a parameter of {name}: {cls.parameter_names()}")
    # `system.q0=2` arrives as an int; a float parameter must stay a float, or the initial state
    # becomes an integer array that jax.jacfwd (Newton) refuses.
    declared = {f.name: f.type for f in dataclasses.fields(cls)}
    cfg = {k: float(v) if declared[k] in ("float", float) and isinstance(v, int) and not isinstance(v, bool) else v
           for k, v in cfg.items()}
    try:
        system = cls(**cfg)
        system.check()
    except ConfigError as err:
        raise err.under("system") from None
    return system


def build(cfg: DictConfig) -> Setup:
    """System, integrator and plan from a composed config; raises ConfigError before any compute."""
    system = build_system(cfg.system)
    try:
        integrator = make_integrator(_container(cfg.integrator))
    except TypeError as err:
        raise ConfigError("integrator", cfg.integrator.get("name"), f"known integrator options ({err})") from None
    integrator.check_fits(system)
    kind = cfg.plan.get("kind", "ensemble")
    if kind not in PLAN_KINDS:
        raise ConfigError("plan.kind", kind, f"one of {list(PLAN_KINDS)}")
    if kind == "convergence":
        plan = ConvergencePlan.from_mapping(_container(cfg.plan)).fitted_to(system, integrator)
        _check_run_options(cfg)
        return Setup(system, integrator, plan)
    plan = Plan.from_mapping(_container(cfg.plan))
    if integrator.noise_kind == "three_point":
        # The three-point law is not a Brownian path: there is no finer grid to sum, nothing to clip.
        if plan.brownian_refine != 1:
            raise ConfigError("plan.brownian_refine", plan.brownian_refine,
                              f"1 with the weak integrator {integrator.name} (three-point increments)")
        if plan.truncate is not None:
            raise ConfigError("plan.truncate", plan.truncate,
                              f"null with the weak integrator {integrator.name} (three-point increments)")
    observable_functions(system, plan.observables)   # refuses an unknown observable name
    _check_run_options(cfg)
    return Setup(system, integrator, plan)


def _check_run_options(cfg: DictConfig) -> None:
    if cfg.executor.name not in EXECUTORS:
        raise ConfigError("executor.name", cfg.executor.name, f"one of {list(EXECUTORS)}")
    if cfg.get("progress", "auto") not in PROGRESS:
        raise ConfigError("progress", cfg.progress, f"one of {list(PROGRESS)}")
    if cfg.get("cache", "reuse") not in CACHE_POLICIES:
        raise ConfigError("cache", cfg.cache, f"one of {list(CACHE_POLICIES)}")


# --- identity of a run -----------------------------------------------------------------------------
# Optional outputs added after runs existed: left out of the hash while unset (null), so adding them
# did not change the identity of the runs made before.
_HASHED_WHEN_SET = {"plan": ("time_average",)}


def config_hash(cfg) -> str:
    """12 hex digits identifying the numbers a config produces (display-only keys left out)."""
    content = {k: _container(cfg[k]) for k in cfg if k not in _NOT_HASHED}
    for group, keys in _HASHED_WHEN_SET.items():
        for key in keys:
            if isinstance(content.get(group), dict) and content[group].get(key, 0) is None:
                del content[group][key]
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_dir_for(cfg) -> Path:
    return Path(cfg.output_root) / f"{cfg.system.name}-{cfg.integrator.name}" / config_hash(cfg)


def register_resolvers() -> None:
    """``${sgi_hash:}`` in the Hydra run-dir pattern: the config hash of the job's config."""
    if not OmegaConf.has_resolver("sgi_hash"):
        OmegaConf.register_new_resolver("sgi_hash", lambda *, _root_: config_hash(_root_))
