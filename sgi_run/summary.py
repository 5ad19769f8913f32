"""The run's key numbers, with Monte Carlo standard errors: ``summary.csv``, ``summary.md`` and the
terminal table.

Three references a final-time mean can be held against, where known:

- ``reference``: the SDE's exact mean E(t) (``error_in_sem``: the difference in standard errors, which
  mixes the method's bias with Monte Carlo error and grows with the path count);
- ``method_reference``: the *method's own* exact mean at this dt (the linear oracle), so that
  ``method_error_in_sem`` is Monte Carlo error alone (about N(0, 1)) and ``method_bias`` = method's
  exact mean - SDE's exact mean is the discretisation error, free of sampling noise;
- ``equilibrium``: the t -> oo mean (an invariant measure's), which a long run reaches up to its bias.
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from sgi_run.store import Ensemble

COLUMNS = ["observable", "t_final", "mean", "sem", "max_rel_mc_error", "nonfinite_paths",
           "reference", "error", "error_in_sem", "max_abs_error",
           "method_reference", "method_error_in_sem", "method_bias",
           "equilibrium", "equilibrium_error_in_sem"]


def max_relative_error(mean: np.ndarray, sem: np.ndarray) -> float:
    """max over time of s.e./|mean|: NaN when some time has no standard error (fewer than two finite
    paths: the error is unknown there), 0 where both are 0 (a deterministic start at 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(sem == 0, 0.0, sem / np.abs(mean))
    return float(np.max(rel)) if len(rel) else math.nan


def _in_sem(difference: float, sem: float) -> float:
    return difference / sem if sem > 0 else math.nan


def summarize(ens: Ensemble, system, integrator=None, plan=None) -> list[dict]:
    """One row per observable at the final time, in the plan's order; the method's exact mean where
    the linear oracle applies (give ``integrator`` and ``plan``)."""
    method = None
    if integrator is not None and plan is not None and "H" in ens.observables:
        from sgi_run.engine import linear_oracle
        if linear_oracle.applies(system, plan):
            method = {"H": linear_oracle.method_moments(system, integrator, plan).mean_H}
    rows = []
    nonfinite = int(ens.diagnostics["nonfinite_paths"][-1])
    for name in ens.observables:
        mean, sem = ens.mean(name), ens.sem(name)
        row = {"observable": name, "t_final": float(ens.t[-1]), "mean": float(mean[-1]), "sem": float(sem[-1]),
               "max_rel_mc_error": max_relative_error(mean, sem), "nonfinite_paths": nonfinite}
        exact = system.reference_mean(name)
        if exact is not None:
            ref = exact(ens.t)
            err = mean - ref
            row.update(reference=float(ref[-1]), error=float(err[-1]), error_in_sem=_in_sem(err[-1], sem[-1]),
                       max_abs_error=float(np.max(np.abs(err))))
        if method is not None and name in method:
            own = float(method[name][-1])
            row.update(method_reference=own, method_error_in_sem=_in_sem(mean[-1] - own, sem[-1]))
            if exact is not None:
                row.update(method_bias=own - row["reference"])
        equilibrium = system.ergodic_mean(name)
        if equilibrium is not None:
            row.update(equilibrium=float(equilibrium), equilibrium_error_in_sem=_in_sem(mean[-1] - equilibrium, sem[-1]))
        rows.append({c: row.get(c, "") for c in COLUMNS})
    return rows


def _fmt(v, digits: int = 6) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def write(rows: list[dict], directory: Path, title: str) -> None:
    """summary.csv at full precision (repr of every float); summary.md at 6 significant digits."""
    directory = Path(directory)
    with open(directory / "summary.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS)
        w.writeheader()
        w.writerows({c: repr(v) if isinstance(v, float) else v for c, v in r.items()} for r in rows)
    lines = [f"# {title}", "", "| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(r[c]) for c in COLUMNS) + " |" for r in rows]
    (directory / "summary.md").write_text("\n".join(lines) + "\n")


# --- the terminal table ------------------------------------------------------------------------------------
def _signed(v) -> str:
    return "-" if v == "" else f"{v:+.2f}"


def _value(v, digits: int = 6) -> str:
    return "-" if v == "" else _fmt(v, digits)


def _columns(rows: list[dict]) -> list[tuple[str, callable]]:
    """(header, cell) for the columns that have a value in some row; headers break where they may."""
    has = lambda key: any(r[key] != "" for r in rows)
    columns = [("obs", lambda r: r["observable"]),
               ("mean\n± s.e.", lambda r: f"{_fmt(r['mean'])} ± {_fmt(r['sem'], 2)}"),
               ("max\ns.e./|mean|", lambda r: _fmt(r["max_rel_mc_error"], 3))]
    if any(r["nonfinite_paths"] for r in rows):
        columns.append(("non-finite\npaths", lambda r: str(r["nonfinite_paths"])))
    if has("reference"):
        columns.append(("exact\n(SDE)", lambda r: _value(r["reference"])))
    if has("method_reference"):
        columns += [("method's\nexact", lambda r: _value(r["method_reference"])),
                    ("z vs\nmethod", lambda r: _signed(r["method_error_in_sem"])),
                    ("bias vs\nSDE", lambda r: _value(r["method_bias"], 3))]
    if any(r["reference"] != "" and r["method_reference"] == "" for r in rows):
        columns.append(("z vs\nSDE", lambda r: _signed(r["error_in_sem"]) if r["method_reference"] == "" else "-"))
    if has("equilibrium"):
        columns += [("t->oo", lambda r: _value(r["equilibrium"])), ("z vs\nt->oo", lambda r: _signed(r["equilibrium_error_in_sem"]))]
    return columns


def _caption(rows: list[dict]) -> str:
    has = lambda key: any(r[key] != "" for r in rows)
    parts = ["s.e.: Monte Carlo standard error."]
    if has("method_reference"):
        parts.append("z vs method = (mean - the method's own exact mean at this dt) / s.e.: Monte Carlo error "
                     "alone, about N(0,1). bias vs SDE = method's exact mean - SDE's exact mean: the "
                     "discretisation error, free of sampling noise.")
    if any(r["reference"] != "" and r["method_reference"] == "" for r in rows):
        parts.append("z vs SDE = (mean - SDE's exact mean) / s.e.: the method's bias plus Monte Carlo error, "
                     "in standard errors (it grows with the path count when the bias is real).")
    if has("equilibrium"):
        parts.append("t->oo: the invariant measure's mean.")
    return " ".join(parts)


def _narrowest(table) -> int:
    """The fewest terminal columns ``table`` fits in without cutting a value (title and caption wrap)."""
    import copy
    import io

    from rich.console import Console

    bare = copy.copy(table)
    bare.title = bare.caption = None
    probe = Console(width=10_000, file=io.StringIO(), record=True)
    probe.print(bare)
    return max(len(line.rstrip()) for line in probe.export_text().splitlines())


def render(rows: list[dict], title: str, width: int | None = None):
    """The table for a terminal (or a log) of ``width`` columns (default: the console's). No number is
    ever cut: when the table does not fit, each observable gets a two-column block instead."""
    from rich import box
    from rich.console import Console, Group
    from rich.measure import Measurement
    from rich.table import Table

    width = Console().width if width is None else width
    columns = _columns(rows)
    cells = [[cell(r) for _, cell in columns] for r in rows]
    table = Table(title=title, caption=_caption(rows), box=box.SIMPLE_HEAD)
    for i, (header, _) in enumerate(columns):
        # Values never wrap: a column is at least as wide as its longest value.
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=True,
                         min_width=max([len(row[i]) for row in cells] + [max(map(len, header.splitlines()))]))
    for row in cells:
        table.add_row(*row)
    if _narrowest(table) <= width:
        return table
    blocks = [title]
    for row in cells:
        block = Table(title=row[0], title_justify="left", box=box.SIMPLE_HEAD, show_header=False)
        block.add_column(justify="left")
        block.add_column(justify="right", no_wrap=True)
        for (header, _), value in zip(columns[1:], row[1:]):
            if value != "-":
                block.add_row(header.replace("\n", " "), value)
        blocks.append(block)
    return Group(*blocks, _caption(rows))
