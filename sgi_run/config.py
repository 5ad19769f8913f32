"""Hydra composition, validation before compute, and construction of the run's pieces.

Every refusal is a ``ConfigError`` whose text is one line: the key, the bad value, what is allowed.
The CLI and the figure pipeline both come through ``compose``/``build``.
"""
from __future__ import annotations

import dataclasses
import functools
import hashlib
import inspect
import json
import math
import os
from pathlib import Path
from collections.abc import Iterable, Mapping, Sequence

import yaml
from hydra import version
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ValueType
from hydra.core.utils import setup_globals
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, ListConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError, OmegaConfBaseException

from sgi_run import hydra_private, provenance
from sgi_run.bundled import CONF_DIR
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError
from sgi_run.core.solvers import on_fail_rule
from sgi_run.engine import budget, executor
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.plan import Plan, settle_defaults
from sgi_run.engine.simulate import observable_functions
from sgi_run.integrators import Integrator, integrator_config, make_integrator
from sgi_run.systems import BUILT_IN, SYSTEMS, System, registered_name

GROUPS = ("system", "integrator", "plan", "executor")
PROGRESS = ("auto", "on", "off")
# cache: reuse a finished run (a stale one, computed by other numerics code, with a warning) |
# refresh_stale (recompute stale runs) | off (always recompute).
CACHE_POLICIES = ("reuse", "refresh_stale", "off")
# plan.kind: an ensemble (the default; plan/default.yaml has no kind key) or a convergence study.
PLAN_KINDS = ("ensemble", "convergence")
# Keys that change where and how a run is shown, never its numbers: left out of the config hash.
_NOT_HASHED = ("hydra", "progress", "output_root", "executor", "cache")


@dataclasses.dataclass(frozen=True)
class ConfigSource:
    """Where Hydra finds a run's configs, as ``hydra.main`` takes it from the command line: the primary
    config (``--config-name``), its directory (``--config-path``; a directory or Hydra's ``pkg://``) and a
    directory added to the search path (``--config-dir``). The default is conf/'s config.yaml (``primary``
    None: CONF_DIR, wherever the package finds it)."""
    name: str = "config"
    primary: str | None = None
    added: str | None = None


# Hydra's search path providers that the command line sets, by the flag that sets them.
_SEARCH_PATH_FLAGS = {"main": "--config-path", "command-line": "--config-dir"}


def _loader(source: ConfigSource) -> hydra_private.ConfigLoader:
    """Hydra's config loader with the search path ``hydra.main`` builds for ``source``; a directory that is
    not there or a primary config that is not found is refused."""
    version.setbase(None)
    setup_globals()      # Hydra's resolvers (${now:...}), as hydra.main has them
    search_path = hydra_private.search_path(source.primary or str(CONF_DIR))
    if source.added is not None:
        if not source.added.strip():      # Hydra would read it as the working directory
            raise ConfigError("--config-dir", source.added, "an existing directory")
        # Where hydra.main puts --config-dir: after the primary directory (_check_added_names).
        search_path.prepend(provider="command-line", path=f"file://{os.path.abspath(source.added)}",
                            anchor=SearchPathQuery(provider="schema"))
    loader = hydra_private.loader(search_path)
    for where in loader.repository.get_sources():
        if where.provider in _SEARCH_PATH_FLAGS and not where.available():
            raise ConfigError(_SEARCH_PATH_FLAGS[where.provider], where.path.removeprefix("file://"),
                              "an existing directory")
    if source.added is not None:
        _check_added_names(loader)
    folder, _, name = source.name.removesuffix(".yaml").rpartition("/")
    primaries = sorted(c for c in loader.get_group_options(folder) if not c.startswith("_"))  # _dummy_: Hydra's
    if name not in primaries:
        raise ConfigError("--config-name", source.name, f"one of {primaries}")
    return loader


def _check_added_names(loader: hydra_private.ConfigLoader) -> None:
    """Refuse a --config-dir that holds a config of a name an earlier directory of the search path has
    (``system/kubo.yaml``, ``config.yaml``): Hydra takes the first it finds, so the user's would be ignored."""
    sources = loader.repository.get_sources()
    added = next(i for i, where in enumerate(sources) if where.provider == "command-line")
    root = Path(sources[added].path.removeprefix("file://"))
    for path in sorted(root.rglob("*.yaml")):
        name = path.relative_to(root).with_suffix("").as_posix()
        first = next((where for where in sources[:added] if where.is_config(name)), None)
        if first is None or os.path.realpath(f"{first.path.removeprefix('file://')}/{name}.yaml") == \
                os.path.realpath(path):      # the same file (--config-dir conf/): nothing of the user's is ignored
            continue
        group, _, option = name.rpartition("/")
        choose = f"{group}=my_{option}" if group else f"--config-name my_{option}"
        raise ConfigError("--config-dir", str(root), f"configs of names of their own: its {name}.yaml would be "
                          f"ignored, as Hydra finds {first.path.removeprefix('file://')}/{name}.yaml first (name "
                          f"yours my_{option}.yaml and choose {choose})")


def group_options(group: str, source: ConfigSource = ConfigSource()) -> list[str]:
    """The options of a config group, wherever Hydra finds them (conf/, a --config-dir)."""
    return sorted(_loader(source).get_group_options(group))


def check_hydra_groups(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> None:
    """Refuse an unknown option of one of Hydra's groups (``hydra/launcher=jolib``), naming those installed."""
    for o in _parsed(overrides):
        if o.key_or_group.startswith("hydra/"):
            allowed = hydra_group_options(o.key_or_group, source)
            for v in _values(o, source):
                if allowed and v not in allowed:
                    raise ConfigError(o.key_or_group, v, f"one of {allowed}")


def hydra_group_options(group: str, source: ConfigSource = ConfigSource()) -> list[str]:
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
    return sorted(set(registered) | set(group_options(group, source))) if registered else []


# --- overrides ---------------------------------------------------------------------------------
def _parsed(overrides: Sequence[str]):
    parser = OverridesParser.create()
    try:
        parsed = parser.parse_overrides(list(overrides))
    except HydraException as err:
        # Name the one override that cannot be read, not the whole command line.
        for override in overrides:
            try:
                parser.parse_overrides([override])
            except HydraException:
                key, _, value = override.partition("=")
                raise ConfigError(key, value, "a key=value override Hydra's grammar reads (quote a value with "
                                  f"characters such as ~ or spaces: {key}='...')") from None
        raise ConfigError("override", " ".join(overrides), f"key=value overrides ({str(err).splitlines()[0]})") from None
    for o in parsed:
        if not o.key_or_group:      # Hydra's grammar reads =5 as a key of its own: '' (Hydra then fails on it)
            raise ConfigError("override", o.input_line, "key=value with a key before the = (e.g. plan.dt=0.5)")
    return parsed


def _typed_value(overrides: Sequence[str], key: str):
    """The value typed for ``key`` on the command line (as typed), or None."""
    return next((o.partition("=")[2] for o in overrides if o.partition("=")[0].lstrip("+") == key), None)


def _values(override, source: ConfigSource = ConfigSource()) -> list:
    if override.is_sweep_override() and not override.is_discrete_sweep():
        raise ConfigError(override.key_or_group, override.get_value_string(),
                          "values a sweep lists: a,b, choice(a,b) or range(start,stop,step) (interval() is a search "
                          "space for an optimizing sweeper; Hydra's basic sweeper lists its values)")
    if override.value_type == ValueType.GLOB_CHOICE_SWEEP:
        override.config_loader = _loader(source)    # glob(...) lists the options Hydra finds of its group
    if override.is_sweep_override():
        return list(override.sweep_string_iterator())
    return [override.value()]


def expand_sweeps(overrides: Sequence[str], multirun: bool = True,
                  source: ConfigSource = ConfigSource()) -> list[list[str]]:
    """All combinations a multirun over ``overrides`` would launch, as plain override lists. Without ``multirun``
    (no -m) a sweep is refused: Hydra runs one job."""
    import itertools
    choices = []
    for o in _parsed(overrides):
        if not o.is_sweep_override():
            # As typed: a value rebuilt from its parse loses its quotes ('1' became 1, null 'None').
            choices.append([o.input_line])
            continue
        values = _values(o, source)
        if not multirun:
            raise ConfigError(o.key_or_group, o.get_value_string(),
                              f"one value without -m (a sweep over several runs: sgi-run -m {o.input_line})")
        prefix = "+" if o.is_add() else ("~" if o.is_delete() else "")
        choices.append([f"{prefix}{o.key_or_group}={v}" for v in values])
    return [list(c) for c in itertools.product(*choices)]


# Set by the group option chosen (``integrator=dirk``), never by hand: results are filed under the names,
# and plan.kind picks the keys a plan has.
_SET_BY_GROUP = {"system.name": "system", "integrator.name": "integrator", "integrator.family": "integrator",
                 "plan.kind": "plan"}


def check_overrides(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> None:
    """Refuse unknown group options, unknown keys (also ``+key`` additions) and removed keys, with the
    allowed ones named."""
    check_hydra_groups(overrides, source)
    parsed = [o for o in _parsed(overrides) if not o.key_or_group.startswith("hydra")]
    for o in parsed:
        if o.is_delete():
            raise ConfigError(o.key_or_group, "~", "a value: keys cannot be removed (set them instead)")
        if o.key_or_group in _SET_BY_GROUP:
            group = _SET_BY_GROUP[o.key_or_group]
            raise ConfigError(o.key_or_group, _values(o, source)[0],
                              f"set by the {group} group: choose {group}=<option>, one of {group_options(group)}")
    group_choices = []
    for o in parsed:
        if o.key_or_group in GROUPS:
            allowed = group_options(o.key_or_group, source)
            for v in _values(o, source):
                if v not in allowed:
                    raise ConfigError(o.key_or_group, v, f"one of {allowed}")
            group_choices.append(f"{o.key_or_group}={_values(o, source)[0]}")
    # An added key (+key=value) is one no config has: as unknown as a mistyped one.
    keyed = [o for o in parsed if o.key_or_group not in GROUPS]
    if not keyed:
        return
    base = _composed_groups(tuple(group_choices), source)
    for o in keyed:
        key = o.key_or_group
        if _adds_a_parameter(base, o):
            continue
        if (o.is_add() and not o.is_force_add()) or OmegaConf.select(base, key, default=_ABSENT) is _ABSENT:
            parent_key = key.rpartition(".")[0]
            parent = OmegaConf.select(base, parent_key) if parent_key else base
            known = sorted(parent.keys()) if isinstance(parent, DictConfig) else []
            where = f"'{parent_key}'" if parent_key else "the top level"
            absent = OmegaConf.select(base, key, default=_ABSENT) is _ABSENT
            added = (f", or a parameter added with +{key}=<number>"
                     if absent and parent_key == "system" and _open_parameters(base) else "")
            raise ConfigError(key, _values(o, source)[0], f"a known key; {where} has {known}{added}")


def _open_parameters(base: DictConfig) -> bool:
    """Whether the chosen system takes parameters its class does not name (a formula system)."""
    system = SYSTEMS.get(OmegaConf.select(base, "system.name", default=None))
    return system is not None and system.open_parameters


def _adds_a_parameter(base: DictConfig, override) -> bool:
    """``+system.<name>=<value>`` on a system with open parameters, for a key its config does not have yet:
    a parameter of its formulas (build_system refuses a value that is no number, or a name no formula uses)."""
    group, _, name = override.key_or_group.partition(".")
    return (override.is_add() and group == "system" and name.isidentifier() and _open_parameters(base)
            and OmegaConf.select(base, override.key_or_group, default=_ABSENT) is _ABSENT)


_ABSENT = object()


@functools.lru_cache(maxsize=64)
def _composed_groups(group_choices: tuple[str, ...], source: ConfigSource = ConfigSource()) -> DictConfig:
    """The config of these group options alone, where keys are looked up (read only). Cached: the
    config files do not change while a process runs, and a Hydra compose costs ~60 ms."""
    return _hydra_compose(group_choices, source)


def _hydra_compose(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> DictConfig:
    """The job's config as Hydra composes it from ``source`` (its ``hydra`` node left out); a file YAML
    cannot read, or what Hydra cannot compose, is one ConfigError line."""
    cfg = _composed(overrides, source)
    with open_dict(cfg):
        del cfg["hydra"]
    return cfg


def hydra_node(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> DictConfig:
    """Hydra's own config (its launcher, run and sweep directories) as the command line's ``hydra/...`` and
    ``hydra.*`` overrides (the others left out) set it. An option of Hydra's groups it does not have, a key
    its node lacks or a value of the wrong type (``hydra.launcher.n_jobs=abc``), which Hydra refuses in
    several lines once started, is one ConfigError line."""
    typed = [o for o in overrides if o.lstrip("+~").startswith("hydra")]
    check_hydra_groups(typed, source)
    return _composed(typed, source).hydra


def _composed(overrides: Sequence[str], source: ConfigSource) -> DictConfig:
    """The config as Hydra composes it from ``source``, its ``hydra`` node included; a file YAML cannot read,
    or what Hydra cannot compose, is one ConfigError line."""
    try:
        return _loader(source).load_configuration(source.name, list(overrides), run_mode=RunMode.RUN,
                                                  from_shell=False)
    except yaml.MarkedYAMLError as err:
        raise _unreadable(err) from None
    except HydraException as err:
        raise _not_composed(err, overrides, source) from None


def _not_composed(err: HydraException, overrides: Sequence[str], source: ConfigSource) -> ConfigError:
    """What Hydra could not compose, in one line: the typed override OmegaConf names (a key its node lacks,
    with the keys it has; a value of the wrong type), else the command line."""
    key = getattr(err.__cause__, "full_key", None)
    value = _typed_value(overrides, key) if key else None
    if value is None:
        return ConfigError("override", " ".join(overrides), str(err).splitlines()[0])
    if isinstance(err.__cause__, ConfigAttributeError):
        parent = key.rpartition(".")[0]
        others = [o for o in overrides if o.partition("=")[0].lstrip("+~") != key]
        known = sorted(OmegaConf.select(_composed(others, source), parent))
        return ConfigError(key, value, f"a known key; '{parent}' has {known}")
    return ConfigError(key, value, f"a value of its type ({str(err.__cause__).splitlines()[0]})")


def _unreadable(err: yaml.MarkedYAMLError) -> ConfigError:
    """A config file YAML cannot parse: its file:line:column, the text there and the parser's words.
    Where the parser stopped at the end of the file, where the unfinished part began."""
    marks = [m for m in (err.problem_mark, err.context_mark) if m is not None]
    lines = Path(marks[0].name).read_text().splitlines() if os.path.isfile(marks[0].name) else []
    text = {m: lines[m.line].strip() if m.line < len(lines) else "" for m in marks}
    mark = next((m for m in marks if text[m]), marks[0])
    return ConfigError(f"{mark.name}:{mark.line + 1}:{mark.column + 1}", text[mark],
                       f"valid YAML ({', '.join(filter(None, (err.context, err.problem)))})")


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
        cfg = _hydra_compose(overrides, source)
        try:
            setup = build(cfg)
        except ConfigError as err:
            raise _blamed_on_a_typed_key(err, cfg, overrides, source) from None
    except (HydraException, OmegaConfBaseException) as err:    # e.g. an interpolation that cannot resolve
        key = getattr(err, "full_key", None)
        value = _typed_value(overrides, key) if key else None
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
    typed = {o.key_or_group: o for o in _parsed(overrides) if not o.key_or_group.startswith("hydra")}
    if err.key in typed:
        return err
    # A typed value before a group choice: in plan=convergence plan.T=0.1, T is what the study's steps miss.
    suspects = sorted(typed.values(), key=lambda o: o.key_or_group in GROUPS)
    culprit = next((o for o in suspects if _builds([x for x in overrides if x != o.input_line], source)), None)
    if culprit is None:
        return err
    key, value = culprit.key_or_group, culprit.value()
    default = OmegaConf.select(cfg, err.key, default=_ABSENT) is not _ABSENT and not key.startswith(f"{err.key}.")
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
        build(_hydra_compose(overrides, source))
    except (ConfigError, HydraException, OmegaConfBaseException):
        return False
    return True


def _integrators_that_fit(system: System, source: ConfigSource) -> list[str]:
    """The integrator options (as configured) that fit ``system``."""
    fitting = []
    for option in group_options("integrator", source):
        try:
            make_integrator(as_python(_composed_groups((f"integrator={option}",), source).integrator)).check_fits(system)
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


def as_python(node):
    """A config node as plain Python (dicts, lists), interpolations resolved; anything else as it is."""
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, (DictConfig, ListConfig)) else node


def build_system(cfg) -> System:
    cfg = dict(as_python(cfg))
    name = cfg.pop("name", None)
    if name not in SYSTEMS:
        raise ConfigError("system.name", name, f"one of {sorted(SYSTEMS)}")
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
    cfg = {k: _typed(f"system.{cls.config_key(k)}", v, declared[k]) for k, v in cfg.items()}
    try:
        system = cls(**cfg)
        system.check()
    except ConfigError as err:
        raise err.under("system") from None
    return system


def _finite(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _formula_text(v) -> bool:
    return isinstance(v, str) or _finite(v)


def _as_text(v) -> str:
    return v if isinstance(v, str) else repr(v)


def _initial_entry(v) -> bool:
    return isinstance(v, str) or _finite(v)


def _as_initial(v):
    """A number stays a number (float: a deterministic start, as before); a text is a formula."""
    return v if isinstance(v, str) else float(v)


def _formulas(v, depth: int) -> bool:
    """A non-empty list of formulas, or (depth 2) of formulas and lists of formulas."""
    inner = (lambda x: _formula_text(x) or _formulas(x, 1)) if depth == 2 else _formula_text
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(inner(x) for x in v)


def _formula_or_list(v):
    if v is None:
        return None
    return _as_text(v) if _formula_text(v) else tuple(_as_text(x) for x in v)


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
    "tuple[float, ...] | None": (
        lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0 and all(_finite(x) for x in v)),
        lambda v: None if v is None else tuple(float(x) for x in v), "a list of finite numbers, or null"),
    # A formula system's (systems.formula): a formula is text, or a number YAML read (F: 0) as its text.
    "Formula": (_formula_text, _as_text, "a formula (text)"),
    "tuple[Formula, ...]": (lambda v: _formulas(v, 1), lambda v: tuple(_as_text(x) for x in v),
                            "a list of formulas (texts)"),
    "Formula | tuple[Formula, ...] | None": (
        lambda v: v is None or _formula_text(v) or _formulas(v, 1), _formula_or_list,
        "a formula, a list of formulas (one per degree of freedom), or null"),
    "tuple[Formula | tuple[Formula, ...], ...] | None": (
        lambda v: v is None or _formulas(v, 2), lambda v: None if v is None else tuple(_formula_or_list(x) for x in v),
        "a list with a formula (or a list of formulas, one per degree of freedom) per noise, or null"),
    # A formula system's initial state (systems.formula): each entry a number, or a formula of the random variables
    # xi1.., u1.. and the parameters (its initial law).
    "float | Formula | tuple[float | Formula, ...]": (
        lambda v: _initial_entry(v) or (isinstance(v, (list, tuple)) and len(v) > 0 and all(map(_initial_entry, v))),
        lambda v: _as_initial(v) if _initial_entry(v) else tuple(map(_as_initial, v)),
        "a number or a formula (an initial law in xi1, xi2, .., u1, u2, ..), or a list of those (one per coordinate)"),
    "tuple[float | Formula, ...] | None": (
        lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0 and all(map(_initial_entry, v))),
        lambda v: None if v is None else tuple(map(_as_initial, v)),
        "a list of numbers or formulas (an initial law in xi1, xi2, .., u1, u2, ..), or null"),
    # Gathered by a formula system's gather_parameters (systems.formula), never typed in: numbers or lists of them.
    "tuple[tuple[str, float | tuple[float, ...]], ...]": (
        lambda v: isinstance(v, tuple) and all(isinstance(k, str) and (_finite(x) or (
            isinstance(x, tuple) and len(x) > 0 and all(_finite(y) for y in x))) for k, x in v),
        lambda v: v, "named finite numbers or lists of finite numbers"),
    "int": (lambda v: isinstance(v, int) and not isinstance(v, bool), int, "an integer"),
    "bool": (lambda v: isinstance(v, bool), bool, "true or false"),
    "str": (lambda v: isinstance(v, str), str, "a string"),
}


def check_parameter_types(cls) -> dict[str, str]:
    """Each parameter's declared type, as its key in _PARAMETER_TYPES; an annotation outside it is the system
    author's error, named as such (TypeError) before any value is typed."""
    declared = {f.name: f.type if isinstance(f.type, str) else inspect.formatannotation(f.type)
                for f in dataclasses.fields(cls)}
    for name, annotation in declared.items():
        if annotation not in _PARAMETER_TYPES:
            raise TypeError(f"{cls.__name__}.{name} is annotated {annotation!r}: a system parameter's annotation is one "
                            f"of {sorted(_PARAMETER_TYPES)} (the types a config value is checked and converted to)")
    return declared


def _typed(key: str, value, declared: str):
    """A system parameter checked against its declared type (before the system's own domain checks)."""
    accepts, convert, allowed = _PARAMETER_TYPES[declared]
    if not accepts(value):
        raise ConfigError(key, value, allowed)
    return convert(value)


def build_integrator(cfg) -> Integrator:
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


def build(cfg: DictConfig) -> BuiltConfig:
    """System, integrator and plan from a composed config; raises ConfigError before any compute."""
    system = build_system(cfg.system)
    integrator = build_integrator(as_python(cfg.integrator))
    integrator.check_fits(system)
    kind = cfg.plan.get("kind", "ensemble")
    if kind not in PLAN_KINDS:
        raise ConfigError("plan.kind", kind, f"one of {list(PLAN_KINDS)}")
    if kind == "convergence":
        study = ConvergencePlan.from_mapping(as_python(cfg.plan)).fitted_to(system, integrator)
        plan = budget.settle(system, integrator, study)
        _check_run_options(cfg)
        return BuiltConfig(system, integrator, plan)
    plan = Plan.from_mapping(as_python(cfg.plan))
    if integrator.noise_kind == "three_point":
        # The three-point law is not a Brownian path: there is no finer grid to sum, nothing to clip.
        if plan.brownian_refine != 1:
            raise ConfigError("plan.brownian_refine", plan.brownian_refine,
                              f"1 with the weak integrator {integrator.name} (three-point increments)")
        if plan.truncate is not None:
            raise ConfigError("plan.truncate", plan.truncate,
                              f"null with the weak integrator {integrator.name} (three-point increments)")
    observable_functions(system, plan.observables)   # refuses an unknown observable name
    plan = budget.settle(system, integrator, plan)
    _check_run_options(cfg)
    return BuiltConfig(system, integrator, plan)


# The longest name of a file or directory the file systems take (Linux's NAME_MAX: ext4, xfs, btrfs, tmpfs, NFS).
NAME_MAX = 255


def _check_run_options(cfg: DictConfig) -> None:
    output_root = cfg.get("output_root")
    if not (isinstance(output_root, str) and output_root.strip()):
        raise ConfigError("output_root", output_root, "a directory (a non-empty path)")
    longest = max(len(name.encode("utf-8", "surrogateescape")) for name in Path(output_root).parts)
    if longest > NAME_MAX:      # else the first look at the run directory fails: "File name too long"
        raise ConfigError("output_root", output_root, f"a directory whose names are each at most {NAME_MAX} bytes, "
                          f"the file system's limit (one has {longest})")
    executor.spec_of(as_python(cfg.executor))
    if cfg.get("progress", "auto") not in PROGRESS:
        raise ConfigError("progress", cfg.progress, f"one of {list(PROGRESS)}")
    if cfg.get("cache", "reuse") not in CACHE_POLICIES:
        raise ConfigError("cache", cfg.cache, f"one of {list(CACHE_POLICIES)}")


# --- the run's pieces as config nodes: what sgi_run's Python API (sgi_run.api) runs ---------------------------
def group_node(group: str, option: str, changes: Mapping, source: ConfigSource = ConfigSource()) -> dict:
    """The option ``option`` of a config group (conf/<group>/<option>.yaml) as plain Python, its keys changed
    by ``changes``: ``group=<option> <group>.<key>=<value> ...`` on the command line, refused alike (an unknown
    option or key, a key the group's choice sets). The values are checked where the node is built."""
    allowed = group_options(group, source)
    if option not in allowed:
        raise ConfigError(group, option, f"one of {allowed}")
    node = as_python(_composed_groups((f"{group}={option}",), source)[group])
    for key, value in changes.items():
        if f"{group}.{key}" in _SET_BY_GROUP:
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
    base = as_python(_composed_groups(()))
    for key, value in options.items():
        if key not in base or key in GROUPS:
            raise ConfigError(key, value, f"a run option: one of {sorted(set(base) - set(GROUPS))}")
    return OmegaConf.create(base | options | {"system": system_node(system), "integrator": integrator_config(integrator),
                                              "plan": plan_node(plan), "executor": executor})


# --- identity of a run -----------------------------------------------------------------------------
# Optional outputs added after runs existed: left out of the hash while unset (null), so adding them
# did not change the identity of the runs made before.
_HASHED_WHEN_SET = {"plan": ("time_average",), "integrator": ("iterations",)}


def config_hash(cfg) -> str:
    """12 hex digits identifying the numbers a config produces (display-only keys left out)."""
    content = {k: as_python(cfg[k]) for k in cfg if k not in _NOT_HASHED}
    # auto as the number it settles to
    if isinstance(content.get("plan"), dict) and "kind" not in content["plan"]:
        content["plan"] = settle_defaults(content["plan"])
    if isinstance(content.get("system"), dict) and content["system"].get("name") in SYSTEMS:
        name = content["system"]["name"]
        content["system"] = SYSTEMS[name].settle_defaults(content["system"])
        if name not in BUILT_IN:    # a class of one's own: the numerics digest does not cover its code, this does
            content["system_code"] = provenance.class_digest(SYSTEMS[name])
    if isinstance(content.get("integrator"), dict) and "on_fail" in content["integrator"]:
        content["integrator"]["on_fail"] = on_fail_rule(content["integrator"]["on_fail"])
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
