"""Making one figure (``make_figure``): composing and running its runs, their data and table rows, judging its
checks, drawing it and writing its files (``tables``) and record (``records``).

``make_figure`` runs what is missing (runs are cached by config hash), draws the PNG, writes the figure's table
(``.csv``, ``.md``), its verdicts (``_checks.md``) and a ``.json`` record the gallery is built from.
"""
from __future__ import annotations

import dataclasses
import math
import time
from pathlib import Path
from collections.abc import Callable, Sequence

import numpy as np
from omegaconf import DictConfig

from sgi_run import work_precision
from sgi_run.config import BuiltConfig, ConfigSource, compose_setup, config_hash
from sgi_run.convergence_run import drift_cells
from sgi_run.core.errors import require
from sgi_run.core.noise import truncation_bound
from sgi_run.engine.linear_oracle import method_moments
from sgi_run.figures import checks as checks_mod
from sgi_run.figures.experiment import Experiment, RunSpec, check_against_runs
from sgi_run.figures.records import figure_files, figure_provenance, figure_record, seal, staged, write_record
from sgi_run.figures.results import FAIL, SOLVER_STATISTICS, Band, CheckResult, RunData, Series, StudyData
from sgi_run.figures.statistics import departure, has_path_averages, window_average
from sgi_run.figures.tables import TABLE_COLUMNS, drift_column, write_checks, write_table
from sgi_run.runner import ConvergenceRun, EnsembleRun, run
from sgi_run.summary import max_relative_error, solver_counts, unconverged_line


@dataclasses.dataclass
class FigureOutcome:
    experiment: Experiment
    fidelity: str
    table: list[dict]            # one row per ensemble run
    checks: list[CheckResult]
    files: dict[str, Path]
    convergence: list[dict] = dataclasses.field(default_factory=list)   # one row per study and step size

    @classmethod
    def from_record(cls, exp: Experiment, record: dict, files: dict[str, Path]) -> FigureOutcome:
        """The outcome a figure's JSON record keeps (a figure kept, not made again: ``kept_record``)."""
        return cls(exp, record["fidelity"], record["table"], [CheckResult.from_record(c) for c in record["checks"]], files,
                   record.get("convergence", []))


def _run_data(result: EnsembleRun, cfg, observable: str, oracle: str | None) -> RunData:
    """The run's curves (one per recorded observable; the method oracle for ``observable``)."""
    ens = result.ensemble
    setup = result.setup
    require(f"{cfg.system.name}/{cfg.integrator.name}: plan.observables", list(ens.observables),
            observable in ens.observables, f"a list including the experiment's observable {observable}")
    series = {}
    for name in ens.observables:
        exact = setup.system.reference_mean(name)
        oracle_mean = oracle_sem = None
        if oracle == "linear_moments" and name == observable:
            moments = method_moments(setup.system, setup.integrator, setup.plan)
            oracle_mean, oracle_sem = moments.mean_H, moments.expected_sem(setup.plan.paths)
        window = setup.plan.time_average
        series[name] = Series(ens.t, ens.mean(name), ens.sem(name), None if exact is None else exact(ens.t),
                              oracle_mean, oracle_sem, ens.time_averages.get(name), window, ens.paths.get(name))
    return RunData(series, observable, setup.system, lambda t: ens.snapshot(t) if ens.has_snapshot(t) else None, setup.plan.paths,
                   ens.diagnostics.get("nonfinite_paths"), dict(ens.paths), float(setup.plan.dt),
                   _solver_statistics(ens), tuple(float(t) for t in ens.snapshots["t_snapshot"]) if ens.snapshots else (),
                   setup.integrator, truncation_bound(setup.plan.truncate, float(setup.plan.dt)))


def _solver_statistics(ens) -> dict[str, float]:
    """results.SOLVER_STATISTICS of a run from its per-interval solver diagnostics (none for explicit methods)."""
    solver = ens.attrs.get("solver", "none")
    if solver == "none" or f"{solver}_iterations" not in ens.diagnostics:
        return {}
    d, counts = ens.diagnostics, solver_counts(ens)
    unconverged, path_steps = float(counts["unconverged_steps"]), float(counts["path_steps"])
    return {"per_step": float(np.sum(d[f"{solver}_iterations"])) / path_steps,
            "max_iterations": float(np.max(d[f"{solver}_max_iterations"])),
            "unconverged_steps": unconverged, "unconverged_fraction": unconverged / path_steps}


def _drifts(exp: Experiment, data: RunData) -> dict:
    """The experiment's ``drift`` columns of one run: max_t |x(t) - x(0)| (divided by |x(0)| when relative) along
    its kept path 0 over the output times, what the figure draws of a single realisation; a non-finite value is
    the largest drift there is. Empty where the run does not record the observable."""
    row = {}
    for observable, relative in exp.drift:
        key = drift_column(observable, relative)
        if observable not in data.series:
            row[key] = ""
            continue
        x = data.curve(observable).require_kept(f"the table's drift of {observable}")
        drift = np.abs(departure(x, x[0], relative))
        row[key] = float(np.max(np.where(np.isfinite(drift), drift, np.inf)))
    return row


def sign_changes(values) -> bool:
    """Whether the finite, non-zero values take both signs: a mean that crosses 0, whose SE/|E| has no meaning
    (it grows without bound near the crossing). An exact 0 (a deterministic start at 0) is no crossing."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values) & (values != 0)]
    return bool(np.any(values > 0) and np.any(values < 0))


def _table_row(exp: Experiment, spec: RunSpec, cfg, result: EnsembleRun, data: RunData) -> dict:
    """The run's row: the experiment's observable (``data``'s default curve) at T, against the exact value, over
    the window. A single realisation (one path) has no Monte Carlo SE: its SE columns are left empty."""
    s = data.curve(None)
    single = cfg.plan.paths == 1
    row = {"run": spec.id, "label": spec.label, "integrator": cfg.integrator.name, "dt": cfg.plan.dt,
           "dt_source": spec.dt_source, "paths": cfg.plan.paths, "T": cfg.plan.T,
           "mean_T": float(s.mean[-1]), "sem_T": "" if single else float(s.sem[-1]),
           "max_rel_mc_error": "" if single else max_relative_error(s.mean, s.sem),
           "mean_sign_changes": "" if single else sign_changes(s.mean),
           "nonfinite_paths": int(np.max(result.ensemble.diagnostics["nonfinite_paths"])),
           "solver_per_step": data.solver_statistic("per_step"),
           "solver_max_iterations": data.solver_statistic("max_iterations"),
           "unconverged_steps": data.solver_statistic("unconverged_steps"),
           "wall_time_s": float(result.ensemble.attrs.get("wall_time_s", math.nan)), "cached": result.cached,
           "stale": result.stale}
    # Throughput of the run as it ran (compilation included): what a researcher choosing a method compares.
    wall = row["wall_time_s"]
    row["path_steps_per_s"] = float(result.ensemble.attrs.get("path_steps", math.nan)) / wall if wall > 0 else math.nan
    if single:
        # One path is no ensemble: its row compares the path with its own value at t = 0 (H(T)/H(0), the
        # largest |H(t) - H(0)|), never with the ensemble's exact mean. Divided by E(H)_exact = 1, Figure 4.10's
        # DIRK path (H(0) about 0.48) read "ratio 0.4961", as if it had lost half its energy.
        change = np.abs(s.mean - s.mean[0])
        worst = int(np.argmax(np.where(np.isnan(change), np.inf, change)))
        row.update(start_value=float(s.mean[0]),
                   ratio_to_start=float(s.mean[-1] / s.mean[0]) if s.mean[0] != 0 else math.nan,
                   max_abs_change=float(change[worst]), t_max_abs_change=float(s.t[worst]))
    elif s.exact is not None:
        err = np.abs(s.mean - s.exact)
        worst = int(np.argmax(np.where(np.isnan(err), np.inf, err)))
        row.update(exact_T=float(s.exact[-1]), ratio_T=float(s.mean[-1] / s.exact[-1]),
                   max_abs_error=float(err[worst]), t_max_abs_error=float(s.t[worst]))
    window = window_average(s, *exp.window) if exp.window else None
    if window is not None:
        row.update(window_mean=window[0], window_se="" if single else window[1],
                   window_se_exact="" if single else has_path_averages(s, *exp.window))
    return {c: row.get(c, "") for c in TABLE_COLUMNS} | _drifts(exp, data)


def _study_rows(spec: RunSpec, cfg, result: ConvergenceRun) -> list[dict]:
    r, a = result.result, result.attrs
    run = {"run": spec.id, "label": spec.label, "integrator": cfg.integrator.name, "dt_source": spec.dt_source,
           "error_kind": r.error_kind, "reference": r.reference, "observable": a["observable"], "paths": r.paths,
           "T": float(a["T"]), "order": float(r.order), "order_ci_low": float(r.order_ci[0]),
           "order_ci_high": float(r.order_ci[1]), "wall_time_s": float(a.get("wall_time_s", math.nan)),
           "cached": result.cached, "stale": result.stale}
    return [run | {"dt": float(dt), "error": float(e), "se": float(se), "resolvable": bool(ok),
                   "local_slope": float(slope), "nonfinite_paths": int(bad)} | drift_cells(r, i)
            for i, (dt, e, se, ok, slope, bad) in enumerate(zip(r.dts, r.error, r.se, r.resolvable, r.local_slopes,
                                                                r.nonfinite))]


def _describe(cfg) -> str:
    """The log line of a run: what it computes."""
    plan = cfg.plan
    if plan.get("kind") == "convergence":
        return (f"{cfg.integrator.name} {plan.error} convergence, dts={list(plan.dts)} paths={plan.paths} "
                f"T={plan.T}")
    return f"{cfg.integrator.name} dt={plan.dt} paths={plan.paths} T={plan.T}"


def compose_runs(exp: Experiment, fidelity: str, runs_root: str | None = None, cache: str | None = None,
                 executor: Sequence[str] = (), source: ConfigSource = ConfigSource()) -> dict:
    """Every run's validated config: a bad override is refused here, before any compute."""
    return {run_id: cfg for run_id, (cfg, _) in compose_run_setups(exp, fidelity, runs_root, cache, executor, source).items()}


def compose_run_setups(exp: Experiment, fidelity: str, runs_root: str | None = None, cache: str | None = None,
                       executor: Sequence[str] = (), source: ConfigSource = ConfigSource()
                       ) -> dict[str, tuple[DictConfig, BuiltConfig]]:
    """Every run's validated config and the BuiltConfig its validation built (``config.compose_setup``), which the
    run uses: built once, then checked against what the figure's panels and checks ask of them
    (``check_against_runs``). ``source``: where its configs are found (a user's ``--config-dir`` adds theirs)."""
    composed = {run_id: compose_setup(exp.overrides(run_id, fidelity, runs_root, cache, executor), source)
                for run_id in exp.runs}
    check_against_runs(exp, {run_id: setup for run_id, (_, setup) in composed.items()})
    return composed


def make_figure(exp: Experiment, fidelity: str, output_dir, runs_root: str | None = None,
                log: Callable[[str], None] = print, cache: str | None = None,
                executor: Sequence[str] = (), composed: dict | None = None, command: str | None = None,
                source: dict | None = None) -> FigureOutcome:
    """Run the figure's missing runs, draw it, write its table, verdicts and record. ``composed``: its runs as
    ``compose_run_setups`` validated them (``sgi-figures`` validates every figure's before the first computes);
    composed here when not given. ``command``: what the record names as the command that made it (default: the
    ``sgi-figures`` command that makes this figure alone). ``source``: the sgi-run commit whose code computes it
    (``provenance.source_commit()`` when the process started; default: now, which a checkout changed since names
    wrongly)."""
    from sgi_run.figures import plots   # matplotlib only when a figure is drawn

    started = time.perf_counter()
    composed = compose_run_setups(exp, fidelity, runs_root, cache, executor) if composed is None else composed
    configs = {run_id: cfg for run_id, (cfg, _) in composed.items()}
    results, data = {}, {}
    for n, (run_id, (cfg, setup)) in enumerate(composed.items(), 1):
        log(f"[{exp.figure} {n}/{len(composed)}] {run_id}: {_describe(cfg)}")
        r = results[run_id] = run(cfg, setup=setup)
        data[run_id] = (StudyData(r.result, r.attrs["observable"], float(r.attrs["T"])) if isinstance(r, ConvergenceRun)
                        else _run_data(r, cfg, exp.observable, exp.oracle))
        seconds = r.statistics.attrs.get("wall_time_s", math.nan)
        stale = " by other numerics code: --cache refresh_stale recomputes it" if r.stale else ""
        log(f"    cached (computed in {seconds:.1f} s{stale}): {r.run_dir}" if r.cached
            else f"    ran in {seconds:.1f} s: {r.run_dir}")

    timed = list(dict.fromkeys(run_id for panel in exp.panels if panel.get("quantity") == "work_precision"
                               for run_id in panel["runs"]))
    precision = []
    if timed:
        costs, path, reused = work_precision.measure(
            {i: (composed[i][1].system, composed[i][1].integrator, composed[i][1].plan) for i in timed},
            {i: config_hash(configs[i]) for i in timed}, **exp.fidelity[fidelity]["cost"],
            root=configs[timed[0]].output_root, cache=cache or configs[timed[0]].cache, log=log)
        log(f"    timings {'cached' if reused else 'kept'}: {path}")
        for i in timed:
            data[i] = dataclasses.replace(data[i], cost=costs[i])
            precision += work_precision.rows(i, exp.runs[i].label, data[i].result, costs[i])

    table = [_table_row(exp, exp.runs[i], configs[i], results[i], data[i])
             for i in exp.runs if i not in exp.studies]
    studies = [row for i in exp.runs if i in exp.studies for row in _study_rows(exp.runs[i], configs[i], results[i])]
    per_run = {row["run"]: row for row in table + studies}     # a row of each run: its label, paths and T
    verdicts = [checks_mod.evaluate(spec, spec["run"], data[spec["run"]], data) for spec in exp.checks]
    verdicts += _unconverged_verdicts(exp, results)

    files = figure_files(exp, output_dir)
    with staged(files) as stage:     # the figure's files replace its old ones only once all are written
        plots.draw(exp, data, [per_run[i] for i in exp.runs], fidelity, stage["png"])
        write_table(exp, fidelity, table, stage, studies, precision, verdicts, _panel_tables(exp, data))
        write_checks(exp, fidelity, verdicts, stage["checks"])
        write_record(stage["json"], seal(figure_record(exp, fidelity, table, studies, precision, verdicts, files, configs, results,
                                                 figure_provenance(exp, fidelity, results, time.perf_counter() - started,
                                                             command, source)), stage))
    return FigureOutcome(exp, fidelity, table, verdicts, files, studies)


def _unconverged_verdicts(exp: Experiment, results: dict) -> list[CheckResult]:
    """A FAIL for each run some of whose solves did not converge (its numbers are not the method's), unless
    the figure studies exactly that (``unconverged_steps: studied``); nothing for runs whose solves converged."""
    if exp.unconverged_steps == "studied":
        return []
    lines = {run_id: unconverged_line(r.statistics) for run_id, r in results.items()}
    return [CheckResult(id="solves_converge", kind="solver_statistic", run=run_id,
                        criterion="every implicit solve of the run converges (the experiment does not declare "
                                  "unconverged_steps: studied)", quantity=SOLVER_STATISTICS["unconverged_steps"],
                        verdict=FAIL, value=float(solver_counts(results[run_id].statistics)["unconverged_steps"]),
                        se=None, t=None, band=str(Band(None, 0)), margin_se=None, detail=line)
            for run_id, line in lines.items() if line]


def _panel_tables(exp: Experiment, data: dict) -> list[tuple]:
    """The tables of the figure's panels whose kind makes one (panels.PanelKind.table): the values they draw."""
    from sgi_run.figures.panels import PANEL_KINDS

    kinds = [PANEL_KINDS[panel["quantity"]] for panel in exp.panels]
    return [kind.table(panel, data) for panel, kind in zip(exp.panels, kinds) if kind.table]
