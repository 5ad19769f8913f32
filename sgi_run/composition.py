"""Hydra's side of a run's config: where the configs are found (``ConfigSource``: --config-name, --config-path,
--config-dir), the command line's overrides read and checked (unknown keys and group options refused, sweeps
expanded), and the groups composed. Every refusal is a one-line ``ConfigError``; building the run's pieces
from the composed config is ``sgi_run.config``'s.
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import os
from pathlib import Path
from collections.abc import Sequence

import yaml
from hydra import version
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import ValueType
from hydra.core.utils import setup_globals
from hydra.errors import HydraException
from hydra.types import RunMode
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import ConfigAttributeError

from sgi_run import hydra_private
from sgi_run.bundled import CONF_DIR
from sgi_run.core.errors import ConfigError
from sgi_run.systems import SYSTEMS

GROUPS = ("system", "integrator", "plan", "executor")


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
    for o in parsed_overrides(overrides):
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
def parsed_overrides(overrides: Sequence[str]):
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


def typed_value(overrides: Sequence[str], key: str):
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
    choices = []
    for o in parsed_overrides(overrides):
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
SET_BY_GROUP = {"system.name": "system", "integrator.name": "integrator", "integrator.family": "integrator",
                 "plan.kind": "plan"}


def check_overrides(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> None:
    """Refuse unknown group options, unknown keys (also ``+key`` additions) and removed keys, with the
    allowed ones named."""
    check_hydra_groups(overrides, source)
    parsed = [o for o in parsed_overrides(overrides) if not o.key_or_group.startswith("hydra")]
    for o in parsed:
        if o.is_delete():
            raise ConfigError(o.key_or_group, "~", "a value: keys cannot be removed (set them instead)")
        if o.key_or_group in SET_BY_GROUP:
            group = SET_BY_GROUP[o.key_or_group]
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
    base = composed_groups(tuple(group_choices), source)
    for o in keyed:
        key = o.key_or_group
        if _adds_a_parameter(base, o):
            continue
        if (o.is_add() and not o.is_force_add()) or OmegaConf.select(base, key, default=ABSENT) is ABSENT:
            parent_key = key.rpartition(".")[0]
            parent = OmegaConf.select(base, parent_key) if parent_key else base
            known = sorted(parent.keys()) if isinstance(parent, DictConfig) else []
            where = f"'{parent_key}'" if parent_key else "the top level"
            absent = OmegaConf.select(base, key, default=ABSENT) is ABSENT
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
            and OmegaConf.select(base, override.key_or_group, default=ABSENT) is ABSENT)


ABSENT = object()


@functools.lru_cache(maxsize=64)
def composed_groups(group_choices: tuple[str, ...], source: ConfigSource = ConfigSource()) -> DictConfig:
    """The config of these group options alone, where keys are looked up (read only). Cached: the
    config files do not change while a process runs, and a Hydra compose costs ~60 ms."""
    return hydra_compose(group_choices, source)


def hydra_compose(overrides: Sequence[str], source: ConfigSource = ConfigSource()) -> DictConfig:
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
    value = typed_value(overrides, key) if key else None
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
