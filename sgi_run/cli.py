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

import json
import os
import signal
import sys
from pathlib import Path

import hydra
from omegaconf import DictConfig

from sgi_run.version import __version__
from sgi_run.api import load_module
from sgi_run.config import (CONF_DIR, GROUPS, ConfigSource, check_hydra_groups, compose_setup, config_hash,
                            expand_sweeps, group_options, plain, register_resolvers, run_dir_for)
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError
from sgi_run.engine.executor import ShardLost

_HYDRA_FLAGS_WITH_VALUE = {"-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir",
                           "--info", "-i", "--experimental-rerun", "--package", "-p", "--cfg", "-c"}
# Every flag Hydra's parser knows (its argparse would print a usage block for any other).
_HYDRA_FLAGS = _HYDRA_FLAGS_WITH_VALUE | {"--help", "-h", "--hydra-help", "--version", "--resolve", "--run", "-r",
                                          "--multirun", "-m", "--shell-completion", "-sc"}
# Flags that show Hydra's own information and run nothing: no validation before them.
_HYDRA_INFO_FLAGS = {"--hydra-help", "--info", "-i", "--shell-completion", "-sc"}

_state = {"terminated": False, "failed": 0}


def _flags_and_overrides(argv: list[str]) -> tuple[list[str], list[str]]:
    """Hydra's flags of a command line (each with its value) and its key=value overrides, in the order typed."""
    flags, overrides, takes_value = [], [], False
    for arg in argv:
        if takes_value or arg.startswith("-"):
            flags.append(arg)
            takes_value = not takes_value and arg in _HYDRA_FLAGS_WITH_VALUE
        else:
            overrides.append(arg)
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


def _check_flags(argv: list[str]) -> None:
    """Refuse a flag neither sgi-run nor Hydra has, in one line (not argparse's usage block)."""
    takes_value = False
    for arg in argv:
        if not takes_value and arg.startswith("-") and arg.partition("=")[0] not in _HYDRA_FLAGS:
            raise ConfigError("argument", arg, f"a flag of sgi-run: one of {sorted(_HYDRA_FLAGS)} (see sgi-run --help)")
        takes_value = not takes_value and arg in _HYDRA_FLAGS_WITH_VALUE
    modes = [mode for mode, names in _HYDRA_MODES.items() if any(a.partition("=")[0] in names for a in argv)]
    if len(modes) > 1:
        raise ConfigError("argument", " ".join(modes), f"one of {list(_HYDRA_MODES)} at a time (Hydra runs one mode)")


# What Hydra does with a command line: exactly one of these (its own rule).
_HYDRA_MODES = {"--run": {"--run", "-r"}, "--multirun": {"--multirun", "-m"}, "--cfg": {"--cfg", "-c"},
                "--info": {"--info", "-i"}, "--shell-completion": {"--shell-completion", "-sc"}}


def _overrides(argv: list[str]) -> list[str]:
    """The key=value overrides of a command line that compose the job's config (Hydra's flags and keys skipped)."""
    return [a for a in _flags_and_overrides(argv)[1] if not a.lstrip("+~").startswith("hydra")]


def _flag(flags: list[str], *names: str) -> str | None:
    """The value of the last of Hydra's flags ``names`` on the line (``-cn x`` or ``--config-name=x``), or None."""
    value = None
    for i, arg in enumerate(flags):
        name, equals, given = arg.partition("=")
        if name in names:
            value = given if equals else (flags[i + 1] if i + 1 < len(flags) else None)
    return value


def _config_source(flags: list[str]) -> ConfigSource:
    """Where ``hydra.main`` will find the configs (``--config-name``, ``--config-path``, ``--config-dir``):
    validation composes the config that will run."""
    from hydra._internal.utils import compute_search_path_dir, detect_calling_file_or_module_from_task_function

    path = _flag(flags, "--config-path", "-cp")    # relative: to this package, as Hydra resolves it
    primary = CONF_DIR if path is None else compute_search_path_dir(
        *detect_calling_file_or_module_from_task_function(_job), path)
    return ConfigSource(name=_flag(flags, "--config-name", "-cn") or "config", primary=str(primary),
                        added=_flag(flags, "--config-dir", "-cd"))


def _refuse(err: ConfigError) -> None:
    print(f"sgi-run: error: {err}", file=sys.stderr)
    sys.exit(2)


class _Validated(dict):
    """Each job's config (``_validated_key``) -> the Setup its validation built: the job runs that one, built once.
    Pickled empty: a job that a launcher runs in another process (joblib, submitit) builds its own."""

    def __reduce__(self):
        return _Validated, ()


_validated = _Validated()


def _validated_key(cfg: DictConfig) -> str:
    """A job's config as text, Hydra's own node left out: as ``compose`` validated it and as Hydra hands it over."""
    return json.dumps({k: plain(cfg[k]) for k in cfg if k != "hydra"}, sort_keys=True, default=str)


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
    try:
        result = run(cfg, run_dir=run_dir, setup=_validated.get(_validated_key(cfg)))
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


def _explicit(argv: list[str], key: str) -> str | None:
    values = [a.split("=", 1)[1] for a in argv if a.split("=", 1)[0] == key]
    return values[-1] if values else None


def _check_own_run_dir(directory: Path, typed: str, finished: list[str]) -> None:
    """Refuse a ``hydra.run.dir`` that is no path, or a directory of the user's: one that holds files and no trace
    of a run (Hydra's ``.hydra/``, a finished run's file, checkpoints). A run writes its summary and ``.hydra/``
    there, which would replace a summary.md of the user's own (``hydra.run.dir=.`` in a project's directory)."""
    if typed.strip().strip("'\"").strip() == "":
        raise ConfigError("hydra.run.dir", typed, "a directory (a non-empty path)")
    if not directory.is_dir() or any((directory / name).exists() for name in (".hydra", "shards", *finished)):
        return
    theirs = sorted(entry.name for entry in directory.iterdir())
    if theirs:
        raise ConfigError("hydra.run.dir", typed, f"a new or empty directory, or one a run was made in ({directory} "
                          f"holds {', '.join(theirs[:3])}{', ...' if len(theirs) > 3 else ''}: not a run's files)")


def _check_run_dirs(argv: list[str], configs: list[DictConfig]) -> bool:
    """Refuse a run directory that holds another config's result or checkpoints, or that cannot be
    written (one line, before any job starts and before Hydra writes .hydra/ there) unless it holds
    the finished run, which is then shown without writing; True when one is such."""
    from sgi_run import cache
    from sgi_run.runner import RUN_KINDS

    finished = [kind.file_name for kind in RUN_KINDS]     # what a finished run directory holds
    multirun = "-m" in argv or "--multirun" in argv
    explicit = _explicit(argv, "hydra.run.dir") if not multirun else None
    if any(_explicit(argv, k) is not None for k in ("hydra.sweep.dir", "hydra.sweep.subdir")) and multirun:
        return False        # the user's own sweep layout: Hydra reports it
    read_only = False
    for cfg in configs:
        key, directory = ("hydra.run.dir", Path(explicit)) if explicit is not None and "${" not in explicit \
            else ("output_root", run_dir_for(cfg))
        value = explicit if key == "hydra.run.dir" else cfg.output_root
        if key == "hydra.run.dir":
            _check_own_run_dir(directory, explicit, finished)
        for name in finished:    # another config's result there is refused before Hydra writes over .hydra/
            cache.check_identity(directory / name, config_hash(cfg), key, value)
        cache.check_checkpoints(directory, config_hash(cfg), key, value)     # and its interrupted run
        if cache.writable(directory):
            continue
        if any((directory / name).exists() for name in finished):
            read_only = True
            continue
        cache.check_writable(directory, key, value)
    return read_only


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
        _check_flags(argv)
    except ConfigError as err:
        _refuse(err)
    flags, overrides = _flags_and_overrides(argv)
    sys.argv[1:] = flags + overrides    # Hydra's parser reads the overrides as one run: none after a flag
    if not _HYDRA_INFO_FLAGS & set(argv):
        try:
            source = _config_source(flags)
            check_hydra_groups([a for a in overrides if a.lstrip("+~").startswith("hydra/")], source)
            composed = [compose_setup(job, source) for job in expand_sweeps(_overrides(argv))]
            _validated.clear()      # this command line's jobs only
            _validated.update((_validated_key(cfg), setup) for cfg, setup in composed)
            configs = [cfg for cfg, _ in composed]
            if _flag(flags, "--cfg", "-c") is None and _check_run_dirs(argv, configs):
                sys.argv.append("hydra.output_subdir=null")   # show the finished run; Hydra writes nothing
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
    if _state["failed"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
