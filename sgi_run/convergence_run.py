"""``plan=convergence``: a convergence study's outputs, and its run as a ``RunResult``.

``sgi_run.run(cfg)`` runs a study through the same pipeline as an ensemble (validation, run cache,
lock, shards and checkpoints, progress); the engine advances every step size in lock-step
(``engine.convergence``), and the result is a ``runner.ConvergenceRun``. ``write_study`` writes, in
the run's directory, its ``convergence.h5``, then ``write_outputs`` what summarizes it (each file whole or
not at all: the tables never stand beside another study's file or none):

- ``convergence.h5``: the study's engine statistics as an ``ensemble.h5`` (schema versioned,
  checksummed; ``observables/sq_error`` or ``difference``/``value`` per step size at every coarse
  step, every path's final values in ``time_averages``, solver diagnostics) and, at its root, the
  datasets ``dts``, ``error``, ``se``, ``local_slope``, ``resolvable``, ``nonfinite_paths``, ``order``,
  ``order_ci`` (and ``sup_error``, ``sup_se`` for strong studies; ``weak_error``, ``weak_se``,
  ``weak_resolvable``, ``weak_local_slope``, ``weak_order``, ``weak_order_ci`` for a strong study's
  ``plan.weak_observable``); attributes ``error_kind``, ``reference``, ``samples``, ``observable``,
  ``reference_dt``, ``T``, ``note`` besides a run's (and ``reference_method``, ``weak_observable``,
  ``weak_note``, ``reference_unconverged``, ``reference_stagnated`` where the study has them);
- ``convergence.csv`` / ``convergence.md``: dt, error, SE, local slope, fitted order [CI]; an implicit method's
  unconverged and stagnated lock-step path-steps (``summary.solver_counts``: the study's, not per step size);
- ``convergence.png``: log-log |error| against dt with ±2 SE bars and a reference slope.
"""
from __future__ import annotations

import csv
import io
from pathlib import Path

import h5py
import numpy as np

from sgi_run import markdown, store, summary
from sgi_run.engine.convergence import RESOLVABLE_SE, ConvergenceResult, WeakErrors, result_of

FILE_NAME = "convergence.h5"
# What ``write_outputs`` writes, in its order: a directory holding convergence.csv holds them all (the plot where
# there is a point to plot).
OUTPUTS = ("convergence.png", "convergence.md", "convergence.csv")
ERROR_BAR_SE = 2   # error bars: ±2 Monte Carlo standard errors
COLUMNS = ["system", "integrator", "error_kind", "reference", "observable", "dt", "error", "se",
           "local_slope", "resolvable", "nonfinite_paths", "order", "order_ci_low", "order_ci_high",
           "unconverged_steps", "stagnated_steps", "path_steps"]


def title(result: ConvergenceResult, attrs: dict) -> str:
    a = attrs
    what = "RMS error of the state" if a["error_kind"] == "strong" else f"error of E({a['observable']})"
    return (f"{a['system']} / {a['integrator']}: {a['error_kind']} convergence, {what} at T={a['T']:g} "
            f"against the {a['reference']} reference ({a['paths']} paths)")


def write_study(path: Path, sim, engine_result, ens: store.Ensemble) -> tuple[ConvergenceResult, list[dict]]:
    """The study's result from the engine's and its table rows, written to its ``convergence.h5`` (a directory
    holding it is a finished study). Adds the study's attributes to ``ens.attrs``."""
    plan = sim.system.plan
    result = result_of(sim, engine_result)
    ens.attrs |= {"error_kind": result.error_kind, "reference": result.reference, "samples": result.samples,
                  "observable": plan.observable if plan.error == "weak" else "state",
                  "reference_dt": plan.reference_dt or 0.0, "T": plan.T, "note": result.note,
                  "resolvable_se": result.resolvable_se, "invariants": list(result.invariants)}
    if plan.reference_method is not None:
        ens.attrs["reference_method"] = plan.reference_method
    if result.reference_unconverged is not None:
        ens.attrs |= {"reference_unconverged": result.reference_unconverged,
                      "reference_stagnated": result.reference_stagnated}
    if result.weak is not None:
        ens.attrs |= {"weak_observable": result.weak.observable, "weak_note": result.weak.note}
    store.write(path, ens, extra=lambda f: _fill(f, result))
    return result, table_rows_of(result, ens.attrs, summary.solver_counts(ens))


def write_outputs(run) -> None:
    """What summarizes a study's ``convergence.h5`` (a ``runner.ConvergenceRun``), in ``OUTPUTS``' order: its plot
    (none without an error to plot: every path went non-finite), convergence.md and convergence.csv."""
    if np.any(np.abs(run.result.error) > 0):
        plot(run.result, run.attrs, run.run_dir / OUTPUTS[0])
    write_tables(run.summary, run.run_dir, run.result, run.attrs, summary.solver_lines(run.error_statistics))


def _fill(f: h5py.File, result: ConvergenceResult) -> None:
    dts = store.create_checked_dataset(f, "dts", np.asarray(result.dts), description="step sizes")
    dts.make_scale("dts")      # the axis of every per-step-size result (netCDF readers name it)
    per_dt = {"error": result.error, "se": result.se, "resolvable": result.resolvable, "sup_error": result.sup_error,
              "sup_se": result.sup_se, "local_slope": result.local_slopes, "nonfinite_paths": result.nonfinite}
    for name, data in per_dt.items():
        if data is not None:
            store.create_series(f, name, np.asarray(data), dts)
    if result.drift_max is not None:
        store.create_series(f, "invariant_drift", np.asarray(result.drift_max), dts,
                            description="largest |I(z_k) - I(z_0)| over the paths and the step times, per invariant",
                            invariants=list(result.invariants))
    store.create_series(f, "order_ci", np.asarray(result.order_ci))
    store.create_checked_dataset(f, "order", result.order)
    if result.weak is not None:
        weak = result.weak
        for name, data in {"weak_error": weak.error, "weak_se": weak.se, "weak_resolvable": weak.resolvable,
                           "weak_local_slope": weak.local_slopes(result.dts)}.items():
            store.create_series(f, name, np.asarray(data), dts)
        store.create_series(f, "weak_order_ci", np.asarray(weak.order_ci))
        store.create_checked_dataset(f, "weak_order", weak.order)


def load_run(path) -> tuple[store.Ensemble, ConvergenceResult, dict]:
    """A ``convergence.h5`` back as (engine statistics, result, attributes); ``store.DamagedFile`` when it
    does not read back whole."""
    result, attrs = load(path)
    return store.load(path), result, attrs


def load(path) -> tuple[ConvergenceResult, dict]:
    """A ``convergence.h5`` (or the run directory holding one) back as a result and its attributes;
    ``store.DamagedFile`` when it does not read back whole."""
    path = Path(path)
    if path.is_dir():
        path = path / FILE_NAME
    data, attrs, _ = store.checked_read(path)
    try:
        result = ConvergenceResult(
            error_kind=attrs["error_kind"], reference=attrs["reference"], samples=attrs["samples"],
            dts=data["dts"], error=data["error"], se=data["se"], resolvable=data["resolvable"],
            order=float(data["order"]), order_ci=tuple(float(x) for x in data["order_ci"]),
            nonfinite=data["nonfinite_paths"], paths=int(attrs["paths"]), note=attrs["note"],
            sup_error=data.get("sup_error"), sup_se=data.get("sup_se"),
            resolvable_se=float(attrs.get("resolvable_se", RESOLVABLE_SE)),   # files before the option: 2
            invariants=tuple(attrs.get("invariants", ())), drift_max=data.get("invariant_drift"),
            weak=_weak_of(data, attrs), reference_unconverged=_count(attrs.get("reference_unconverged")),
            reference_stagnated=_count(attrs.get("reference_stagnated")))
    except KeyError as err:
        raise store.DamagedFile(f"{path}: missing {err.args[0]}") from None
    return result, attrs


def _weak_of(data: dict, attrs: dict) -> WeakErrors | None:
    """A strong study's weak error (plan.weak_observable) as written by ``_fill``; None in a file without it."""
    if "weak_observable" not in attrs:
        return None
    return WeakErrors(observable=attrs["weak_observable"], error=data["weak_error"], se=data["weak_se"],
                      resolvable=data["weak_resolvable"], order=float(data["weak_order"]),
                      order_ci=tuple(float(x) for x in data["weak_order_ci"]), note=attrs.get("weak_note", ""))


def _count(value) -> int | None:
    return None if value is None else int(value)


# --- tables ---------------------------------------------------------------------------------------
def table_rows_of(r: ConvergenceResult, a: dict, solver_counts: dict) -> list[dict]:
    """One row per step size; ``solver_counts`` (``summary.solver_counts``) counts lock-step path-steps of all step
    sizes together, so every row carries the same."""
    return [solver_counts | {"system": a["system"], "integrator": a["integrator"], "error_kind": r.error_kind,
             "reference": r.reference, "observable": a["observable"], "dt": float(dt),
             "error": float(e), "se": float(s), "local_slope": float(slope), "resolvable": bool(ok),
             "nonfinite_paths": int(bad), "order": r.order, "order_ci_low": r.order_ci[0],
             "order_ci_high": r.order_ci[1]} | drift_cells(r, i)
            for i, (dt, e, s, slope, ok, bad) in enumerate(zip(r.dts, r.error, r.se, r.local_slopes, r.resolvable,
                                                                r.nonfinite))]


def drift_cells(r: ConvergenceResult, level: int) -> dict:
    """``drift_<invariant>``: the largest drift of each declared invariant at one step size (none unless recorded)."""
    return {f"drift_{name}": float(r.drift_max[level, j]) for j, name in enumerate(r.invariants)}


def order_text(r: ConvergenceResult) -> str:
    if not np.isfinite(r.order):
        return "fitted order: none (see note)"
    ci = f" [{r.order_ci[0]:.3f}, {r.order_ci[1]:.3f}] (95% path bootstrap)" if np.all(np.isfinite(r.order_ci)) else ""
    return f"fitted order: {r.order:.3f}{ci}"


def _slope_text(v: float) -> str:
    return "-" if not np.isfinite(v) else f"{v:.3f}"


def write_tables(rows: list[dict], directory: Path, r: ConvergenceResult, attrs: dict, notes: list[str] = ()) -> None:
    """convergence.md, then ``notes`` (``summary.solver_lines``) as summary.md has them, and convergence.csv; each
    written whole or not at all."""
    table = io.StringIO(newline="")
    w = csv.DictWriter(table, fieldnames=COLUMNS + [f"drift_{name}" for name in r.invariants])
    w.writeheader()
    w.writerows(rows)
    drifts = [f"drift_{name}" for name in r.invariants]
    header = ["dt", "error ± SE", "local slope", "resolvable", *(f"largest drift of {n}" for n in r.invariants)]
    cells = [[f"{row['dt']:g}", f"{row['error']:.4g} ± {row['se']:.2g}", _slope_text(row["local_slope"]),
              "yes" if row["resolvable"] else "no", *(f"{row[d]:.3g}" for d in drifts)] for row in rows]
    lines = [f"# {title(r, attrs)}", "", *markdown.table(header, cells)]
    lines += ["", order_text(r) + "."]
    if r.note:
        lines += ["", f"Note: {r.note}."]
    lines += [""] + [f"**{note}.**" for note in notes] if notes else []
    for name, text in zip(OUTPUTS[1:], ["\n".join(lines) + "\n", table.getvalue()]):
        store.write_bytes_atomically(Path(directory) / name, text.encode())


def render(run):
    """The table for the terminal (rich) of a ``runner.ConvergenceRun``."""
    from rich.table import Table
    r = run.result
    table = Table(title=title(r, run.attrs))
    for c in ("dt", "error", "± SE", "local slope", f"|error| > {r.resolvable_se:g} SE",
              *(f"largest drift of {name}" for name in r.invariants)):
        table.add_column(c, justify="right")
    for row in run.summary:
        table.add_row(f"{row['dt']:g}", f"{row['error']:.4g}", f"{row['se']:.2g}",
                      _slope_text(row["local_slope"]), "yes" if row["resolvable"] else "[yellow]no[/]",
                      *(f"{row[f'drift_{name}']:.3g}" for name in r.invariants))
    caption = order_text(r)
    if r.note:
        caption += f"\n[yellow]{r.note}[/]"
    table.caption = caption
    return table


# --- convergence.png --------------------------------------------------------------------------------
def plot(r: ConvergenceResult, attrs: dict, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")   # files only; never a window (tests and headless machines)
    import matplotlib.pyplot as plt

    err = np.abs(r.error)
    # A log axis cannot show a bar reaching zero: an unresolvable point's bar stops a decade below
    # it (its open marker says the interval holds zero).
    lower = np.minimum(ERROR_BAR_SE * r.se, 0.9 * err)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.errorbar(r.dts, err, yerr=[lower, ERROR_BAR_SE * r.se], fmt="none", ecolor="C0", capsize=3)
    ax.plot(r.dts[r.resolvable], err[r.resolvable], "o-", color="C0", label=f"|error|, ±{ERROR_BAR_SE} SE")
    if (~r.resolvable).any():
        ax.plot(r.dts[~r.resolvable], err[~r.resolvable], "o", mfc="none", color="C0",
                label=f"not resolvable (|error| <= {r.resolvable_se:g} SE)")
    if np.isfinite(r.order):
        # Reference slope: the nearest whole order, through the finest resolvable point.
        p = max(1, round(r.order))
        anchor = np.flatnonzero(r.resolvable)[-1]
        ax.plot(r.dts, err[anchor] * (r.dts / r.dts[anchor]) ** p, "k--", lw=1, label=f"slope {p}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dt")
    ax.set_ylabel("RMS error at T" if r.error_kind == "strong" else f"|E({attrs['observable']}) error| at T")
    ax.set_title(f"{attrs['system']} / {attrs['integrator']}: {r.error_kind}, {order_text(r)}", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=130)
    plt.close(fig)
    return store.write_bytes_atomically(path, image.getvalue())


def show(run, console) -> None:
    """What ``sgi-run ... plan=convergence`` prints: the table, what went wrong in it (as an ensemble's), then where
    the files are."""
    console.print(render(run))
    nonfinite = int(np.sum(run.result.nonfinite))
    if run.failed:
        console.print(f"[bold red]FAILED: {run.failure()}[/]")
    elif nonfinite:
        console.print(f"[yellow]{nonfinite} path(s) went non-finite; excluded and counted in nonfinite_paths[/]")
    summary.show_solver_lines(console, run.error_statistics)
    resumed = f"; {run.resumed()}" if run.resumed() else ""
    tables = ", ".join(name.removeprefix("convergence") for name in reversed(OUTPUTS) if (run.run_dir / name).exists())
    console.print(f"{'cached' if run.cached else 'wrote'} {run.path} (and convergence{tables}){resumed}")
