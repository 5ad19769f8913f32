"""``plan=convergence``: a convergence study run from a composed config, and its outputs.

``run_convergence(cfg)`` validates (``config.build``) before any compute, runs the study of
``engine.convergence`` and writes, in the run's directory (``config.run_dir_for``, as a normal run):

- ``convergence.h5``: datasets ``dts``, ``error``, ``se``, ``local_slope``, ``resolvable``,
  ``nonfinite_paths``, ``order``, ``order_ci``; attributes ``config`` (resolved YAML),
  ``config_hash``, ``seed``, ``sgi_run_version``, ``error_kind``, ``reference``, ``samples``,
  ``observable``, ``paths``, ``T``, ``note``, ``wall_time_s``;
- ``convergence.csv`` / ``convergence.md``: dt, error, SE, local slope, fitted order [CI];
- ``convergence.png``: log-log |error| against dt with ±2 SE bars and a reference slope.

The h5 is written last, under a temporary name and renamed: a directory holding it is a finished
study, and the same config returns it without recomputing.
"""
from __future__ import annotations

import csv
import dataclasses
import time
from pathlib import Path

import h5py
import numpy as np
from omegaconf import DictConfig, OmegaConf

from sgi_run import __version__, cache, provenance, store
from sgi_run.config import build, config_hash, run_dir_for
from sgi_run.engine.convergence import RESOLVABLE_SE, ConvergenceResult, study

ERROR_BAR_SE = 2   # error bars: ±2 Monte Carlo standard errors
COLUMNS = ["system", "integrator", "error_kind", "reference", "observable", "dt", "error", "se",
           "local_slope", "resolvable", "nonfinite_paths", "order", "order_ci_low", "order_ci_high"]


@dataclasses.dataclass
class ConvergenceRun:
    path: Path                 # the convergence.h5
    run_dir: Path
    result: ConvergenceResult
    attrs: dict
    cached: bool               # True when the file existed and nothing was computed

    @property
    def title(self) -> str:
        a = self.attrs
        what = "RMS error of the state" if a["error_kind"] == "strong" else f"error of E({a['observable']})"
        return (f"{a['system']} / {a['integrator']}: {a['error_kind']} convergence, {what} at T={a['T']:g} "
                f"against the {a['reference']} reference ({a['paths']} paths)")


def run_convergence(cfg: DictConfig, run_dir: Path | None = None) -> ConvergenceRun:
    setup = build(cfg)
    plan = setup.plan
    key, value = ("output_root", cfg.output_root) if run_dir is None else ("run_dir", run_dir)
    run_dir = Path(run_dir) if run_dir is not None else run_dir_for(cfg)
    path = run_dir / "convergence.h5"
    wanted, policy = config_hash(cfg), cfg.get("cache", "reuse")

    def finished(found: cache.Cached) -> ConvergenceRun:
        return ConvergenceRun(path, run_dir, *found.value, cached=True)

    if not cache.writable(run_dir):
        # A read-only place may still hold the finished study: show it, write nothing.
        found = cache.lookup(path, wanted, policy, load)
        if found is None:
            cache.check_writable(run_dir, key, value)     # raises the one-line refusal
        return finished(found)

    with cache.locked(run_dir):
        found = cache.lookup(path, wanted, policy, load)
        if found is not None:
            return finished(found)
        started = time.perf_counter()
        try:
            result = study(setup.system, setup.integrator, plan)
        except KeyboardInterrupt:
            raise StudyInterrupted() from None
        attrs = {"sgi_run_version": __version__, "code_digest": provenance.code_digest(), "seed": plan.seed,
                 "config": OmegaConf.to_yaml(cfg, resolve=True),
                 "config_hash": wanted, "system": cfg.system.name, "integrator": cfg.integrator.name,
                 "error_kind": result.error_kind, "reference": result.reference, "samples": result.samples,
                 "observable": plan.observable if plan.error == "weak" else "state",
                 "reference_dt": plan.reference_dt or 0.0, "paths": plan.paths, "T": plan.T,
                 "note": result.note, "wall_time_s": time.perf_counter() - started}
        done = ConvergenceRun(path, run_dir, result, attrs, cached=False)
        rows = table_rows(done)
        write_tables(rows, run_dir, done)
        plot(done, run_dir / "convergence.png")
        write(path, result, attrs)
    return done


class StudyInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a convergence study, which keeps nothing until it is whole."""

    def __str__(self) -> str:
        return "interrupted: a convergence study keeps nothing until it finishes; nothing was written"


# --- convergence.h5 -----------------------------------------------------------------------------
def write(path: Path, result: ConvergenceResult, attrs: dict) -> Path:
    """Checksummed datasets under a unique temporary name, renamed when whole (as ensemble.h5)."""
    def fill(f: h5py.File) -> None:
        for k, v in attrs.items():
            f.attrs[k] = v
        for name in ("dts", "error", "se", "resolvable", "order_ci"):
            store.create_checked_dataset(f, name, np.asarray(getattr(result, name)))
        store.create_checked_dataset(f, "local_slope", result.local_slopes)
        store.create_checked_dataset(f, "nonfinite_paths", result.nonfinite)
        store.create_checked_dataset(f, "order", result.order)
    return store.replace_atomically(path, fill)


def load(path) -> tuple[ConvergenceResult, dict]:
    """A ``convergence.h5`` (or the run directory holding one) back as a result and its attributes;
    ``store.DamagedFile`` when it does not read back whole."""
    path = Path(path)
    if path.is_dir():
        path = path / "convergence.h5"
    data, attrs, _ = store.checked_read(path)
    try:
        result = ConvergenceResult(
            error_kind=attrs["error_kind"], reference=attrs["reference"], samples=attrs["samples"],
            dts=data["dts"], error=data["error"], se=data["se"], resolvable=data["resolvable"],
            order=float(data["order"]), order_ci=tuple(float(x) for x in data["order_ci"]),
            nonfinite=data["nonfinite_paths"], paths=int(attrs["paths"]), note=attrs["note"])
    except KeyError as err:
        raise store.DamagedFile(f"{path}: missing {err.args[0]}") from None
    return result, attrs


# --- tables ---------------------------------------------------------------------------------------
def table_rows(run: ConvergenceRun) -> list[dict]:
    r, a = run.result, run.attrs
    return [{"system": a["system"], "integrator": a["integrator"], "error_kind": r.error_kind,
             "reference": r.reference, "observable": a["observable"], "dt": float(dt),
             "error": float(e), "se": float(s), "local_slope": float(slope), "resolvable": bool(ok),
             "nonfinite_paths": int(bad), "order": r.order, "order_ci_low": r.order_ci[0],
             "order_ci_high": r.order_ci[1]}
            for dt, e, s, slope, ok, bad in zip(r.dts, r.error, r.se, r.local_slopes, r.resolvable, r.nonfinite)]


def order_text(r: ConvergenceResult) -> str:
    if not np.isfinite(r.order):
        return "fitted order: none (see note)"
    ci = f" [{r.order_ci[0]:.3f}, {r.order_ci[1]:.3f}] (95% path bootstrap)" if np.all(np.isfinite(r.order_ci)) else ""
    return f"fitted order: {r.order:.3f}{ci}"


def _slope_text(v: float) -> str:
    return "-" if not np.isfinite(v) else f"{v:.3f}"


def write_tables(rows: list[dict], directory: Path, run: ConvergenceRun) -> None:
    with open(directory / "convergence.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    r = run.result
    lines = [f"# {run.title}", "", "| dt | error ± SE | local slope | resolvable |", "|---|---|---|---|"]
    lines += [f"| {row['dt']:g} | {row['error']:.4g} ± {row['se']:.2g} | {_slope_text(row['local_slope'])} | "
              f"{'yes' if row['resolvable'] else 'no'} |" for row in rows]
    lines += ["", order_text(r) + "."]
    if r.note:
        lines += ["", f"Note: {r.note}."]
    (directory / "convergence.md").write_text("\n".join(lines) + "\n")


def render(run: ConvergenceRun):
    """The table for the terminal (rich)."""
    from rich.table import Table
    r = run.result
    table = Table(title=run.title)
    for c in ("dt", "error", "± SE", "local slope", f"|error| > {RESOLVABLE_SE:g} SE"):
        table.add_column(c, justify="right")
    for row in table_rows(run):
        table.add_row(f"{row['dt']:g}", f"{row['error']:.4g}", f"{row['se']:.2g}",
                      _slope_text(row["local_slope"]), "yes" if row["resolvable"] else "[yellow]no[/]")
    caption = order_text(r)
    if r.note:
        caption += f"\n[yellow]{r.note}[/]"
    table.caption = caption
    return table


# --- convergence.png --------------------------------------------------------------------------------
def plot(run: ConvergenceRun, path: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")   # files only; never a window (tests and headless machines)
    import matplotlib.pyplot as plt

    r = run.result
    err = np.abs(r.error)
    # A log axis cannot show a bar reaching zero: an unresolvable point's bar stops a decade below
    # it (its open marker says the interval holds zero).
    lower = np.minimum(ERROR_BAR_SE * r.se, 0.9 * err)
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.errorbar(r.dts, err, yerr=[lower, ERROR_BAR_SE * r.se], fmt="none", ecolor="C0", capsize=3)
    ax.plot(r.dts[r.resolvable], err[r.resolvable], "o-", color="C0", label=f"|error|, ±{ERROR_BAR_SE} SE")
    if (~r.resolvable).any():
        ax.plot(r.dts[~r.resolvable], err[~r.resolvable], "o", mfc="none", color="C0",
                label=f"not resolvable (|error| <= {RESOLVABLE_SE:g} SE)")
    if np.isfinite(r.order):
        # Reference slope: the nearest whole order, through the finest resolvable point.
        p = max(1, round(r.order))
        anchor = np.flatnonzero(r.resolvable)[-1]
        ax.plot(r.dts, err[anchor] * (r.dts / r.dts[anchor]) ** p, "k--", lw=1, label=f"slope {p}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("dt")
    ax.set_ylabel("RMS error at T" if r.error_kind == "strong" else f"|E({run.attrs['observable']}) error| at T")
    ax.set_title(f"{run.attrs['system']} / {run.attrs['integrator']}: {r.error_kind}, {order_text(r)}", fontsize=9)
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return Path(path)


def show(run: ConvergenceRun, console) -> None:
    """What ``sgi-run ... plan=convergence`` prints: the table, then where the files are."""
    console.print(render(run))
    nonfinite = int(np.sum(run.result.nonfinite))
    if nonfinite:
        console.print(f"[yellow]{nonfinite} path(s) went non-finite; excluded and counted in nonfinite_paths[/]")
    console.print(f"{'cached' if run.cached else 'wrote'} {run.path} (and convergence.csv, .md, .png)")
