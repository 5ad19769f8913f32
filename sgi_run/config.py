"""Hydra composition, validation before compute, and construction of the run's pieces.

Every refusal is a ``ConfigError`` whose text is one line: the key, the bad value, what is allowed.
The CLI and the figure pipeline both come through ``compose``/``build``.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import math
import os
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
from sgi_run.engine import device, executor
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import Plan
from sgi_run.engine.simulate import fit_shard_size, format_bytes, memory_estimate, observable_functions
from sgi_run.integrators import Integrator, make_integrator
from sgi_run.systems import SYSTEMS, System

CONF_DIR = Path(__file__).resolve().parent.parent / "conf"
GROUPS = ("system", "integrator", "plan", "executor")
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


def check_hydra_groups(overrides: Sequence[str]) -> None:
    """Refuse an unknown option of one of Hydra's groups (``hydra/launcher=jolib``), naming those installed."""
    for o in _parsed(overrides):
        if o.key_or_group.startswith("hydra/"):
            allowed = hydra_group_options(o.key_or_group)
            for v in _values(o):
                if allowed and v not in allowed:
                    raise ConfigError(o.key_or_group, v, f"one of {allowed}")


def hydra_group_options(group: str) -> list[str]:
    """The options of one of Hydra's own groups (``hydra/launcher``: basic, joblib, submitit_slurm, ...),
    installed plugins' and conf/'s own (conf/hydra/launcher/slurm_sweep.yaml) included; empty for a
    group Hydra does not have."""
    from hydra.core.config_store import ConfigStore
    from hydra.core.plugins import Plugins

    Plugins.instance()      # discovers the installed plugins, which register their configs
    try:
        registered = [name.removesuffix(".yaml") for name in ConfigStore.instance().list(group)]
    except OSError:
        registered = []
    return sorted(set(registered) | set(group_options(group))) if registered else []


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
        if not o.is_sweep_override():
            # As typed: a value rebuilt from its parse loses its quotes ('1' became 1, null 'None').
            choices.append([o.input_line])
            continue
        prefix = "+" if o.is_add() else ("~" if o.is_delete() else "")
        choices.append([f"{prefix}{o.key_or_group}={v}" for v in _values(o)])
    return [list(c) for c in itertools.product(*choices)]


# Set by the group option chosen (``integrator=dirk``), never by hand: results are filed under the names,
# and plan.kind picks the keys a plan has.
_SET_BY_GROUP = {"system.name": "system", "integrator.name": "integrator", "integrator.family": "integrator",
                 "plan.kind": "plan"}


def check_overrides(overrides: Sequence[str]) -> None:
    """Refuse unknown group options, unknown keys (also ``+key`` additions) and removed keys, with the
    allowed ones named."""
    check_hydra_groups(overrides)
    parsed = [o for o in _parsed(overrides) if not o.key_or_group.startswith("hydra")]
    for o in parsed:
        if o.is_delete():
            raise ConfigError(o.key_or_group, "~", "a value: keys cannot be removed (set them instead)")
        if o.key_or_group in _SET_BY_GROUP:
            group = _SET_BY_GROUP[o.key_or_group]
            raise ConfigError(o.key_or_group, _values(o)[0],
                              f"set by the {group} group: choose {group}=<option>, one of {group_options(group)}")
    group_choices = []
    for o in parsed:
        if o.key_or_group in GROUPS:
            allowed = group_options(o.key_or_group)
            for v in _values(o):
                if v not in allowed:
                    raise ConfigError(o.key_or_group, v, f"one of {allowed}")
            group_choices.append(f"{o.key_or_group}={_values(o)[0]}")
    # An added key (+key=value) is one no config has: as unknown as a mistyped one.
    keyed = [o for o in parsed if o.key_or_group not in GROUPS]
    if not keyed:
        return
    base = _composed_groups(tuple(group_choices))
    for o in keyed:
        key = o.key_or_group
        if o.is_add() and not o.is_force_add() or OmegaConf.select(base, key, default=_ABSENT) is _ABSENT:
            parent_key, _, leaf = key.rpartition(".")
            parent = OmegaConf.select(base, parent_key) if parent_key else base
            known = sorted(parent.keys()) if isinstance(parent, DictConfig) else []
            where = f"'{parent_key}'" if parent_key else "the top level"
            raise ConfigError(key, _values(o)[0], f"a known key; {where} has {known}")


_ABSENT = object()


@functools.lru_cache(maxsize=64)
def _composed_groups(group_choices: tuple[str, ...]) -> DictConfig:
    """The config of these group options alone, where keys are looked up (read only). Cached: the
    conf/ files do not change while a process runs, and a Hydra compose costs ~60 ms."""
    return _hydra_compose(group_choices)


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
        build(cfg)
    except (HydraException, OmegaConfBaseException) as err:    # e.g. an interpolation that cannot resolve
        raise ConfigError("override", " ".join(overrides), str(err).splitlines()[0]) from None
    return cfg


# --- construction --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class Setup:
    system: System
    integrator: Integrator
    plan: Plan | ConvergencePlan   # a ConvergencePlan when plan.kind = convergence


def plain(node):
    """A config node as plain Python (dicts, lists), interpolations resolved; anything else as it is."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node


def build_system(cfg) -> System:
    cfg = dict(plain(cfg))
    name = cfg.pop("name", None)
    if name not in SYSTEMS:
        raise ConfigError("system.name", name, f"one of {sorted(SYSTEMS)}")
    cls = SYSTEMS[name]
    unknown = sorted(set(cfg) - set(cls.parameter_names()))
    if unknown:
        raise ConfigError(f"system.{unknown[0]}", cfg[unknown[0]], f"a parameter of {name}: {cls.parameter_names()}")
    declared = {f.name: f.type for f in dataclasses.fields(cls)}
    cfg = {k: _typed(f"system.{k}", v, declared[k]) for k, v in cfg.items()}
    try:
        system = cls(**cfg)
        system.check()
    except ConfigError as err:
        raise err.under("system") from None
    return system


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


# Parameter types a system may declare -> (accepts, converts, what is allowed). Integers become floats:
# `system.q0=2` arrives as an int, and an integer initial state is one jax.jacfwd (Newton) refuses.
_PARAMETER_TYPES = {
    "float": (_finite, float, "a finite number"),
    "float | tuple[float, ...]": (
        lambda v: _finite(v) or (isinstance(v, (list, tuple)) and len(v) > 0 and all(_finite(x) for x in v)),
        lambda v: float(v) if _finite(v) else tuple(float(x) for x in v),
        "a finite number, or a list of finite numbers (one per coordinate)"),
    "tuple[tuple[float, ...], ...] | None": (
        lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0 and all(
            isinstance(row, (list, tuple)) and len(row) > 0 and all(_finite(x) for x in row) for row in v)),
        lambda v: None if v is None else tuple(tuple(float(x) for x in row) for row in v),
        "a matrix as a list of rows of finite numbers, or null"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), int, "an integer"),
    "bool": (lambda v: isinstance(v, bool), bool, "true or false"),
    "str": (lambda v: isinstance(v, str), str, "a string"),
}


def _typed(key: str, value, declared):
    """A system parameter checked against its declared type (before the system's own domain checks)."""
    accepts, convert, allowed = _PARAMETER_TYPES[declared if isinstance(declared, str) else declared.__name__]
    if not accepts(value):
        raise ConfigError(key, value, allowed)
    return convert(value)


def _make_integrator(cfg) -> Integrator:
    """The integrator of a config node; a malformed tableau or option is one ConfigError line."""
    family = cfg.get("family") if isinstance(cfg, dict) else None
    try:
        return make_integrator(cfg)
    except ConfigError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ConfigError("integrator", cfg.get("name") if isinstance(cfg, dict) else cfg,
                          f"a well-formed {family} tableau and known options ({detail})") from None


def build(cfg: DictConfig) -> Setup:
    """System, integrator and plan from a composed config; raises ConfigError before any compute."""
    system = build_system(cfg.system)
    integrator = _make_integrator(plain(cfg.integrator))
    integrator.check_fits(system)
    kind = cfg.plan.get("kind", "ensemble")
    if kind not in PLAN_KINDS:
        raise ConfigError("plan.kind", kind, f"one of {list(PLAN_KINDS)}")
    if kind == "convergence":
        plan = fit_shard_size(system, integrator, ConvergencePlan.from_mapping(plain(cfg.plan)).fitted_to(system, integrator))
        _check_memory(memory_estimate(system, integrator, plan), plan)
        _check_run_options(cfg)
        return Setup(system, integrator, plan)
    plan = Plan.from_mapping(plain(cfg.plan))
    if integrator.noise_kind == "three_point":
        # The three-point law is not a Brownian path: there is no finer grid to sum, nothing to clip.
        if plan.brownian_refine != 1:
            raise ConfigError("plan.brownian_refine", plan.brownian_refine,
                              f"1 with the weak integrator {integrator.name} (three-point increments)")
        if plan.truncate is not None:
            raise ConfigError("plan.truncate", plan.truncate,
                              f"null with the weak integrator {integrator.name} (three-point increments)")
    observable_functions(system, plan.observables)   # refuses an unknown observable name
    plan = fit_shard_size(system, integrator, plan)
    _check_memory(memory_estimate(system, integrator, plan), plan)
    _check_run_options(cfg)
    return Setup(system, integrator, plan)


# --- what fits ---------------------------------------------------------------------------------------
MEMORY_LIMIT_ENV = "SGI_RUN_MEMORY_LIMIT"   # bytes, or e.g. 4GiB: for tests and shared machines
_UNITS = {"": 1, "B": 1, "KIB": 2**10, "MIB": 2**20, "GIB": 2**30, "TIB": 2**40, "KB": 10**3, "MB": 10**6,
          "GB": 10**9, "TB": 10**12}


def memory_limit() -> tuple[int, str]:
    """(bytes a run may use, where that number comes from): $SGI_RUN_MEMORY_LIMIT, else the memory
    this machine has available now."""
    text = os.environ.get(MEMORY_LIMIT_ENV, "").strip()
    if text:
        number = text.rstrip("BKMGTibkmgt ")
        unit = text[len(number):].strip().upper()
        try:
            return int(float(number) * _UNITS[unit]), MEMORY_LIMIT_ENV
        except (ValueError, KeyError):
            raise ConfigError(MEMORY_LIMIT_ENV, text, "a number of bytes, e.g. 4GiB") from None
    try:
        with open("/proc/meminfo") as f:
            available = next(int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:"))
        return available, "available on this machine"
    except (OSError, StopIteration, ValueError):
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "on this machine"


_MEMORY_ADVICE = {
    "plan.shard_size": "fewer paths per shard (a smaller plan.shard_size, or more plan.shards)",
    "plan.shards": "fewer paths per shard (more plan.shards)",
    "plan.output_dt": "fewer output times (a larger plan.output_dt or a shorter plan.T) or fewer shards",
    "plan.keep_paths": "fewer kept paths (plan.keep_paths) or output times",
    "plan.snapshots": "fewer snapshot times (plan.snapshots) or paths",
    "plan.time_average": "fewer paths",
    "plan.paths": "fewer plan.paths, or plan.bootstrap=0 (every path's final errors are kept for the bootstrap)",
}


def _check_memory(estimate, plan: Plan | ConvergencePlan) -> None:
    # A shard's size is set by plan.shards when it is a number, else by plan.shard_size.
    shard_key = "plan.shard_size" if plan.shards == "auto" else "plan.shards"
    on_device, free = estimate.parts["plan.shard_size"], device.free_bytes()
    if free is not None and on_device > free:
        raise ConfigError(shard_key, getattr(plan, shard_key.split(".", 1)[1]),
                          f"a shard that fits on the device: one needs {format_bytes(on_device)} and "
                          f"{device.describe()} has {format_bytes(free)} free; use {_MEMORY_ADVICE[shard_key]}")
    limit, source = memory_limit()
    if estimate.total <= limit:
        return
    key = shard_key if estimate.largest == "plan.shard_size" else estimate.largest
    value = getattr(plan, key.split(".", 1)[1])
    raise ConfigError(key, value, f"a run that fits in memory: this one needs {format_bytes(estimate.total)} "
                      f"({format_bytes(estimate.parts[estimate.largest])} for {key}) and "
                      f"{format_bytes(limit)} is {source}; use {_MEMORY_ADVICE[key]}")


def _check_run_options(cfg: DictConfig) -> None:
    output_root = cfg.get("output_root")
    if not (isinstance(output_root, str) and output_root.strip()):
        raise ConfigError("output_root", output_root, "a directory (a non-empty path)")
    executor.spec_of(plain(cfg.executor))
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
    content = {k: plain(cfg[k]) for k in cfg if k not in _NOT_HASHED}
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
