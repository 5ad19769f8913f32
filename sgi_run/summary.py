"""The run's key numbers, with Monte Carlo standard errors: ``summary.csv`` and ``summary.md``."""
from __future__ import annotations

import csv
from pathlib import Path

import numpy as np

from sgi_run.store import Ensemble

COLUMNS = ["observable", "t_final", "mean", "sem", "max_rel_mc_error", "nonfinite_paths",
           "reference", "error", "error_in_sem", "max_abs_error", "equilibrium", "equilibrium_error_in_sem"]


def summarize(ens: Ensemble, system) -> list[dict]:
    """One row per observable at the final time; reference columns where the system has an exact mean
    E(t), equilibrium columns where it knows the t -> oo limit (an invariant measure's mean, which a
    run long enough to forget its start should reach up to the method's bias)."""
    rows = []
    nonfinite = int(ens.diagnostics["nonfinite_paths"][-1])
    for name in ens.observables:
        mean, sem = ens.mean(name), ens.sem(name)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(np.abs(mean) > 0, sem / np.abs(mean), np.nan)
        row = {"observable": name, "t_final": float(ens.t[-1]), "mean": float(mean[-1]),
               "sem": float(sem[-1]), "max_rel_mc_error": float(np.nanmax(rel)) if np.isfinite(rel).any() else np.nan,
               "nonfinite_paths": nonfinite}
        exact = system.reference_mean(name)
        if exact is not None:
            ref = exact(ens.t)
            err = mean - ref
            row.update(reference=float(ref[-1]), error=float(err[-1]),
                       error_in_sem=float(err[-1] / sem[-1]) if sem[-1] > 0 else np.nan,
                       max_abs_error=float(np.nanmax(np.abs(err))))
        equilibrium = system.ergodic_mean(name)
        if equilibrium is not None:
            row.update(equilibrium=float(equilibrium),
                       equilibrium_error_in_sem=float((mean[-1] - equilibrium) / sem[-1]) if sem[-1] > 0 else np.nan)
        rows.append({c: row.get(c, "") for c in COLUMNS})
    return rows


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def write(rows: list[dict], directory: Path, title: str) -> None:
    directory = Path(directory)
    with open(directory / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows(rows)
    lines = [f"# {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in COLUMNS) + " |" for r in rows]
    (directory / "summary.md").write_text("\n".join(lines) + "\n")


def render(rows: list[dict], title: str):
    """A compact rich Table of the summary for the terminal (all columns are in summary.csv)."""
    from rich.table import Table
    table = Table(title=title)
    table.caption = ("s.e.: Monte Carlo standard error. z = (mean - exact) / s.e.: the method's bias "
                     "against the SDE's exact mean, in standard errors. t->oo: the invariant measure's mean.")
    for c in ("obs", "t", "mean", "s.e.", "max s.e./|mean|", "non-finite", "exact", "z", "t->oo"):
        table.add_column(c, justify="left" if c == "obs" else "right")
    for r in rows:
        exact = r["reference"] != ""
        table.add_row(r["observable"], _fmt(r["t_final"]), f"{r['mean']:.6g}", f"{r['sem']:.2g}",
                      f"{r['max_rel_mc_error']:.3g}", str(r["nonfinite_paths"]),
                      f"{r['reference']:.6g}" if exact else "-", f"{r['error_in_sem']:+.2f}" if exact else "-",
                      f"{r['equilibrium']:.6g}" if r["equilibrium"] != "" else "-")
    return table
