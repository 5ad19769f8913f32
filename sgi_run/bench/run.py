"""Running the suite: every fitting cell's convergence study, every system's timing series, the verdicts.

Per system: its cells (``bench.cells``); for each one that fits, one convergence study (``plan=convergence``)
run through ``sgi_run``'s own pipeline, so it is cached by its config hash, resumed from its shard checkpoints
when interrupted, and run on the executor asked for (``--executor dask``). Every study of a system has the same
plan: the same seed, step sizes, truncation and paths, so every method sees the same Brownian paths, and the same
reference (the exact solution, or one method at the finest grid / refine: ``plan.reference_method``). A method
driven by Gaussian increments gets a strong study that also measures the weak error of the system's observable on
the same paths (``plan.weak_observable``); one driven by three-point variables a weak study. Then the system's
methods are timed in one series on this device (``work_precision.measure``: kept and resumed by round).

The results are written after each system (``bench.results``), so an interrupted suite keeps every system it
finished, and a rerun reuses every finished study and timing series and continues where it stopped.
"""
from __future__ import annotations

import dataclasses
import gc
import math
import time
from collections.abc import Callable, Sequence

import jax

from sgi_run import summary, work_precision
from sgi_run.bench import verdicts
from sgi_run.bench.cells import Cell, SystemFacts, cells_of, integrator_options
from sgi_run.bench.suite import Fidelity, Suite, SystemEntry
from sgi_run.composition import ConfigSource
from sgi_run.config import compose_setup, config_hash
from sgi_run.convergence_run import drift_cells
from sgi_run.integrators.claims import claims_of
from sgi_run.runner import run

SEED = 0
BOOTSTRAP = 200


def study_overrides(entry: SystemEntry, cell: Cell, fidelity: Fidelity, runs_root: str | None = None,
                    cache: str | None = None, executor: Sequence[str] = (), invariants: bool = True) -> list[str]:
    """The overrides of a cell's study: the system's, the method, and the plan every method of the system shares
    (``invariants``: the system declares some, whose drifts every study records)."""
    dts = entry.dts[:fidelity.levels]
    paths = entry.scaled_paths(fidelity.paths, least=10)
    plan = ["plan=convergence", f"plan.error={cell.error_kind}", f"plan.T={entry.T}",
            f"plan.dts=[{','.join(repr(d) for d in dts)}]", f"plan.paths={paths}", f"plan.seed={SEED}",
            f"plan.bootstrap={BOOTSTRAP}", f"plan.invariants={'declared' if invariants else 'none'}",
            f"plan.truncate={'null' if entry.truncate is None else entry.truncate}"]
    if entry.exact:
        plan.append("plan.reference=exact")
    else:
        plan += ["plan.reference=fine", f"plan.reference_refine={entry.refine}",
                 f"plan.reference_method={entry.reference}"]
    plan.append(f"plan.weak_observable={entry.observable}" if cell.error_kind == "strong"
                else f"plan.observable={entry.observable}")
    where = ([f"output_root={runs_root}"] if runs_root else []) + ([f"cache={cache}"] if cache else [])
    return [*entry.overrides, f"integrator={cell.integrator}", *plan, "progress=off", *where, *executor]


@dataclasses.dataclass
class SystemResult:
    """One system's measurements: its facts, its cells (fitting or not) and one row per fitting cell and step size."""
    entry: SystemEntry
    facts: SystemFacts | None
    cells: list[dict]
    rows: list[dict]
    wall_s: float


@dataclasses.dataclass
class PreparedSystem:
    """A system's cells and every fitting cell's validated study (config and BuiltConfig), before any compute."""
    entry: SystemEntry
    cells: list[Cell]
    composed: dict                  # integrator -> (cfg, BuiltConfig)
    facts: SystemFacts | None


def prepare_system(entry: SystemEntry, fidelity: Fidelity, *, runs_root: str | None = None, cache: str | None = None,
                   executor: Sequence[str] = (), integrators: Sequence[str] | None = None,
                   source: ConfigSource = ConfigSource()) -> PreparedSystem:
    """The system's cells, and the study of each that fits, validated (a bad one refused here, in one line)."""
    cells = cells_of(entry.name, entry.overrides, integrators or integrator_options(source), source)
    fitting = [c for c in cells if c.fits]
    if not fitting:
        return PreparedSystem(entry, cells, {}, None)
    facts = SystemFacts.of(compose_setup([*entry.overrides, f"integrator={fitting[0].integrator}"], source)[1].system)
    composed = {c.integrator: compose_setup(study_overrides(entry, c, fidelity, runs_root, cache, executor,
                                                            bool(facts.invariants)), source)
                for c in fitting}
    return PreparedSystem(entry, cells, composed, facts)


def run_system(prepared: PreparedSystem, fidelity: Fidelity, *, cache: str | None = None,
               source: ConfigSource = ConfigSource(), log: Callable[[str], None] = print) -> SystemResult:
    """Every fitting cell's study (cached, resumable), the system's timing series, and the rows and verdicts."""
    started = time.perf_counter()
    entry, composed = prepared.entry, prepared.composed
    studies, cell_rows, rows = {}, [], []
    for n, (method, (cfg, setup)) in enumerate(composed.items(), 1):
        log(f"[{entry.name} {n}/{len(composed)}] {method}: {cfg.plan.error} study")
        cell_started = time.perf_counter()
        studies[method] = (cfg, setup, run(cfg, setup=setup))
        jax.clear_caches()      # its programs (see run_suite): the timing series compiles its own
        log(f"    {'cached' if studies[method][2].cached else 'ran'} in "
            f"{time.perf_counter() - cell_started:.1f} s: {studies[method][2].run_dir}")
    costs = {}
    if studies:
        first = next(iter(studies.values()))[0]
        costs, path, reused = work_precision.measure(
            {m: (s.system, s.integrator, s.plan) for m, (_, s, _) in studies.items()},
            {m: config_hash(cfg) for m, (cfg, _, _) in studies.items()}, entry.scaled_paths(fidelity.cost_paths),
            fidelity.cost_repeats,
            root=first.output_root, cache=cache or first.cache, log=log)
        log(f"    timings {'cached' if reused else 'kept'}: {path}")
    for cell in prepared.cells:
        if not cell.fits:
            cell_rows.append(_cell_row(entry, cell, prepared.facts) | {"reason": cell.reason})
            continue
        _, setup, result = studies[cell.integrator]
        row, per_dt = _measured(entry, cell, prepared.facts, setup, result, costs[cell.integrator], source)
        cell_rows.append(row)
        rows += per_dt
    return SystemResult(entry, prepared.facts, cell_rows, rows, time.perf_counter() - started)


def _cell_row(entry: SystemEntry, cell: Cell, facts: SystemFacts | None) -> dict:
    return {"system": entry.name, "integrator": cell.integrator, "fits": cell.fits, "reason": "",
            "noise_class": facts.noise_class if facts else "", "noise_kind": cell.noise_kind,
            "error_kind": cell.error_kind if cell.fits else ""}


def _measured(entry: SystemEntry, cell: Cell, facts: SystemFacts, setup, study, cost, source) -> tuple[dict, list[dict]]:
    """A fitting cell's summary row (its orders, claims and verdicts) and its rows per step size."""
    r, attrs = study.result, study.attrs
    claims = claims_of(cell.integrator, source)
    counts = summary.solver_counts(study.error_statistics)
    unconverged = int(counts["unconverged_steps"] or 0)
    stagnated = int(counts["stagnated_steps"] or 0)
    nonfinite = int(max(r.nonfinite)) if len(r.nonfinite) else 0
    claimed = verdicts.claimed_order(claims, r.error_kind, facts.noise_class)
    weak = getattr(r, "weak", None)
    # The weak error: a weak study's own, or the one a strong study measured on its paths.
    w = r if r.error_kind == "weak" else weak
    weak_claimed = verdicts.claimed_order(claims, "weak", facts.noise_class)
    kept = verdicts.kept_invariants(claims.keeps, facts.structure, facts.invariants, facts.quadratic)
    drifts = ({name: float(max(r.drift_max[:, k])) for k, name in enumerate(r.invariants)}
              if r.drift_max is not None else {})
    row = _cell_row(entry, cell, facts) | {
        "family": setup.integrator.family, "paths": r.paths, "reference": entry.describe_reference(),
        "observable": entry.observable,
        "strong_order": r.order if r.error_kind == "strong" else math.nan,
        "strong_ci_low": r.order_ci[0] if r.error_kind == "strong" else math.nan,
        "strong_ci_high": r.order_ci[1] if r.error_kind == "strong" else math.nan,
        "strong_claimed": claimed if r.error_kind == "strong" else None,
        "strong_verdict": (verdicts.order_verdict(claimed, r.order, r.order_ci, unconverged=unconverged,
                                                  nonfinite=nonfinite) if r.error_kind == "strong" else "NOT MEASURED"),
        "weak_order": w.order if w is not None else math.nan,
        "weak_ci_low": w.order_ci[0] if w is not None else math.nan,
        "weak_ci_high": w.order_ci[1] if w is not None else math.nan,
        "weak_claimed": weak_claimed,
        "weak_verdict": (verdicts.order_verdict(weak_claimed, w.order, w.order_ci, unconverged=unconverged,
                                                nonfinite=nonfinite) if w is not None else "NOT MEASURED"),
        "kept_claimed": " ".join(kept),
        "invariant_verdict": verdicts.invariant_verdict(kept, drifts, facts.invariant_sizes, unconverged=unconverged),
        "largest_drift": max(drifts.values(), default=math.nan),
        "unconverged_steps": unconverged, "stagnated_steps": stagnated, "nonfinite_paths": nonfinite,
        "study_wall_s": float(attrs.get("wall_time_s", study.statistics.attrs.get("wall_time_s", math.nan))),
        "cached": bool(study.cached), "run_dir": str(study.run_dir), "claims_source": claims.source}
    per_dt = []
    for i, (dt, j) in enumerate(zip(r.dts, cost.at(r.dts))):
        strong = r.error_kind == "strong"
        per_dt.append({"system": entry.name, "integrator": cell.integrator, "error_kind": r.error_kind, "dt": float(dt),
                       "strong_error": float(r.error[i]) if strong else math.nan,
                       "strong_se": float(r.se[i]) if strong else math.nan,
                       "strong_resolvable": bool(r.resolvable[i]) if strong else False,
                       "weak_error": float(w.error[i]) if w is not None else math.nan,
                       "weak_se": float(w.se[i]) if w is not None else math.nan,
                       "weak_resolvable": bool(w.resolvable[i]) if w is not None else False,
                       "nonfinite_paths": int(r.nonfinite[i])}
                      | work_precision.cost_columns(cost, j) | drift_cells(r, i))
    return row, per_dt


def run_suite(suite: Suite, fidelity: str, write: Callable[[list[SystemResult], bool, float], None], *,
              runs_root: str | None = None, cache: str | None = None, executor: Sequence[str] = (),
              source: ConfigSource = ConfigSource(), methods: Sequence[str] | None = None,
              log: Callable[[str], None] = print) -> list[SystemResult]:
    """Every system of ``suite`` at ``fidelity`` with every integrator option (or only ``methods``);
    ``write(results so far, complete, wall seconds)`` after each system."""
    profile = suite.fidelity(fidelity)
    started = time.perf_counter()
    integrators = list(methods) if methods else integrator_options(source)
    log(f"validating the studies of {len(suite.systems)} systems")
    # Every system's studies are validated before the first computes: a bad one is refused before any compute.
    prepared = [prepare_system(entry, profile, runs_root=runs_root, cache=cache, executor=executor,
                               integrators=integrators, source=source) for entry in suite.systems.values()]
    results = []
    for system in prepared:
        results.append(run_system(system, profile, cache=cache, source=source, log=log))
        write(results, len(results) == len(prepared), time.perf_counter() - started)
        # Each study compiles programs of its own that nothing later runs: JAX keeps every one, and a whole suite
        # in one process grew past the 2-core machine's 23 GB (the compiler then failed for want of memory).
        jax.clear_caches()
        gc.collect()
    return results
