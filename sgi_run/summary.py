"""The run's key numbers, with Monte Carlo standard errors: ``summary.csv``, ``summary.md`` and the
terminal table (``show``: what ``sgi-run`` prints of an ensemble run).

Three references a final-time mean can be held against, where known:

- ``reference``: the SDE's exact mean E(t) (``error_in_sem``: the difference in standard errors, which
  mixes the method's bias with Monte Carlo error and grows with the path count);
- ``method_reference``: the *method's own* exact mean at this dt (the linear oracle), so that
  ``method_error_in_sem`` is Monte Carlo error alone (about N(0, 1)) and ``method_bias`` = method's
  exact mean - SDE's exact mean is the discretisation error, free of sampling noise;
- ``equilibrium``: the t -> oo mean (an invariant measure's), which a long run reaches up to its bias.

A system that declares invariants (``System.invariants``: a Lie-Poisson system's Casimirs, H where nothing changes
it) adds the column ``max_drift``: each invariant's largest :math:`|I(z_k) - I(z_0)|` over every step of every path
that stayed finite (``ensemble.h5``'s ``invariant_drift``), in its observable's row, or in a row of its own when
the plan does not observe it. What the method preserves is then seen on every run: round-off for one that keeps
the invariant, the method's error for one that does not.
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np

from sgi_run import markdown, store
from sgi_run.core.errors import ConfigError
from sgi_run.core.solvers import on_fail_rule
from sgi_run.store import Ensemble

# nonfinite_values: the paths where the observable is not finite at t_final (left out of its mean; for a vector
# observable, the most of any entry): those whose state is not finite, and those where it overflows on a finite state.
COLUMNS = ["observable", "t_final", "mean", "sem", "max_rel_mc_error", "nonfinite_paths", "nonfinite_values",
           "reference", "error", "error_in_sem", "max_abs_error",
           "method_reference", "method_error_in_sem", "method_bias",
           "equilibrium", "equilibrium_error_in_sem",
           # The run's plan (a sweep's summaries join on these) and its implicit solves' totals (empty: explicit).
           "dt", "T", "paths", "seed", "unconverged_steps", "stagnated_steps", "path_steps"]
# What ``write`` writes, in its order: a directory holding summary.csv holds both.
FILES = ("summary.md", "summary.csv")
# summary.md's title already names the plan.
PLAN_COLUMNS = ["dt", "T", "paths", "seed"]
# Last, and only in the tables of a run whose system declares invariants: every other run's tables are as before.
DRIFT_COLUMN = "max_drift"


def check_reference_values(system, observables, times) -> None:
    """Refuse, in one line and before the run computes, a system whose exact mean (``reference_mean``) of one of
    ``observables`` at ``times``, or whose ergodic limit (``ergodic_mean``), is not a finite number: a start of
    1e200 squared overflows a float64 (or a Python float: ``OverflowError``), and the summary, which compares every
    mean with these, would otherwise fail with a traceback after the compute. A system's own ``check`` may refuse
    such parameters first, naming one (``Kubo.check``)."""
    times = np.asarray(times, dtype=float)
    for name in observables:
        for what, method, at in (("exact mean", "reference_mean", times), ("ergodic limit", "ergodic_mean", None)):
            try:
                with np.errstate(all="ignore"):
                    found = getattr(system, method)(name)
                    if found is None:
                        continue
                    values = np.atleast_1d(np.asarray(found(at) if at is not None else found, dtype=float))
                wrong = np.flatnonzero(~np.isfinite(values))
                where = np.unravel_index(wrong[0], values.shape)[0] if wrong.size else 0
                bad = (f"it is {values.flat[wrong[0]]}" + (f" at t={at[where]:g}" if at is not None and where < at.size
                                                            else "") if wrong.size else None)
            except ArithmeticError as err:
                bad = f"it raises {type(err).__name__}: {err}"
            if bad is not None:
                raise ConfigError("system", system, f"parameters whose {what} of {name} "
                                  f"({type(system).__name__}.{method}) is a finite number ({bad})")


def max_relative_error(mean: np.ndarray, sem: np.ndarray) -> float:
    """max over time of s.e./|mean|: NaN when some time has no standard error (fewer than two finite
    paths: the error is unknown there), 0 where both are 0 (a deterministic start at 0)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(sem == 0, 0.0, sem / np.abs(mean))
    return float(np.max(rel)) if len(rel) else math.nan


def _in_sem(difference: float, sem: float) -> float:
    return float(difference / sem) if sem > 0 else math.nan


def solver_counts(ens: Ensemble) -> dict:
    """The run's path-steps whose implicit solve did not converge, those that stagnated at the fixed-point
    iteration's round-off floor, and all its path-steps; empty strings for an explicit method."""
    solver = ens.attrs.get("solver", "none")
    if f"{solver}_unconverged_steps" not in ens.diagnostics:
        return {"unconverged_steps": "", "stagnated_steps": "", "path_steps": ""}
    return {"unconverged_steps": int(np.sum(ens.diagnostics[f"{solver}_unconverged_steps"])),
            "stagnated_steps": int(np.sum(ens.diagnostics[f"{solver}_stagnated_steps"])),
            "path_steps": int(ens.attrs["path_steps"])}


def _path_steps(ens: Ensemble) -> tuple[str, str]:
    """What the run's path-steps are, in words, and the plan's step option: a convergence study counts a
    coarse step of a path (all its step sizes advanced in lock-step) as one, failed when any solve in it failed."""
    if ens.config.get("plan", {}).get("kind") == "convergence":
        return "lock-step path-steps (all step sizes together)", "smaller plan.dts"
    return "path-steps", "a smaller plan.dt"


def unconverged_line(ens: Ensemble) -> str | None:
    """The run's path-steps whose solve did not converge, in words, with the solver's options and what
    to change; None when every solve converged (or the method is explicit)."""
    counts = solver_counts(ens)
    if not counts["unconverged_steps"]:
        return None
    options = ens.config.get("integrator", {})
    outcome = ("those paths were ended and are counted non-finite" if on_fail_rule(options.get("on_fail")) == "nan"
               else "the results are not a converged solution")
    steps, smaller_dt = _path_steps(ens)
    return (f"{counts['unconverged_steps']} of {counts['path_steps']} {steps} did not converge ({ens.attrs['solver']}, "
            f"max_iter={options.get('max_iter')}, tol={options.get('tol'):g}): {outcome}; "
            f"use {smaller_dt} or a larger integrator.max_iter")


def stagnated_line(ens: Ensemble) -> str | None:
    """The run's path-steps whose fixed-point solve stopped at its round-off floor (as converged as float64
    allows: reported, not failed); None when there are none."""
    counts = solver_counts(ens)
    if not counts["stagnated_steps"]:
        return None
    return (f"{counts['stagnated_steps']} of {counts['path_steps']} {_path_steps(ens)[0]} stopped at the fixed-point iteration's "
            "round-off floor (stagnated: as converged as float64 allows; reported, not failed)")


def _nonfinite_values(ens: Ensemble, name: str) -> np.ndarray:
    """Per output time, the paths where observable ``name`` is not finite (the most of any entry of a vector)."""
    return ens.nonfinite(name).reshape(len(ens.t), -1).max(axis=1)


def nonfinite_value_lines(ens: Ensemble) -> list[str]:
    """For each observable that was not finite on more paths than had a non-finite state at some output time (it
    overflowed on a finite state), that many paths at the time of the most, in words: left out of its statistics,
    never unsaid."""
    lines = []
    for name in ens.observables:
        beyond = _nonfinite_values(ens, name) - ens.diagnostics["nonfinite_paths"]
        if beyond.max(initial=0) > 0:
            i = int(np.argmax(beyond))
            lines.append(f"{name} was not finite on {beyond[i]} more path(s) than had a non-finite state (the most, at "
                         f"t={ens.t[i]:g}): left out of its mean and variance, counted in observables/{name}/nonfinite")
    return lines


def note_lines(ens: Ensemble) -> list[str]:
    """What summary.md says below its table: ``nonfinite_value_lines``, then ``solver_lines``."""
    return nonfinite_value_lines(ens) + solver_lines(ens)


def solver_lines(ens: Ensemble) -> list[str]:
    """What a user must be told of the run's solves (``unconverged_line``, ``stagnated_line``)."""
    return [line for line in (unconverged_line(ens), stagnated_line(ens)) if line]


def show_solver_lines(console, ens: Ensemble) -> None:
    """``solver_lines`` on a console (``sgi-run``'s runs and studies alike): unconverged solves in bold red,
    since the results are not a solution; stagnated ones plain, since they are reported, not failed."""
    if unconverged := unconverged_line(ens):
        console.print(f"[bold red]{unconverged}[/]")
    if stagnated := stagnated_line(ens):
        console.print(stagnated)


def summarize(ens: Ensemble, system, integrator=None, plan=None) -> list[dict]:
    """One row per observable at the final time, in the plan's order; the method's exact mean where
    the linear oracle applies (give ``integrator`` and ``plan``). Each invariant the run recorded
    (``Ensemble.invariant_drift``) has its largest drift in its observable's row, or in a row of its
    own after them when the plan does not observe it."""
    method = None
    if integrator is not None and plan is not None and "H" in ens.observables:
        from sgi_run.engine import linear_oracle
        if linear_oracle.applies(system, plan):
            method = {"H": linear_oracle.method_moments(system, integrator, plan).mean_H}
    rows = []
    columns = COLUMNS + ([DRIFT_COLUMN] if ens.invariant_drift else [])
    nonfinite = int(ens.diagnostics["nonfinite_paths"][-1])
    run = solver_counts(ens) | {"paths": ens.attrs.get("paths", ""), "seed": ens.attrs.get("seed", "")}
    if plan is not None:
        run |= {"dt": float(plan.dt), "T": float(plan.T)}
    for name in ens.observables:
        mean, sem = ens.mean(name), ens.sem(name)
        if mean.ndim > 1:
            # A vector observable: its entries' means are in ensemble.h5; the table gives its size and
            # the largest relative Monte Carlo error of any entry at any time.
            rows.append({c: "" for c in columns} | run | {
                "observable": f"{name} [{' x '.join(map(str, mean.shape[1:]))} entries]", "t_final": float(ens.t[-1]),
                "max_rel_mc_error": max_relative_error(mean, sem), "nonfinite_paths": nonfinite,
                "nonfinite_values": int(_nonfinite_values(ens, name)[-1])})
            continue
        row = run | {"observable": name, "t_final": float(ens.t[-1]), "mean": float(mean[-1]), "sem": float(sem[-1]),
                     "max_rel_mc_error": max_relative_error(mean, sem), "nonfinite_paths": nonfinite,
                     "nonfinite_values": int(_nonfinite_values(ens, name)[-1])}
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
        rows.append({c: row.get(c, "") for c in columns})
    for name, drift in ens.invariant_drift.items():
        observed = [r for r in rows if r["observable"] == name]
        if not observed:
            observed = [{c: "" for c in columns} | run | {"observable": name, "t_final": float(ens.t[-1]),
                                                           "nonfinite_paths": nonfinite}]
            rows += observed
        observed[0][DRIFT_COLUMN] = float(drift[-1])
    return rows


def _fmt(v, digits: int = 6) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def write(rows: list[dict], directory: Path, title: str, notes: list[str] = ()) -> None:
    """summary.md at 6 significant digits (the plan's columns in its title), then ``notes`` (``note_lines``);
    summary.csv at full precision (repr of every float). Each is written whole or not at all, in ``FILES``' order."""
    directory = Path(directory)
    columns = list(rows[0]) if rows else COLUMNS
    shown = [c for c in columns if c not in PLAN_COLUMNS]
    lines = [f"# {title}", "", *markdown.table(shown, [[_fmt(r[c]) for c in shown] for r in rows])]
    lines += [""] + [f"**{note}.**" for note in notes] if notes else []
    table = io.StringIO(newline="")
    w = csv.DictWriter(table, fieldnames=columns)
    w.writeheader()
    # repr of a Python float: every digit, and no "np.float64(...)" around a numpy scalar.
    w.writerows({c: repr(float(v)) if isinstance(v, float) else v for c, v in r.items()} for r in rows)
    for name, text in zip(FILES, ["\n".join(lines) + "\n", table.getvalue()]):
        store.write_bytes_atomically(directory / name, text.encode())


# --- the terminal table ------------------------------------------------------------------------------------
def _signed(v) -> str:
    return "-" if v == "" else f"{v:+.2f}"


def _value(v, digits: int = 6) -> str:
    return "-" if v == "" else _fmt(v, digits)


def _columns(rows: list[dict]) -> tuple[list, list]:
    """(header, cell) for the columns that have a value in some row, headers broken where they may:
    what was measured, and how it compares with the references (empty where none is known)."""
    has = lambda key: any(r[key] != "" for r in rows)
    measured = [("obs", lambda r: r["observable"]),
                ("mean\n± s.e.", lambda r: "-" if r["mean"] == "" else f"{_fmt(r['mean'])} ± {_fmt(r['sem'], 2)}"),
                ("max\ns.e./|mean|", lambda r: _value(r["max_rel_mc_error"], 3))]
    if any(r.get(DRIFT_COLUMN, "") != "" for r in rows):
        measured.append(("largest\ndrift", lambda r: _value(r[DRIFT_COLUMN], 3)))
    if any(r["nonfinite_paths"] for r in rows):
        measured.append(("non-finite\npaths", lambda r: str(r["nonfinite_paths"])))
    if any(r["nonfinite_values"] not in ("", r["nonfinite_paths"]) for r in rows):
        measured.append(("non-finite\nvalues", lambda r: _value(r["nonfinite_values"])))
    if any(r["unconverged_steps"] for r in rows):
        measured.append(("unconverged\npath-steps", lambda r: f"{r['unconverged_steps']} of {r['path_steps']}"))
    references = []
    if has("reference"):
        references.append(("exact\n(SDE)", lambda r: _value(r["reference"])))
    if has("method_reference"):
        references += [("method's\nexact", lambda r: _value(r["method_reference"])),
                       ("z vs\nmethod", lambda r: _signed(r["method_error_in_sem"])),
                       ("bias vs\nSDE", lambda r: _value(r["method_bias"], 3))]
    if any(r["reference"] != "" and r["method_reference"] == "" for r in rows):
        references.append(("z vs\nSDE", lambda r: _signed(r["error_in_sem"]) if r["method_reference"] == "" else "-"))
    if has("equilibrium"):
        references += [("t->oo", lambda r: _value(r["equilibrium"])), ("z vs\nt->oo", lambda r: _signed(r["equilibrium_error_in_sem"]))]
    return measured, references


def _caption(rows: list[dict]) -> str:
    has = lambda key: any(r[key] != "" for r in rows)
    parts = ["s.e.: Monte Carlo standard error."]
    if any(r.get(DRIFT_COLUMN, "") != "" for r in rows):
        parts.append("largest drift: of each invariant the system declares, the largest |I(z_k) - I(z_0)| over "
                     "every step of every path that stayed finite: round-off where the method keeps it exactly, the "
                     "method's error where it does not.")
    if has("method_reference"):
        parts.append("z vs method: how many s.e. the mean lies from the method's own exact mean at this dt; "
                     "that is sampling noise alone, so it is usually within ±2. bias vs SDE: the method's "
                     "exact mean minus the SDE's exact mean, the error of the time step itself, free of "
                     "sampling noise.")
    if any(r["reference"] != "" and r["method_reference"] == "" for r in rows):
        parts.append("z vs SDE: how many s.e. the mean lies from the SDE's exact mean; the method's bias "
                     "adds to the sampling noise there, and grows in s.e. with the number of paths.")
    if has("equilibrium"):
        parts.append("t->oo: the mean of the invariant measure (z vs t->oo: in s.e., as above).")
    return " ".join(parts)


def _narrowest(table) -> int:
    """The fewest terminal columns ``table`` (with no title or caption) fits in without cutting a value."""
    import io

    from rich.console import Console

    probe = Console(width=10_000, file=io.StringIO(), record=True)
    probe.print(table)
    return max(len(line.rstrip()) for line in probe.export_text().splitlines())


def _table(rows: list[dict], columns: list):
    from rich import box
    from rich.table import Table

    cells = [[cell(r) for _, cell in columns] for r in rows]
    table = Table(box=box.SIMPLE_HEAD)
    for i, (header, _) in enumerate(columns):
        # Values never wrap: a column is at least as wide as its longest value.
        table.add_column(header, justify="left" if i == 0 else "right", no_wrap=True,
                         min_width=max([len(row[i]) for row in cells] + [max(map(len, header.splitlines()))]))
    for row in cells:
        table.add_row(*row)
    return table


def _blocks(rows: list[dict], columns: list) -> list:
    """One two-column table (label, value) per observable, for a terminal too narrow for columns."""
    from rich import box
    from rich.table import Table

    blocks = []
    for r in rows:
        block = Table(title=r["observable"], title_justify="left", box=box.SIMPLE_HEAD, show_header=False)
        block.add_column(justify="left")
        block.add_column(justify="right", no_wrap=True)
        for header, cell in columns[1:]:
            if cell(r) != "-":
                block.add_row(header.replace("\n", " "), cell(r))
        blocks.append(block)
    return blocks


def render(rows: list[dict], title: str, width: int | None = None):
    """The table for a terminal (or a log) of ``width`` columns (default: ``terminal.console()``'s). No number is
    ever cut: when one table does not fit, the comparisons with the references go to a second table,
    and when those do not fit either, each observable gets a two-column block."""
    from rich.console import Group

    from sgi_run.terminal import console

    width = console().width if width is None else width
    measured, references = _columns(rows)
    layouts = [[measured + references]] + ([[measured, measured[:1] + references]] if references else [])
    for layout in layouts:
        # The comparisons' table leaves out the rows that have no reference at all.
        tables = [_table([r for r in rows if any(cell(r) != "-" for _, cell in columns[1:])], columns)
                  for columns in layout]
        if all(_narrowest(table) <= width for table in tables):
            tables[0].title, tables[-1].caption = title, _caption(rows)
            return Group(*tables)
    return Group(title, *_blocks(rows, measured + references), _caption(rows))


def show(run, title: str, console) -> None:
    """What ``sgi-run`` prints of a finished ensemble run (a ``runner.RunResult``): its table under ``title``, what
    went wrong in it (every path lost, some non-finite, unconverged solves), then where its file is."""
    console.print(render(run.summary, title))
    nonfinite = run.summary[0]["nonfinite_paths"] if run.summary else 0
    if run.failed:
        console.print(f"[bold red]FAILED: {run.failure()}[/]")
    elif nonfinite:
        console.print(f"[yellow]{nonfinite} path(s) went non-finite; excluded from the statistics and counted in diagnostics/nonfinite_paths[/]")
    for line in nonfinite_value_lines(run.ensemble):
        console.print(f"[yellow]{line}[/]")
    show_solver_lines(console, run.ensemble)
    resumed = f" ({run.resumed()})" if run.resumed() else ""
    done = "cached (failed run)" if run.failed and run.cached else "cached" if run.cached else "wrote"
    where = ", ".join(run.ensemble.attrs[k] for k in ("executor", "device") if k in run.ensemble.attrs)
    console.print(f"{done} {run.path}{resumed}" + (f"; ran on {where}" if where else ""))
