"""``run(cfg)``: one run from a composed config, shared by the CLI, the figures and tests.

Validates (``config.build``, or takes the BuiltConfig ``config.compose_setup`` built) before any compute, then,
holding the run directory's lock: returns the finished run when the cache may (``sgi_run.cache``), else
runs the shards (resuming checkpoints of an interrupted run of exactly this config and code), writes
``ensemble.h5`` and the summary. A convergence study (``plan=convergence``) is the same pipeline: the
engine runs its step sizes in lock-step (``engine.convergence``), and ``convergence_run`` writes
``convergence.h5``, its table and its plot. Both results are a ``RunResult``: an ``EnsembleRun`` or a
``ConvergenceRun``. What differs between the two is the run's ``RunKind`` (``run_kind_of``).
"""
from __future__ import annotations

import contextlib
import dataclasses
import errno
import sys
import time
from pathlib import Path
from collections.abc import Callable

import numpy as np
from omegaconf import DictConfig, OmegaConf

from sgi_run import cache, convergence_run, integrators, provenance, store, summary, systems
from sgi_run.version import __version__
from sgi_run.config import BuiltConfig, as_python, build, config_hash, run_dir_for
from sgi_run.core import jax_setup
from sgi_run.core.errors import ConfigError
from sgi_run.engine import convergence, executor
from sgi_run.engine.budget import fitting_shards, memory_estimate
from sgi_run.engine.checkpoint import DamagedCheckpoint, ShardStore
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.ensemble import run_shards
from sgi_run.engine.simulate import Simulator

# Without a terminal, a progress line at most this often (and one when the run ends).
LINE_SECONDS = 5.0


@dataclasses.dataclass
class RunResult:
    """A finished run, as ``sgi_run.simulate`` and ``sgi_run.run`` return it: an ensemble's (an ``EnsembleRun``:
    its statistics in ``ensemble``, an ``Ensemble``) or a convergence study's (a ``ConvergenceRun``: its errors and
    fitted order in ``result``). Either says where its file is (``path``: its ``ensemble.h5`` or
    ``convergence.h5``; ``run_dir``), the summary table's rows (``summary``), whether it was found in the cache
    (``cached``) and the system, integrator and plan it ran (``setup``).

    Example:

        >>> import sgi_run
        >>> from sgi_run.systems import Kubo
        >>> result = sgi_run.simulate(Kubo(), "midpoint", sgi_run.plan(paths=100, T=2))
        >>> result.path.name, result.ensemble.attrs["paths"], type(result.setup.system).__name__
        ('ensemble.h5', 100, 'Kubo')
    """
    path: Path                 # the ensemble.h5 (a study's convergence.h5)
    run_dir: Path
    summary: list[dict]
    cached: bool               # True when the file existed and nothing was computed
    setup: BuiltConfig         # what it ran: the system, integrator and plan built (once) of its config
    _: dataclasses.KW_ONLY
    shards_resumed: int = 0
    stale: bool = False        # cached, but computed by other numerics code (provenance.code_digest)
    resumed_part_way: dict[int, int] = dataclasses.field(default_factory=dict)  # shard -> step it resumed from

    @property
    def statistics(self) -> store.Ensemble:
        """The engine's statistics its file holds: an ensemble's, or a study's of its per-path errors."""
        raise NotImplementedError

    def resumed(self) -> str:
        """What was resumed from an interrupted run, in words ("" when nothing was)."""
        if not self.shards_resumed and not self.resumed_part_way:
            return ""
        part_way = ""
        if self.resumed_part_way:
            steps = self.statistics.attrs["path_steps"] // self.statistics.attrs["paths"]
            part_way = (f" and {len(self.resumed_part_way)} part-way (from step "
                        f"{', '.join(map(str, self.resumed_part_way.values()))} of {steps})")
        return f"resumed {self.shards_resumed} finished shard(s){part_way} of an interrupted run"

    @property
    def failed(self) -> bool:
        """Every path went non-finite: there is nothing to average (the CLI says so and exits 1)."""
        return bool(self.statistics.diagnostics["nonfinite_paths"][-1] >= self.statistics.attrs["paths"])

    def failure(self) -> str:
        """One line on a failed run: when its paths were lost."""
        stats = self.statistics
        nonfinite = stats.diagnostics["nonfinite_paths"]
        first = stats.t[np.argmax(nonfinite > 0)]
        whole = stats.t[np.argmax(nonfinite >= stats.attrs["paths"])]
        return (f"every one of the {stats.attrs['paths']} paths went non-finite (the first by t={first:g}, "
                f"all by t={whole:g}): no statistic is computed; see diagnostics/nonfinite_paths in {self.path}")


@dataclasses.dataclass
class EnsembleRun(RunResult):
    """A finished Monte Carlo ensemble: ``ensemble`` holds its statistics (an ``Ensemble``, as ``sgi_run.load``
    reads its ``ensemble.h5``)."""
    ensemble: store.Ensemble

    @property
    def statistics(self) -> store.Ensemble:
        return self.ensemble


@dataclasses.dataclass
class ConvergenceRun(RunResult):
    """A finished convergence study: ``result`` holds its errors and fitted order, ``attrs`` the file's
    attributes; ``error_statistics`` the engine's statistics of its per-path errors (an ``Ensemble`` of error
    observables, not of the system's)."""
    error_statistics: store.Ensemble
    result: convergence.ConvergenceResult | None = None
    attrs: dict = dataclasses.field(default_factory=dict)

    @property
    def statistics(self) -> store.Ensemble:
        return self.error_statistics

    @property
    def ensemble(self) -> store.Ensemble:
        """``error_statistics``, by the name it had before (documented then: kept working)."""
        return self.error_statistics

    @property
    def failed(self) -> bool:
        """Every path went non-finite, as a run's (``RunResult.failed``); a study that lost some is not failed
        (``sgi-run`` exits 0): ``convergence_run.show`` counts its non-finite paths and its note says what could not
        be fitted."""
        return bool(self.result.nonfinite[-1] >= self.result.paths)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM, which the CLI turns into this) during a run: the finished shards are kept."""

    def __init__(self, run_dir: Path, kept: int, shards: int, part_way: int = 0):
        super().__init__(run_dir, kept, shards, part_way)
        self.run_dir, self.kept, self.shards, self.part_way = run_dir, kept, shards, part_way

    def __str__(self) -> str:
        more = f" ({self.part_way} more saved part-way)" if self.part_way else ""
        return (f"interrupted: {self.kept} of {self.shards} shard(s) finished and kept in {self.run_dir / 'shards'}"
                f"{more}; running the same command again resumes from them")


def run_identity(cfg) -> dict[str, str]:
    """What a finished file or a shard checkpoint must have been computed for, to be reused."""
    return {"config_hash": config_hash(cfg), "code_digest": run_code_digest(cfg)}


def run_code_digest(cfg) -> str:
    """The digest of the numerics code a run of ``cfg`` executes (``code_digest_of`` its system and family)."""
    return code_digest_of(cfg.system.name, cfg.integrator.family)


def code_digest_of(system: str, family: str) -> str:
    """The digest of the numerics code a run of the system and integrator family so named executes: their classes
    (the integrator's tableau's too), what they import, the registries and the shared layers
    (``provenance.code_digest``). KeyError for a name this process has not registered."""
    return provenance.code_digest(systems.SYSTEMS[system], *integrators.FAMILIES[family])


def simulator_of(setup: BuiltConfig) -> Simulator:
    """The engine's simulator of a run: its ensemble, or a convergence study's levels in lock-step."""
    return run_kind_of(setup.plan).simulator(setup)


# --- the two kinds of run: an ensemble, a convergence study ----------------------------------------------
class RunKind:
    """What an ensemble and a convergence study do differently, in one place: ``run`` and ``sgi-run`` ask the
    run's kind (``run_kind_of``: ``ENSEMBLE`` or ``STUDY``) instead of asking which plan it has."""
    file_name: str                  # what a finished run's directory holds
    # What summarizes the file (tables, a study's plot), in the order write_outputs(run) writes them after it: a
    # directory holding the last holds them all.
    outputs: tuple[str, ...]

    def simulator(self, setup: BuiltConfig) -> Simulator:
        """The engine's simulator of the run."""
        raise NotImplementedError

    def levels(self, plan) -> int:
        """The step sizes its plan advances in lock-step (0: none)."""
        raise NotImplementedError

    def load(self, path: Path):
        """The finished file back (``store.DamagedFile`` if damaged)."""
        raise NotImplementedError

    def finished(self, path: Path, run_dir: Path, found: cache.Cached, setup: BuiltConfig) -> RunResult:
        """A cached run of what ``load`` read."""
        raise NotImplementedError

    def write(self, path: Path, run_dir: Path, sim: Simulator, computed, ens: store.Ensemble,
              setup: BuiltConfig) -> RunResult:
        """The computed run written to its file at ``path``, as a ``RunResult``."""
        raise NotImplementedError

    def write_outputs(self, run: RunResult) -> None:
        """What summarizes its file (``outputs``)."""
        raise NotImplementedError

    def show(self, run: RunResult, cfg: DictConfig, console) -> None:
        """What ``sgi-run`` prints of it."""
        raise NotImplementedError

    def compared(self, plan) -> tuple[tuple[str, ...], np.ndarray]:
        """(observables, times) where its summary compares the means with the system's exact ones, checked before
        it computes (``summary.check_reference_values``)."""
        raise NotImplementedError


class _EnsembleKind(RunKind):
    file_name = "ensemble.h5"
    outputs = summary.FILES

    def simulator(self, setup: BuiltConfig) -> Simulator:
        return Simulator(setup.system, setup.integrator, setup.plan)

    def levels(self, plan) -> int:
        return 0

    def load(self, path: Path) -> store.Ensemble:
        return store.load(path)

    def finished(self, path: Path, run_dir: Path, found: cache.Cached, setup: BuiltConfig) -> EnsembleRun:
        rows = summary.summarize(found.value, setup.system, setup.integrator, setup.plan)
        return EnsembleRun(path, run_dir, rows, cached=True, setup=setup, ensemble=found.value, stale=found.stale)

    def write(self, path: Path, run_dir: Path, sim: Simulator, computed, ens: store.Ensemble,
              setup: BuiltConfig) -> EnsembleRun:
        store.write(path, ens)
        rows = summary.summarize(ens, setup.system, setup.integrator, setup.plan)
        return EnsembleRun(path, run_dir, rows, cached=False, setup=setup, ensemble=ens,
                           shards_resumed=computed.shards_resumed, resumed_part_way=computed.resumed_part_way)

    def write_outputs(self, run: EnsembleRun) -> None:
        plan, a = run.setup.plan, run.ensemble.attrs
        title = (f"{a['system']}/{a['integrator']}  dt={plan.dt}  paths={plan.paths}  T={plan.T}  "
                 f"(ran on {a['executor']}, {a['device']})")
        summary.write(run.summary, run.run_dir, title, summary.note_lines(run.ensemble))

    def show(self, run: EnsembleRun, cfg: DictConfig, console) -> None:
        summary.show(run, f"{cfg.system.name} / {cfg.integrator.name}  (dt={cfg.plan.dt}, "
                          f"paths={cfg.plan.paths}, T={cfg.plan.T})", console)

    def compared(self, plan) -> tuple[tuple[str, ...], np.ndarray]:
        return plan.observables, plan.times


class _StudyKind(RunKind):
    file_name = convergence_run.FILE_NAME
    outputs = convergence_run.OUTPUTS

    def simulator(self, setup: BuiltConfig) -> Simulator:
        return convergence.simulator(setup.system, setup.integrator, setup.plan, setup.reference_integrator)

    def levels(self, plan) -> int:
        return len(plan.dts)

    def load(self, path: Path):
        return convergence_run.load_run(path)

    def finished(self, path: Path, run_dir: Path, found: cache.Cached, setup: BuiltConfig) -> ConvergenceRun:
        error_statistics, result, attrs = found.value
        rows = convergence_run.table_rows_of(result, attrs, summary.solver_counts(error_statistics))
        return ConvergenceRun(path, run_dir, rows, cached=True, setup=setup, error_statistics=error_statistics,
                              result=result, attrs=attrs, stale=found.stale)

    def write(self, path: Path, run_dir: Path, sim: Simulator, computed, ens: store.Ensemble,
              setup: BuiltConfig) -> ConvergenceRun:
        result, rows = convergence_run.write_study(path, sim, computed, ens)
        return ConvergenceRun(path, run_dir, rows, cached=False, setup=setup, error_statistics=ens, result=result,
                              attrs=ens.attrs, shards_resumed=computed.shards_resumed,
                              resumed_part_way=computed.resumed_part_way)

    def write_outputs(self, run: ConvergenceRun) -> None:
        convergence_run.write_outputs(run)

    def show(self, run: ConvergenceRun, cfg: DictConfig, console) -> None:
        convergence_run.show(run, console)

    def compared(self, plan) -> tuple[tuple[str, ...], np.ndarray]:
        """A weak study against the exact mean compares with it at T; any other study with nothing of the system's."""
        if plan.reference == "exact" and plan.error == "weak":
            return (plan.observable,), np.array([plan.T])
        return (), np.array([])


ENSEMBLE = _EnsembleKind()
STUDY = _StudyKind()
RUN_KINDS = (ENSEMBLE, STUDY)


def run_kind_of(plan) -> RunKind:
    """A convergence study's kind for its plan (``plan=convergence``: a ``ConvergencePlan``), else an ensemble's."""
    return STUDY if isinstance(plan, ConvergencePlan) else ENSEMBLE


@dataclasses.dataclass(frozen=True)
class SimulatorBuilder:
    """What a dask worker rebuilds a run's simulator from: the run's config as YAML text (resolved,
    Hydra's own node left out), never a pickled function. ``plan.shard_size: auto`` is written as
    this process settled it: a worker on another device keeps the same shard layout. A system class registered
    in this process (``systems.register``) is named by its module and qualified name (``system_class``): the
    worker imports it and registers it there too."""
    config: str
    system_class: tuple[str, str] | None = None

    @classmethod
    def of(cls, cfg, plan) -> SimulatorBuilder:
        content = {k: as_python(cfg[k]) for k in cfg if k != "hydra"}
        content["plan"] = {**content["plan"], "shard_size": plan.shard_size}
        name = content["system"]["name"]
        own = None
        if name not in systems.BUILT_IN:
            system = systems.SYSTEMS[name]
            if system.__module__ == "__main__" or "<locals>" in system.__qualname__:
                raise ConfigError("executor", content["executor"]["name"],
                                  f"local for the system {system.__qualname__} defined in {system.__module__} (a "
                                  "notebook or a function): its workers import it, from a module of its own")
            own = (system.__module__, system.__qualname__)
        return cls(OmegaConf.to_yaml(content), own)

    def __call__(self) -> Simulator:
        cfg = OmegaConf.create(self.config)
        if self.system_class is not None and cfg.system.name not in systems.SYSTEMS:
            import importlib
            module, qualname = self.system_class
            found = importlib.import_module(module)
            for part in qualname.split("."):
                found = getattr(found, part)
            systems.register(cfg.system.name, found)
        return simulator_of(build(cfg))


def checkpoints(cfg, run_dir: Path, plan) -> ShardStore:
    return ShardStore(Path(run_dir) / "shards", plan.shard_count, run_identity(cfg))


@jax_setup.scope()    # float64 for its own work, in any caller's process
def run(cfg: DictConfig, run_dir: Path | None = None, *, setup: BuiltConfig | None = None, progress: bool | None = None,
        on_shard_done: Callable | None = None, on_start: Callable[[], None] | None = None) -> RunResult:
    """Run the config ``cfg`` (from ``compose``) as a Monte Carlo ensemble, or a convergence study
    (``plan=convergence``: a ``ConvergenceRun``), and write its ``ensemble.h5`` (``convergence.h5``)
    and summary in ``run_dir`` (default: ``<output_root>/<system>-<integrator>/<config hash>``).
    ``setup`` is the BuiltConfig ``config.compose_setup`` built of ``cfg`` when it was validated (built here when
    not given). A finished run of the same config is reused (``cached``; ``cfg.cache`` decides what happens to
    one computed by other numerics code), an interrupted one resumes from its shard checkpoints.
    ``progress`` overrides ``cfg.progress`` (a bar on a terminal, lines otherwise, on stderr);
    ``on_shard_done(ShardResult)`` is called as each shard finishes; ``on_start()`` once the run holds its
    directory and nothing refused it, before it computes (a refused or cached run never calls it: the CLI
    writes Hydra's record of the job there). Raises ``ConfigError`` for what
    the config cannot run (e.g. a run directory holding another config's result). ``sgi_run.run`` is this,
    with the example, for the options a user sets.
    """
    # Built once: a given setup is the one validation built, its plan's shard_size: auto settled against the
    # memory available when the config was composed; the run keeps that plan rather than settling it again.
    setup = build(cfg) if setup is None else setup
    system, plan = setup.system, setup.plan
    kind = run_kind_of(plan)
    summary.check_reference_values(system, *kind.compared(plan))
    key, value = ("output_root", cfg.output_root) if run_dir is None else ("run_dir", run_dir)
    run_dir = Path(run_dir) if run_dir is not None else run_dir_for(cfg)
    path = run_dir / kind.file_name
    policy = cfg.get("cache", "reuse")
    wanted = config_hash(cfg)

    if not cache.writable(run_dir):
        # A read-only place may still hold the finished run: show it, write nothing.
        found = cache.lookup(path, wanted, policy, kind.load, run_code_digest(cfg))
        if found is None:
            cache.check_writable(run_dir, key, value)     # raises the one-line refusal
        return kind.finished(path, run_dir, found, setup)

    with cache.locked(run_dir):
        found = cache.lookup(path, wanted, policy, kind.load, run_code_digest(cfg))
        if found is not None:
            return _with_outputs(kind, kind.finished(path, run_dir, found, setup))
        sim = kind.simulator(setup)
        spec = executor.spec_of(as_python(cfg.executor))
        cluster = executor.connect(spec)   # a bad address: refused here
        shards = checkpoints(cfg, run_dir, sim.plan)
        _audit_checkpoints(shards, policy)
        if on_start is not None:
            on_start()
        at_once = 1 if cluster is not None else shards_at_once(spec, sim, setup, sim.plan.shard_count - len(shards.finished()))
        label = f"{cfg.system.name}/{cfg.integrator.name}"
        started = time.perf_counter()
        mode = _progress_mode(cfg, progress)
        if mode:
            _say(_planned(label, sim.plan, len(shards.finished()), levels=kind.levels(plan))
                 + f"; {memory_estimate(system, setup.integrator, plan, setup.reference_integrator).describe()}"
                 + (f"; on {cluster.where}" if cluster is not None else f"; {at_once} shards at once" if at_once > 1 else ""))
        with _stopped_by_write_failures(run_dir, shards):
            try:
                with _progress(mode, label, sim.plan, len(shards.finished())) as on_output:
                    result = run_shards(sim, shards, on_output, on_shard_done, cluster,
                                        SimulatorBuilder.of(cfg, plan) if cluster is not None else None, at_once)
            except KeyboardInterrupt:
                raise RunInterrupted(run_dir, len(shards.finished()), sim.plan.shard_count, len(shards.in_progress())) from None
            ens = _ensemble(cfg, sim, result, time.perf_counter() - started,
                            cluster.where if cluster is not None else spec.describe(at_once))
            # The file first, then what summarizes it: those of the file it replaces go before it does.
            for name in kind.outputs:
                (run_dir / name).unlink(missing_ok=True)
            written = kind.write(path, run_dir, sim, result, ens, setup)
            kind.write_outputs(written)
            shards.clear()
    return written


def _with_outputs(kind: RunKind, run: RunResult) -> RunResult:
    """A finished run, its summary written where a run stopped between its file and its summary (a full disk); a
    summary that cannot be written is said in a warning, the run still shown."""
    if not (run.run_dir / kind.outputs[-1]).exists():
        try:
            kind.write_outputs(run)
        except OSError as err:
            cache.warn(f"cannot write the summary of {run.path} ({err.strerror or err}); rerun to write it")
    return run


def shards_at_once(local: executor.Local, sim: Simulator, setup: BuiltConfig, pending: int) -> int:
    """How many shards executor=local computes at once: as asked, at most the shards left and those the
    memory holds, and one where a shard's programs call a library (``Simulator.calls_libraries``)."""
    at_once = min(local.thread_count, pending, fitting_shards(setup.system, setup.integrator, setup.plan,
                                                                  setup.reference_integrator))
    return 1 if at_once > 1 and sim.calls_libraries() else at_once


class WriteFailed(RuntimeError):
    """The run directory could not be written (a full disk, a quota, a read-only or unwritable place):
    the run stops, its finished shards kept; ``str`` is one line saying what to do."""

    # errno -> (what happened, what to do); any other error of ERRNOS: "cannot write", "make it writable"
    WORDS = {errno.ENOSPC: ("no space left on device", "free space"),
             errno.EDQUOT: ("disk quota exceeded", "free space"),
             errno.EFBIG: ("file too large for the file system", "free space")}
    ERRNOS = (*WORDS, errno.EROFS, errno.EACCES, errno.EPERM)

    def __init__(self, run_dir: Path, err: OSError, kept: int, shards: int):
        super().__init__(run_dir, err, kept, shards)
        self.run_dir, self.error, self.kept, self.shards = run_dir, err, kept, shards

    def __str__(self) -> str:
        what, advice = self.WORDS.get(self.error.errno, (f"cannot write ({self.error.strerror})", "make it writable"))
        return f"{what} in {self.run_dir}: {self.kept} of {self.shards} shards kept; {advice} and rerun to resume"


@contextlib.contextmanager
def _stopped_by_write_failures(run_dir: Path, shards: ShardStore):
    """A file of the run that cannot be written (a shard, the result, its tables) stops the run with
    WriteFailed; the writers leave no partial file behind (``ShardStore``, ``store.replace_atomically``)."""
    try:
        yield
    except OSError as err:
        if err.errno not in WriteFailed.ERRNOS:
            raise
        raise WriteFailed(run_dir, err, len(shards.finished()), shards.shard_count) from None


def _audit_checkpoints(shards: ShardStore, policy: str) -> None:
    """Keep only the checkpoints this very run may resume from: read whole, same config, same code."""
    cache.check_checkpoints(shards.directory.parent, shards.identity["config_hash"])   # another config's: refused
    if policy == "off":
        shards.clear()     # nothing reused, not even an interrupted run's checkpoints
        return
    for path in shards.files():
        try:
            found = shards.check(path)
        except DamagedCheckpoint as err:    # out of shards/, which goes when the run is whole
            cache.set_aside(path, str(err), into=shards.directory.with_name("shards.damaged"))
            continue
        if found["code_digest"] != shards.identity["code_digest"]:
            if policy == "refresh_stale":
                path.unlink()
                continue
            raise ConfigError("cache", policy, f"refresh_stale or off: checkpoint {path} was computed by other "
                              f"numerics code ({found['code_digest'] or 'unknown'}, now "
                              f"{shards.identity['code_digest']}) and would mix two codes' numbers")


def _ensemble(cfg, sim: Simulator, result, wall_time: float, where: str) -> store.Ensemble:
    plan = sim.plan
    m = result.moments
    mean, var, count = (sim.split_entries(x, 1) for x in (m.mean_or_nan, m.var, m.count))
    total = plan.paths * plan.steps
    solver = result.solver_name
    return store.Ensemble(
        t=plan.times,
        observables={name: {"mean": mean[name], "var": var[name], "count": count[name],
                            "nonfinite": plan.paths - count[name]} for name in sim.observable_names},
        paths=result.kept,
        snapshots=({"t_snapshot": plan.times[plan.snapshot_indices]} | sim.views(result.snapshots) if plan.snapshots else {}),
        time_averages=(sim.split_entries(result.time_averages, 1) if plan.time_average is not None else {}),
        diagnostics={"nonfinite_paths": result.nonfinite}
        | ({f"{solver}_{field.name}": getattr(result.solver, field.name)
            for field in dataclasses.fields(result.solver)} if solver else {}),
        invariant_drift={name: result.invariant_drift[:, j] for j, name in enumerate(sim.invariant_names)},
        attrs={"sgi_run_version": __version__, "code_digest": run_code_digest(cfg), "seed": plan.seed,
               "config": OmegaConf.to_yaml(cfg, resolve=True), "config_hash": config_hash(cfg),
               "system": cfg.system.name, "integrator": cfg.integrator.name,
               "paths": plan.paths, "shards": plan.shard_count,
               "path_steps": total, "wall_time_s": wall_time, "executor": where,
               "device": " and ".join(result.devices) or "unknown",
               "solver": solver or "none",
               "solver_iterations_per_step": float(np.sum(result.solver.iterations) / total),
               **({"time_average": list(plan.time_average)} if plan.time_average is not None else {})},
    )


# --- what the user sees while it runs ----------------------------------------------------------------
def _say(line: str) -> None:
    print(f"sgi-run: {line}", file=sys.stderr, flush=True)


def _progress_mode(cfg, progress: bool | None) -> str | None:
    """"bar" on a terminal, "lines" into a file or a pipe, None when off."""
    setting = cfg.get("progress", "auto") if progress is None else ("on" if progress else "off")
    if setting == "off":
        return None
    return "bar" if sys.stderr.isatty() else "lines"


def _planned(label: str, plan, resumed: int, levels: int = 0) -> str:
    total = plan.paths * plan.steps
    steps = f"{plan.steps} coarse steps of {levels} step sizes in lock-step" if levels else f"{plan.steps} steps"
    line = (f"{label}: {plan.paths} paths x {steps} = {total:.3g} path-steps in {plan.shard_count} "
            f"shard(s) of up to {plan.paths_per_shard} paths")
    return line + (f"; resuming {resumed} finished shard(s)" if resumed else "")


def _duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    minutes, s = divmod(int(round(seconds)), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{s:02d}s" if minutes else f"{s}s"


@contextlib.contextmanager
def _progress(mode: str | None, label: str, plan, resumed: int):
    """Yield the simulator's ``on_output(paths)`` callback: it advances a rich bar on a terminal, or
    prints a line every LINE_SECONDS (path-steps done, rate, time left) into a file or a pipe."""
    total = plan.paths * plan.steps
    done = sum(plan.shard_paths(s)[1] for s in range(resumed)) * plan.steps   # resumed shards
    if mode is None:
        yield None
        return
    started, first_done = time.perf_counter(), done
    if mode == "bar":
        from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                                   TimeRemainingColumn)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("path-steps"), TimeElapsedColumn(), TimeRemainingColumn()) as bar:
            task = bar.add_task(label, total=total, completed=done)
            yield lambda paths: bar.advance(task, paths * plan.steps_per_output)
        return
    last, timed = started, False

    def line(paths: int) -> None:
        nonlocal done, last, started, first_done, timed
        done += paths * plan.steps_per_output
        now = time.perf_counter()
        if not timed and done < total:
            # The first interval includes compiling: the rate (and time left) is timed from its end.
            started, first_done, last, timed = now, done, now, True
            return
        if now - last < LINE_SECONDS and done < total:
            return
        last = now
        rate = (done - first_done) / max(now - started, 1e-9)
        _say(f"{label}: {100 * done / total:.0f}% ({done:.3g} of {total:.3g} path-steps), "
             f"{rate:.3g} path-steps/s, {_duration((total - done) / rate) if rate > 0 else '?'} left")
    yield line
