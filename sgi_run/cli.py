"""``sgi-run``: Hydra command line. ``sgi-run system=kubo integrator=dirk plan.dt=0.5``,
``sgi-run -m integrator=midpoint,dirk,heun plan.dt=0.5,0.1``.

Every job of a command line (each combination of a multirun) is composed and validated, and its run
directory checked, before the first one computes; a refusal is one line on stderr and exit status 2.
A run in which every path failed is said loudly and exits 1. Ctrl-C (exit 130) and SIGTERM (143)
say how many shards were kept; the same command resumes from them. So does a run whose directory
stops taking writes (a full disk, a quota, permissions): one line on stderr, exit status 1, no
partial file left behind.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig, OmegaConf

from sgi_run import hydra_private
from sgi_run.version import __version__
from sgi_run.api import load_module
from sgi_run.config import (CONF_DIR, GROUPS, ConfigSource, check_overrides, compose_setup, config_hash,
                            expand_sweeps, group_options, hydra_node, as_python, register_resolvers,
                            run_dir_for)
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError
from sgi_run.engine.executor import ShardLost
from sgi_run.launchers import check_launcher

def _hydra_flags() -> dict[str, argparse.Action]:
    """Each name of each of Hydra's flags (``-cn``, ``--config-name``) -> its argparse action: whether it takes a
    value, the values it allows. From the parser ``hydra.main`` reads the command line with: sgi-run knows
    Hydra's flags from here alone."""
    return {name: action for action in hydra_private.args_parser()._actions for name in action.option_strings}


_HYDRA_FLAGS = _hydra_flags()
# What Hydra does with a command line: one of these at most (its rule, which its parser does not hold).
_HYDRA_MODES = ("--run", "--multirun", "--cfg", "--info", "--shell-completion")
# Flags Hydra reads only along with another (--resolve: with --cfg or --help, which is sgi-run's own here).
_HYDRA_FLAG_NEEDS = {"--resolve": "--cfg", "--package": "--cfg"}

_state = {"terminated": False, "failed": 0, "new_dirs": []}


def _flags_and_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """Hydra's flags of a command line, each one word (``--config-name=x``; a bare ``--info``, whose value is
    optional, as ``--info=all``), and its key=value overrides, in the order typed. A flag's value is the next
    word where argparse takes it so: any but a flag for a value it needs, one of its choices for an optional one."""
    flags, overrides, i = [], [], 0
    while i < len(argv):
        arg, following = argv[i], argv[i + 1] if i + 1 < len(argv) else None
        action = _HYDRA_FLAGS.get(arg)
        i += 1
        if not arg.startswith("-"):
            overrides.append(arg)
        elif action is None or action.nargs == 0:
            flags.append(arg)
        elif action.nargs == "?" and following not in (action.choices or ()):
            flags.append(f"{arg}={action.const}")
        elif following is None or following.startswith("-"):
            flags.append(arg)       # its value is missing: _check_flags refuses it
        else:
            flags.append(f"{arg}={following}")
            i += 1
    return flags, overrides


def _modules(argv: list[str]) -> tuple[list[str], list[str]]:
    """(the files of ``--module FILE`` / ``--module=FILE``, the command line without them): sgi-run's own flag,
    which Hydra never sees."""
    files, rest, i = [], [], 0
    while i < len(argv):
        name, equals, value = argv[i].partition("=")
        if name == "--module":
            if not equals and i + 1 >= len(argv):
                raise ConfigError("--module", "", "a Python file (.py) that registers systems (sgi_run.register_system)")
            files.append(value if equals else argv[i + 1])
            i += 1 if equals else 2
            continue
        rest.append(argv[i])
        i += 1
    return files, rest


def _check_flags(flags: list[str]) -> None:
    """Refuse in one line (not argparse's usage block, not Hydra's traceback) a flag neither sgi-run nor Hydra
    has, a flag without the value it needs, with a value it takes none of or one it does not allow, two of
    Hydra's modes at once, and a flag without the one it goes with."""
    for flag in flags:
        name, equals, value = flag.partition("=")
        action = _HYDRA_FLAGS.get(name)
        if action is None:
            raise ConfigError("argument", flag, f"a flag of sgi-run: one of {sorted([*_HYDRA_FLAGS, '--module'])} "
                              "(see sgi-run --help)")
        if action.nargs == 0 and equals:
            raise ConfigError(name, value, f"no value: {name} is a flag on its own")
        if action.choices and value not in action.choices:
            raise ConfigError(name, value, f"one of {list(action.choices)}")
        if action.nargs is None and not value:
            raise ConfigError(name, value, f"a value ({action.help.splitlines()[0].strip()})")
    modes = [mode for mode in _HYDRA_MODES if _flag(flags, mode) is not None]
    if len(modes) > 1:
        raise ConfigError("argument", " ".join(modes), f"one of {list(_HYDRA_MODES)} at a time (Hydra runs one mode)")
    for name, needs in _HYDRA_FLAG_NEEDS.items():
        if _flag(flags, name) is not None and _flag(flags, needs) is None:
            raise ConfigError(name, _flag(flags, name), f"only with {needs} (it changes what {needs} shows)")


def _overrides(argv: list[str]) -> list[str]:
    """The key=value overrides of a command line that compose the job's config (Hydra's flags and keys skipped)."""
    return [a for a in _flags_and_overrides(argv)[1] if not a.lstrip("+~").startswith("hydra")]


def _flag(flags: list[str], name: str) -> str | None:
    """The value of the last of Hydra's flag ``name`` on the line, by any of its names (``-cn x``,
    ``--config-name=x``); '' for a flag without one, None where it is absent."""
    values = [f.partition("=")[2] for f in flags if _HYDRA_FLAGS.get(f.partition("=")[0]) is _HYDRA_FLAGS[name]]
    return values[-1] if values else None


def _config_source(flags: list[str]) -> ConfigSource:
    """Where ``hydra.main`` will find the configs (``--config-name``, ``--config-path``, ``--config-dir``):
    validation composes the config that will run."""
    path = _flag(flags, "--config-path")    # relative: to this package, as Hydra resolves it
    primary = CONF_DIR if path is None else hydra_private.config_path_dir(_job, path)
    return ConfigSource(name=_flag(flags, "--config-name") or "config", primary=str(primary),
                        added=_flag(flags, "--config-dir"))


def _refuse(err: ConfigError) -> None:
    print(f"sgi-run: error: {err}", file=sys.stderr)
    _remove_empty_new_dirs()
    sys.exit(2)


class _Validated(dict):
    """Each job's config (``_validated_key``) -> the BuiltConfig its validation built: the job runs that one, built
    once. Pickled empty: a job that a launcher runs in another process (joblib, submitit) builds its own."""

    def __reduce__(self):
        return _Validated, ()


_validated = _Validated()


def _validated_key(cfg: DictConfig) -> str:
    """A job's config as text, Hydra's own node left out: as ``compose`` validated it and as Hydra hands it over."""
    return json.dumps({k: as_python(cfg[k]) for k in cfg if k != "hydra"}, sort_keys=True, default=str)


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def _job(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from sgi_run.runner import WriteFailed, run, run_kind_of
    from sgi_run.terminal import console as make_console

    if os.environ.get(SLOTS_ENV):           # a job of a parallel sweep: its own cores, before JAX starts
        from sgi_run.engine.cores import claim_cores
        slots, directory = os.environ[SLOTS_ENV].split(":", 1)
        claim_cores(directory, int(slots))
    console = make_console()
    run_dir = HydraConfig.get().runtime.output_dir
    record = os.environ.get(RECORD_ENV)
    try:
        result = run(cfg, run_dir=run_dir, setup=_validated.get(_validated_key(cfg)),
                     on_start=(lambda: _save_record(cfg, Path(run_dir, record))) if record else None)
    except ConfigError as err:
        _refuse(err)
    except ShardLost as err:
        print(f"sgi-run: error: {err}; the finished shards are kept, the same command resumes from them",
              file=sys.stderr)
        sys.exit(1)
    except WriteFailed as err:
        print(f"sgi-run: error: {err}", file=sys.stderr)
        sys.exit(1)
    run_kind_of(result.setup.plan).show(result, cfg, console)
    if result.failed:
        _state["failed"] += 1


# Set for a command line's jobs: where in its run directory a job writes Hydra's record of it
# (hydra.output_subdir, as the line sets it; empty: no record). Hydra itself writes none (_save_record).
RECORD_ENV = "SGI_RUN_HYDRA_RECORD"


def _save_record(cfg: DictConfig, directory: Path) -> None:
    """Hydra's record of the job (what ``hydra.main`` writes to ``hydra.output_subdir``: config.yaml, hydra.yaml,
    overrides.yaml), written once the run holds its directory and nothing refused it (``run``'s ``on_start``):
    a run that is refused, or that waited for another config's run there, writes nothing."""
    from hydra.core.hydra_config import HydraConfig
    from sgi_run.store import write_text_atomically

    hydra_cfg = HydraConfig.instance().cfg
    directory.mkdir(parents=True, exist_ok=True)
    for name, node in (("config.yaml", cfg), ("hydra.yaml", hydra_cfg),
                       ("overrides.yaml", hydra_cfg.hydra.overrides.task)):
        write_text_atomically(directory / name, OmegaConf.to_yaml(node))


def _explicit(argv: list[str], key: str) -> str | None:
    values = [a.split("=", 1)[1] for a in argv if a.split("=", 1)[0] == key]
    return values[-1] if values else None


def _check_own_run_dir(directory: Path, typed: str, finished: list[str]) -> None:
    """Refuse a ``hydra.run.dir`` that is no path, or a directory of the user's: one that holds files and no trace
    of a run (Hydra's ``.hydra/``, a finished run's file, checkpoints, the lock of a run computing there). A run
    writes its summary and ``.hydra/`` there, which would replace a summary.md of the user's own
    (``hydra.run.dir=.`` in a project's directory)."""
    from sgi_run import cache
    if typed.strip().strip("'\"").strip() == "":
        raise ConfigError("hydra.run.dir", typed, "a directory (a non-empty path)")
    if not directory.is_dir() or any((directory / name).exists()
                                     for name in (".hydra", "shards", cache.LOCK_NAME, *finished)):
        return
    theirs = sorted(entry.name for entry in directory.iterdir())
    if theirs:
        raise ConfigError("hydra.run.dir", typed, f"a new or empty directory, or one a run was made in ({directory} "
                          f"holds {', '.join(theirs[:3])}{', ...' if len(theirs) > 3 else ''}: not a run's files)")


def _run_dirs(argv: list[str], configs: list[DictConfig]) -> list[tuple[DictConfig, str, str, Path]]:
    """Each job's config with its run directory, the key that places it there and that key's value; none where
    the user's own sweep layout places them (Hydra reports it)."""
    multirun = "-m" in argv or "--multirun" in argv
    explicit = _explicit(argv, "hydra.run.dir") if not multirun else None
    if any(_explicit(argv, k) is not None for k in ("hydra.sweep.dir", "hydra.sweep.subdir")) and multirun:
        return []
    if explicit is not None and "${" not in explicit:
        return [(cfg, "hydra.run.dir", explicit, Path(explicit)) for cfg in configs]
    return [(cfg, "output_root", cfg.output_root, run_dir_for(cfg)) for cfg in configs]


def _check_run_dirs(placed: list[tuple[DictConfig, str, str, Path]]) -> None:
    """Refuse a run directory that holds another config's result or checkpoints, or that cannot be
    written (one line, before any job starts) unless it holds the finished run, which is then shown
    without writing."""
    from sgi_run import cache
    from sgi_run.runner import RUN_KINDS

    finished = [kind.file_name for kind in RUN_KINDS]     # what a finished run directory holds
    for cfg, key, value, directory in placed:
        if key == "hydra.run.dir":
            _check_own_run_dir(directory, value, finished)
        for name in finished:    # another config's result there is refused before any job starts
            cache.check_identity(directory / name, config_hash(cfg), key, value)
        cache.check_checkpoints(directory, config_hash(cfg), key, value)     # and its interrupted run
        if not cache.writable(directory) and not any((directory / name).exists() for name in finished):
            cache.check_writable(directory, key, value)


def _new_dirs(directories: list[Path]) -> list[tuple[Path, Path]]:
    """Each directory not there yet, with the outermost of its parents not there either: what this command
    will create for it (the checks above, Hydra, the run)."""
    new = []
    for directory in (Path(os.path.abspath(d)) for d in directories):
        missing = [d for d in (directory, *directory.parents) if not d.exists()]
        if missing:
            new.append((directory, missing[-1]))
    return new


def _remove_empty_new_dirs() -> None:
    """Remove the directories this command created that hold nothing (those of refused or interrupted runs
    that wrote nothing), each up to the outermost it created: a refusal leaves no empty directories behind."""
    while _state["new_dirs"]:
        directory, outermost = _state["new_dirs"].pop()
        for d in (directory, *directory.parents):
            try:
                d.rmdir()
            except OSError:     # it holds something (a run's files, another job's directory), or is gone
                break
            if d == outermost:
                break


def _check_line(argv: list[str], flags: list[str], overrides: list[str]) -> bool:
    """Refuse what Hydra, or a sweep's launcher, would refuse only once started (a traceback, lines of its own),
    for what the flags ask: a run's or a sweep's jobs are composed and validated, the launcher set up, the run
    directories checked. True when jobs will run: each writes Hydra's record of itself once it holds its run
    directory (a second config started in the same directory must not write over the first's)."""
    if _flag(flags, "--experimental-rerun") is not None:
        _check_rerun(_flag(flags, "--experimental-rerun"))
        return False
    if _flag(flags, "--shell-completion") is not None:
        _check_shell_completion(overrides)
        return False
    source, multirun = _config_source(flags), _flag(flags, "--multirun") is not None
    jobs = expand_sweeps(_overrides(argv), multirun, source)
    hydra = hydra_node(overrides, source)
    hydra_help = _flag(flags, "--hydra-help") is not None
    if hydra_help and jobs[0]:
        key, _, value = jobs[0][0].partition("=")
        raise ConfigError(key, value, "no override of sgi-run's config with --hydra-help (it shows Hydra's own; "
                                      "sgi-run --help shows sgi-run's)")
    if hydra_help or _flag(flags, "--info") is not None:
        check_overrides(jobs[0], source)
        return False
    composed = [compose_setup(job, source) for job in jobs]
    _validated.clear()      # this command line's jobs only
    _validated.update((_validated_key(cfg), setup) for cfg, setup in composed)
    configs = [cfg for cfg, _ in composed]
    if multirun:
        launcher = [o for o in overrides if o.startswith("hydra/launcher=")]
        check_launcher(hydra.launcher, hydra_node(launcher, source).launcher, hydra.runtime.choices["hydra/launcher"])
    if _flag(flags, "--cfg") is not None:
        _check_package(_flag(flags, "--package"), _flag(flags, "--cfg"), configs[0])
        return False
    placed = _run_dirs(argv, configs)
    _state["new_dirs"] = _new_dirs([directory for *_, directory in placed])
    _check_run_dirs(placed)
    os.environ[RECORD_ENV] = hydra.output_subdir or ""    # where hydra.main would write the job's record
    return True


def _check_package(package: str | None, shown: str, cfg: DictConfig) -> None:
    """``--cfg job --package plan``: a key of the config ``--cfg`` shows (one under Hydra's own node, which
    ``--cfg hydra`` and ``--cfg all`` show, Hydra looks up itself)."""
    if package in (None, "_global_") or (shown != "job" and package.split(".")[0] == "hydra"):
        return
    if shown == "hydra" or OmegaConf.select(cfg, package) is None:
        keys = sorted([*(cfg if shown != "hydra" else ()), *(["hydra"] if shown != "job" else [])])
        raise ConfigError("--package", package, f"a key of the config --cfg {shown} shows: one of {keys}, or a "
                                                "key under one (plan.dt)")


def _check_rerun(path: str) -> None:
    """``--experimental-rerun FILE``: refused. Hydra reruns the config pickled by its PickleJobInfoCallback in the
    job's ``hydra.output_subdir``, which sgi-run's jobs leave unset (each writes Hydra's record itself, once it
    holds its run directory: ``_save_record``), so no run has that pickle to rerun."""
    raise ConfigError("--experimental-rerun", path, "not with sgi-run: a run is rerun by its command line, kept in "
                                                    "its .hydra/overrides.yaml (a finished run is shown, an interrupted "
                                                    "one resumed)")


def _check_shell_completion(overrides: list[str]) -> None:
    """``-sc install=bash``: one of Hydra's completion commands, for a shell it has a plugin for. ``query=SHELL``
    is what the installed completion runs, with the shell's COMP_LINE."""
    from hydra.core.plugins import Plugins
    from hydra.plugins.completion_plugin import CompletionPlugin

    shells = sorted(plugin(None).provides() for plugin in Plugins.instance().discover(CompletionPlugin))
    allowed = f'install=SHELL or uninstall=SHELL, SHELL one of {shells} (eval "$(sgi-run -sc install=bash)")'
    commands = [o for o in overrides if o.partition("=")[0] in ("install", "uninstall", "query")]  # Hydra's
    if len(commands) != 1 or commands[0].partition("=")[2] not in shells:
        raise ConfigError("--shell-completion", " ".join(overrides), allowed)
    if commands[0].startswith("query=") and "COMP_LINE" not in os.environ:
        raise ConfigError("--shell-completion", commands[0], f"{allowed}; query=SHELL is what the installed "
                                                             "completion runs, with the shell's COMP_LINE")


# Set for a sweep's jobs under the joblib launcher: where they claim their share of the cores.
SLOTS_ENV = "SGI_RUN_CORE_SLOTS"


def _share_cores_among_jobs(argv: list[str]) -> None:
    """Under the joblib launcher a sweep's jobs run side by side, each a JAX process whose CPU thread
    pool XLA sizes by the process's cores: each job claims its own share of them (one thread pool
    per core, never two fighting over one). The jobs inherit this environment from this process."""
    os.environ.pop(SLOTS_ENV, None)      # set here for this command's jobs only, never taken from the caller's
    if _explicit(argv, "hydra/launcher") != "joblib":
        return
    import tempfile
    cores = len(os.sched_getaffinity(0))
    try:
        n_jobs = int(_explicit(argv, "hydra.launcher.n_jobs") or -1)  # joblib's: -1 all cores, -2 all but one
    except ValueError:
        return        # Hydra refuses it
    jobs = n_jobs if n_jobs > 0 else max(1, cores + 1 + n_jobs)
    if jobs > 1:
        import atexit
        import shutil
        directory = tempfile.mkdtemp(prefix="sgi-run-cores-")
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        os.environ[SLOTS_ENV] = f"{jobs}:{directory}"


def _on_sigterm(signum, frame) -> None:
    # Stops the run the way Ctrl-C does: finished shards are kept, the CLI says so.
    _state["terminated"] = True
    raise KeyboardInterrupt


def _help() -> str:
    groups = "\n".join(f"  {g:<11} {', '.join(group_options(g))}" for g in GROUPS)
    return f"""sgi-run {__version__}: Monte Carlo experiments with structure-preserving stochastic integrators

Composes a system (a stochastic Hamiltonian, Lie-Poisson or Langevin system), an integrator and a
sampling plan from the YAML configs in conf/, runs the ensemble in JAX (float64), and writes
ensemble.h5 (statistics with Monte Carlo standard errors, kept paths, snapshots) and a summary table
to outputs/runs/<system>-<integrator>/<config hash>/. A finished run is a cache: the same command
shows it again without recomputing; an interrupted run resumes from its finished shards.

Usage: sgi-run [key=value ...]          one run
       sgi-run -m [key=a,b ...]         a sweep over every combination (Hydra multirun)

Examples:
  sgi-run                                            # defaults: system=kubo integrator=midpoint plan=default
  sgi-run system=kubo integrator=dirk plan.dt=0.5    # any key can be overridden
  sgi-run -m integrator=midpoint,dirk,heun plan.dt=0.5,0.1   # a sweep: 6 runs
  sgi-run system.nu=0.3 plan.paths=50000 plan.T=50 plan.observables=[H,q,p] plan.keep_paths=20
  sgi-run -m integrator=midpoint,dirk,heun plan=convergence  # strong order with a 95% CI
  sgi-run integrator=srkw2 plan=convergence plan.error=weak  # weak order
  sgi-run executor=dask plan.paths=1000000           # shards as tasks on a dask LocalCluster (same numbers)
  sgi-run -m hydra/launcher=joblib plan.dt=0.1,0.05  # a sweep's jobs in parallel processes
  sgi-run system=van_der_pol --cfg job               # show the composed config (validated), run nothing

Config groups (choose with group=option):
{groups}
Other keys: output_root (where runs go), cache=reuse|refresh_stale|off, progress=auto|on|off.

Paper figures: sgi-figures --fidelity smoke|reduced|paper [--only fig4_1]  (also: make figures)
Your own systems in Python: --module FILE.py (it calls sgi_run.register_system), with --config-dir DIR holding
their system/<name>.yaml.
Options: --help, --version, --module FILE; Hydra's own: --hydra-help, --cfg job|hydra|all, --info, -m.
"""


def main() -> None:
    try:
        jax_setup.configure()
    except ConfigError as err:
        _refuse(err)
    argv = sys.argv[1:]
    if "--help" in argv or "-h" in argv:
        print(_help())
        return
    if "--version" in argv:
        print(f"sgi-run {__version__}")
        return
    try:
        modules, argv = _modules(argv)
        for module in modules:      # systems of one's own, registered before any config names them
            load_module(module)
        flags, overrides = _flags_and_overrides(argv)
        _check_flags(flags)
        sys.argv[1:] = flags + overrides    # Hydra's parser reads the overrides as one run: none after a flag
        if _check_line(argv, flags, overrides):
            sys.argv.append("hydra.output_subdir=null")     # the job writes Hydra's record (_save_record)
    except ConfigError as err:
        _refuse(err)
    from sgi_run.runner import RunInterrupted

    _share_cores_among_jobs(argv)
    signal.signal(signal.SIGTERM, _on_sigterm)
    register_resolvers()
    try:
        _job()
    except RunInterrupted as stop:
        print(f"sgi-run: {stop}", file=sys.stderr)
        sys.exit(143 if _state["terminated"] else 130)
    except KeyboardInterrupt:
        print("sgi-run: interrupted before anything was computed", file=sys.stderr)
        sys.exit(143 if _state["terminated"] else 130)
    finally:
        _remove_empty_new_dirs()
    if _state["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
