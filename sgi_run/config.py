"""Validation before compute, and construction of the run's pieces (system, integrator, plan) from a composed
config; the run's config nodes and identity (``config_hash``).

Every refusal is a ``ConfigError`` whose text is one line: the key, the bad value, what is allowed.
The CLI and the figure pipeline both come through ``compose``/``build``. Finding and composing the configs
(the search path, the overrides, the groups) is ``sgi_run.composition``'s; its names used elsewhere are
importable from here too.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from collections.abc import Iterable, Mapping, Sequence

from hydra.errors import HydraException
from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import OmegaConfBaseException

from sgi_run import provenance
from sgi_run.composition import (ABSENT, GROUPS, SET_BY_GROUP, ConfigSource, check_overrides, composed_groups,
                                 group_options, hydra_compose, parsed_overrides, typed_value)
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import choice, text
from sgi_run.core.solvers import on_fail_rule
from sgi_run.engine import budget, executor
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import Plan, resolve_auto_keys
from sgi_run.engine.simulate import observable_functions
from sgi_run.integrators import Integrator, integrator_config, make_integrator
from sgi_run.integrators.claims import KEY as CLAIMS_KEY, split_claims
from sgi_run.system_parameters import check_parameter_types, typed
from sgi_run.systems import BUILT_IN, SYSTEMS, System, registered_name

# Taken from here by the CLI, the figure pipeline and the tests, as before composition was a module of its own.
from sgi_run.bundled import CONF_DIR  # noqa: F401
from sgi_run.composition import check_hydra_groups, expand_sweeps, hydra_group_options, hydra_node  # noqa: F401

PROGRESS = ("auto", "on", "off")
# cache: reuse a finished run (a stale one, computed by other numerics code, with a warning) |
# refresh_stale (recompute stale runs) | off (always recompute).
CACHE_POLICIES = ("reuse", "refresh_stale", "off")
# plan.kind: an ensemble (the default; plan/default.yaml has no kind key) or a convergence study.
PLAN_KINDS = ("ensemble", "convergence")
# Keys that change where and how a run is shown, never its numbers: left out of the config hash.
_NOT_HASHED = ("hydra", "progress", "output_root", "executor", "cache")


def compose(overrides: Iterable[str] = (), source: ConfigSource = ConfigSource()) -> DictConfig:
    """The run config for ``overrides`` (as on the command line) from ``source``, validated; nothing is
    computed. Raises ``ConfigError`` (one line: the key, the value, what is allowed) for bad input.
    ``sgi_run.compose`` is this, with the example, for a config directory of one's own."""
    return compose_setup(overrides, source)[0]


@jax_setup.scope()    # its validation builds the system: in float64, in any caller's process
def compose_setup(overrides: Iterable[str] = (), source: ConfigSource = ConfigSource()) -> tuple[DictConfig, BuiltConfig]:
    """``compose``'s validated config and the ``BuiltConfig`` its validation built (system, integrator, plan), for
    the run to use as it is (``runner.run(cfg, setup=setup)``): a run is built once. Its plan's
    ``shard_size: auto`` is settled against the memory available now, at composition: the run keeps that plan."""
    overrides = list(overrides)
    check_overrides(overrides, source)
    try:
        cfg = hydra_compose(overrides, source)
        try:
            setup = build(cfg)
        except ConfigError as err:
            raise _blamed_on_a_typed_key(err, cfg, overrides, source) from None
    except (HydraException, OmegaConfBaseException) as err:    # e.g. an interpolation that cannot resolve
        key = getattr(err, "full_key", None)
        value = typed_value(overrides, key) if key else None
        if value is None:
            key, value = "override", " ".join(overrides)
        raise ConfigError(key, value, str(err).splitlines()[0]) from None
    return cfg, setup


def _blamed_on_a_typed_key(err: ConfigError, cfg: DictConfig, overrides: Sequence[str],
                           source: ConfigSource) -> ConfigError:
    """A refusal of a key the user did not type (a default: plan.T, the integrator) put on the typed
    override without which the config builds: only a value the user gave is refused. Said as the default
    it contradicts where that is a config key of its own, else (a tableau the typed coefficient is part of)
    in the original's words. Left as it is where no single override is to blame."""
    typed = {o.key_or_group: o for o in parsed_overrides(overrides) if not o.key_or_group.startswith("hydra")}
    if err.key in typed:
        return err
    # A typed value before a group choice: in plan=convergence plan.T=0.1, T is what the study's steps miss.
    suspects = sorted(typed.values(), key=lambda o: o.key_or_group in GROUPS)
    culprit = next((o for o in suspects if _builds([x for x in overrides if x != o.input_line], source)), None)
    if culprit is None:
        return err
    key, value = culprit.key_or_group, culprit.value()
    default = OmegaConf.select(cfg, err.key, default=ABSENT) is not ABSENT and not key.startswith(f"{err.key}.")
    if not default:
        return ConfigError(key, value, err.allowed)
    if err.key == "integrator":
        remedy = f"choose integrator=one of {_integrators_that_fit(build_system(cfg.system), source)}"
    else:
        remedy = f"set {err.key} too"
    return ConfigError(key, value, f"one that fits the default {err.key}={err.value!r} ({err.allowed}), or {remedy}")


def _builds(overrides: Sequence[str], source: ConfigSource) -> bool:
    try:
        check_overrides(overrides, source)
        build(hydra_compose(overrides, source))
    except (ConfigError, HydraException, OmegaConfBaseException):
        return False
    return True


def _integrators_that_fit(system: System, source: ConfigSource) -> list[str]:
    """The integrator options (as configured) that fit ``system``."""
    fitting = []
    for option in group_options("integrator", source):
        try:
            node = as_python(composed_groups((f"integrator={option}",), source).integrator)
            build_integrator(node).check_fits(system)
        except ConfigError:
            continue
        fitting.append(option)
    return fitting


# --- construction --------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class BuiltConfig:
    system: System
    integrator: Integrator
    plan: Plan | ConvergencePlan   # a ConvergencePlan when plan.kind = convergence
    # A study's fine reference method (plan.reference_method); None: the study's own integrator.
    reference_integrator: Integrator | None = None


def as_python(node):
    """A config node as plain Python (dicts, lists), interpolations resolved; anything else as it is."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node


def build_system(cfg) -> System:
    cfg = dict(as_python(cfg))
    name = choice("system.name", cfg.pop("name", None), SYSTEMS, f"one of {sorted(SYSTEMS)}")
    cls = SYSTEMS[name]
    declared = check_parameter_types(cls)
    cfg = cls.settle_defaults(cfg)
    try:
        cfg = cls.gather_parameters(cfg)
    except ConfigError as err:
        raise err.under("system") from None
    unknown = sorted(set(cfg) - set(cls.parameter_names()))
    if unknown:
        raise ConfigError(f"system.{unknown[0]}", cfg[unknown[0]], f"a parameter of {name}: {cls.parameter_names()}")
    cfg = {k: typed(f"system.{cls.config_key(k)}", v, declared[k]) for k, v in cfg.items()}
    try:
        system = cls(**cfg)
        system.check()
    except ConfigError as err:
        raise err.under("system") from None
    return system


def build_integrator(cfg) -> Integrator:
    """The integrator of a config node; a malformed tableau or option is one ConfigError line. Its ``claims``
    (what sgi-bench checks) are validated and left out: they describe the method, never change it."""
    if isinstance(cfg, Mapping):
        cfg = split_claims(cfg)[0]
    family = cfg.get("family") if isinstance(cfg, dict) else None
    try:
        return make_integrator(cfg)
    except ConfigError:
        raise
    except (TypeError, ValueError, KeyError, IndexError, AttributeError, OverflowError) as err:
        detail = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ConfigError("integrator", cfg.get("name") if isinstance(cfg, dict) else cfg,
                          f"a well-formed {family} tableau and known options ({detail})") from None


def build(cfg: DictConfig) -> BuiltConfig:
    """System, integrator and plan from a composed config; raises ConfigError before any compute."""
    system = build_system(cfg.system)
    integrator = build_integrator(as_python(cfg.integrator))
    integrator.check_fits(system)
    reference = build_reference_integrator(cfg.plan)
    plan = budget.fit_to_memory(system, integrator, _plan_fitted_to(cfg.plan, system, integrator, reference),
                                reference)
    _check_run_options(cfg)
    return BuiltConfig(system, integrator, plan, reference)


def reference_integrator_node(name) -> dict:
    """The integrator option ``name`` (conf/integrator/<name>.yaml, with its own settings) as a config node, its
    ``claims`` (what it declares of itself, not how it runs) left out; refused, naming plan.reference_method, where
    ``name`` is not an integrator option."""
    try:
        node = group_node("integrator", name, {})
    except ConfigError as err:
        raise ConfigError("plan.reference_method", name, f"null or an integrator option: {err.allowed}") from None
    node.pop("claims", None)
    return node


def build_reference_integrator(plan_node) -> Integrator | None:
    """A convergence study's fine reference method (``plan.reference_method``), or None (its own integrator)."""
    if plan_node.get("kind", "ensemble") != "convergence" or plan_node.get("reference_method") is None:
        return None
    name = text("plan.reference_method", plan_node.get("reference_method"), "null or the name of an integrator option")
    try:
        return build_integrator(reference_integrator_node(name))
    except ConfigError as err:
        raise ConfigError("plan.reference_method", name, err.allowed) from None


def _plan_fitted_to(node, system, integrator, reference_integrator=None) -> Plan | ConvergencePlan:
    """The plan of its config node (an ensemble, or a convergence study by ``plan.kind``), refused where the
    system and the integrator (and a study's reference method) cannot run it."""
    kind = choice("plan.kind", node.get("kind", "ensemble"), PLAN_KINDS)
    if kind == "convergence":
        return ConvergencePlan.from_mapping(as_python(node)).fitted_to(system, integrator, reference_integrator)
    plan = Plan.from_mapping(as_python(node))
    if integrator.noise_kind == "three_point":
        # The three-point law is not a Brownian path: there is no finer grid to sum, nothing to clip.
        if plan.brownian_refine != 1:
            raise ConfigError("plan.brownian_refine", plan.brownian_refine,
                              f"1 with the weak integrator {integrator.name} (three-point increments)")
        if plan.truncate is not None:
            raise ConfigError("plan.truncate", plan.truncate,
                              f"null with the weak integrator {integrator.name} (three-point increments)")
    observable_functions(system, plan.observables)   # refuses an unknown observable name
    return plan


# The longest name of a file or directory the file systems take (Linux's NAME_MAX: ext4, xfs, btrfs, tmpfs, NFS).
NAME_MAX = 255


def _check_run_options(cfg: DictConfig) -> None:
    output_root = text("output_root", cfg.get("output_root"), "a directory (a non-empty path)")
    longest = max(len(name.encode("utf-8", "surrogateescape")) for name in Path(output_root).parts)
    if longest > NAME_MAX:      # else the first look at the run directory fails: "File name too long"
        raise ConfigError("output_root", output_root, f"a directory whose names are each at most {NAME_MAX} bytes, "
                          f"the file system's limit (one has {longest})")
    executor.spec_of(as_python(cfg.executor))
    choice("progress", cfg.get("progress", "auto"), PROGRESS)
    choice("cache", cfg.get("cache", "reuse"), CACHE_POLICIES)


# --- the run's pieces as config nodes: what sgi_run's Python API (sgi_run.api) runs ---------------------------
def group_node(group: str, option: str, changes: Mapping, source: ConfigSource = ConfigSource()) -> dict:
    """The option ``option`` of a config group (conf/<group>/<option>.yaml) as plain Python, its keys changed
    by ``changes``: ``group=<option> <group>.<key>=<value> ...`` on the command line, refused alike (an unknown
    option or key, a key the group's choice sets). The values are checked where the node is built."""
    allowed = group_options(group, source)
    if option not in allowed:
        raise ConfigError(group, option, f"one of {allowed}")
    node = as_python(composed_groups((f"{group}={option}",), source)[group])
    for key, value in changes.items():
        if f"{group}.{key}" in SET_BY_GROUP:
            raise ConfigError(f"{group}.{key}", value, f"set by the {group} group: choose {group}=<option>, "
                                                       f"one of {allowed}")
        if key not in node:
            raise ConfigError(f"{group}.{key}", value, f"a known key; '{group}' has {sorted(node)}")
    return node | {key: config_value(value) for key, value in changes.items()}


def config_value(value):
    """A value as a config holds it: tuples and arrays as lists, numpy scalars as Python numbers."""
    if isinstance(value, Mapping):
        return {k: config_value(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [config_value(v) for v in value]
    return value.tolist() if hasattr(value, "tolist") else value


def system_node(system: System) -> dict:
    """A system object as the ``system`` node that ``build_system`` builds it back of: the name its class is
    registered under (``systems.register``), each field under its config key, a formula system's named
    parameters as keys of their own."""
    name = registered_name(type(system))
    if name is None:
        raise ConfigError("system", type(system).__name__,
                          "an instance of a registered class: sgi_run.register_system(<name>, "
                          f"{type(system).__name__}) first, or one of {sorted(SYSTEMS)}")
    node = {"name": name}
    for field in dataclasses.fields(system):
        value = getattr(system, field.name)
        if field.name == "parameters" and system.open_parameters:
            node |= dict(value)
        else:
            node[system.config_key(field.name)] = value
    return config_value(node)


def plan_node(plan: Plan | ConvergencePlan) -> dict:
    """A plan object as its ``plan`` node (a convergence plan's ``kind`` included, an ensemble's left out as
    plan/default.yaml leaves it)."""
    node = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    return config_value(node)


def run_config(system: System, integrator: Integrator, plan: Plan | ConvergencePlan, executor: dict,
               **options) -> DictConfig:
    """The run config of these objects: config.yaml's top-level keys (``output_root``, ``progress``,
    ``cache``) changed by ``options``, its groups' nodes those of the objects. Not validated (``build`` is)."""
    base = as_python(composed_groups(()))
    for key, value in options.items():
        if key not in base or key in GROUPS:
            raise ConfigError(key, value, f"a run option: one of {sorted(set(base) - set(GROUPS))}")
    return OmegaConf.create(base | options | {"system": system_node(system), "integrator": integrator_config(integrator),
                                              "plan": plan_node(plan), "executor": executor})


# --- identity of a run -----------------------------------------------------------------------------
# Optional outputs added after runs existed: left out of the hash while unset (null), so adding them
# did not change the identity of the runs made before.
_HASHED_WHEN_SET = {"plan": ("time_average", "reference_method", "weak_observable"), "integrator": ("iterations",)}


def config_hash(cfg) -> str:
    """12 hex digits identifying the numbers a config produces (display-only keys left out)."""
    content = {k: as_python(cfg[k]) for k in cfg if k not in _NOT_HASHED}
    # auto as the number it settles to
    if isinstance(content.get("plan"), dict) and "kind" not in content["plan"]:
        content["plan"] = resolve_auto_keys(content["plan"])
    if isinstance(content.get("system"), dict) and content["system"].get("name") in SYSTEMS:
        name = content["system"]["name"]
        content["system"] = SYSTEMS[name].settle_defaults(content["system"])
        if name not in BUILT_IN:    # a class of one's own: the numerics digest does not cover its code, this does
            content["system_code"] = provenance.class_digest(SYSTEMS[name])
    if isinstance(content.get("integrator"), dict):     # what the method claims, not what it computes
        content["integrator"].pop(CLAIMS_KEY, None)
    if isinstance(content.get("integrator"), dict) and "on_fail" in content["integrator"]:
        content["integrator"]["on_fail"] = on_fail_rule(content["integrator"]["on_fail"])
    for group, keys in _HASHED_WHEN_SET.items():
        for key in keys:
            if isinstance(content.get(group), dict) and content[group].get(key, 0) is None:
                del content[group][key]
    reference_method = content["plan"].get("reference_method") if isinstance(content.get("plan"), dict) else None
    if isinstance(reference_method, str):
        # Its settings are the reference's numbers: editing conf/integrator/<name>.yaml re-runs the study.
        try:
            content["reference_integrator"] = reference_integrator_node(reference_method)
        except ConfigError:     # refused by build; named as it is
            content["reference_integrator"] = reference_method
    return hashlib.sha256(json.dumps(content, sort_keys=True, default=str).encode()).hexdigest()[:12]


def run_dir_for(cfg) -> Path:
    return Path(cfg.output_root) / f"{cfg.system.name}-{cfg.integrator.name}" / config_hash(cfg)


def register_resolvers() -> None:
    """``${sgi_hash:}`` in the Hydra run-dir pattern: the config hash of the job's config."""
    if not OmegaConf.has_resolver("sgi_hash"):
        OmegaConf.register_new_resolver("sgi_hash", lambda *, _root_: config_hash(_root_))
