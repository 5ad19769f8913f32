"""A figure's tables: its rows as text (``fmt``, ``md_header``, ``md_cells``, the study and work-precision rows),
markdown tables (``markdown_table``: ``sgi_run.markdown.table``, the one writer of them), the disagreement section, and the figure's
``<fig>.csv``, ``<fig>.md`` and ``<fig>_checks.md`` files (``write_table``, ``write_checks``).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path
from collections.abc import Callable, Sequence

from sgi_run import work_precision
from sgi_run.markdown import table as markdown_table
from sgi_run.figures.experiment import Experiment
from sgi_run.figures.panels.style import mean_text, path_text
from sgi_run.figures.results import CheckResult, counts_text, verdict_counts

TABLE_COLUMNS = ["run", "label", "integrator", "dt", "dt_source", "paths", "T", "mean_T", "sem_T",
                 "exact_T", "ratio_T", "max_abs_error", "t_max_abs_error", "start_value", "ratio_to_start",
                 "max_abs_change", "t_max_abs_change", "window_mean", "window_se", "window_se_exact",
                 "max_rel_mc_error", "mean_sign_changes", "nonfinite_paths", "solver_per_step", "solver_max_iterations",
                 "unconverged_steps", "wall_time_s", "path_steps_per_s", "cached", "stale"]


# A convergence study's rows: one per step size, its fitted order on each.
STUDY_COLUMNS = ["run", "label", "integrator", "dt_source", "error_kind", "reference", "observable", "paths", "T",
                 "dt", "error", "se", "resolvable", "local_slope", "order", "order_ci_low", "order_ci_high",
                 "nonfinite_paths", "wall_time_s", "cached", "stale"]


def drift_column(observable: str, relative: bool) -> str:
    """The table's key of an observable's drift along a run's path: ``drift_C1``, ``relative_drift_C2``."""
    return f"{'relative_' if relative else ''}drift_{observable}"


def drift_text(key: str, header: bool = False) -> str:
    """A drift column's quantity, "max_t |C1(t) - C1(0)|", "max_t |C2(t) - C2(0)| / |C2(0)|"; as a table's header
    (no "|", which would split a markdown cell) "largest drift of C1", "largest relative drift of C2"."""
    relative, name = key.startswith("relative_"), key.split("drift_", 1)[1]
    if header:
        return f"largest {'relative ' if relative else ''}drift of {name}"
    return f"max_t |{name}(t) - {name}(0)|" + (f" / |{name}(0)|" if relative else "")


NO_VALUE = "—"    # a number that does not exist: the SE of one path, a non-finite value (null in a record)


def _number(x) -> float:
    """A number of a row, as a record keeps it: null (``write_record``'s non-finite value) is NaN."""
    return math.nan if x is None else float(x)


def fmt(x, digits: int = 4) -> str:
    """A table cell's number; "" (a column the row has no value in) stays empty, NaN and a record's null are
    ``NO_VALUE``."""
    if x is None:
        return NO_VALUE
    if isinstance(x, bool) or x == "":
        return str(x)
    if isinstance(x, float):
        return NO_VALUE if math.isnan(x) else f"{x:.{digits}g}"
    return str(x)


def single_realisation(row: dict) -> bool:
    """The row's run has one path: its values are that path's, with no Monte Carlo SE."""
    return row.get("paths") == 1


def md_header(observable: str, rows: list[dict]) -> list[str]:
    """The ensemble table's header. Its value column names what the rows tabulate, the experiment's
    ``observable`` ("E(C1)(T)", "2 E(H)(T)") with "± SE"; where every run is a single realisation, the path's
    value ("C1(T)") against its own value at t = 0. A table of both names what a single realisation's
    comparison columns hold (``md_cells``). The experiment's ``drift`` columns come last."""
    singles = [single_realisation(r) for r in rows]
    drifts = [drift_text(key, header=True) for key in drift_keys(rows)]
    if singles and all(singles):
        q = path_text(observable)
        return ["run", "Δt (source)", "paths", f"{q}(T)", f"{q}(0)", f"{q}(T) / {q}(0)",
                f"max_t abs({q}(t) - {q}(0)) (at t)", "window mean", "max_t SE/|E|", "non-finite paths",
                "solver it./step (max)", "wall s (path-steps/s)"] + drifts
    start = (("; 1 path: its value at t = 0", "; 1 path: to its value at t = 0", "; 1 path: from its value at t = 0")
             if any(singles) else ("", "", ""))
    return ["run", "Δt (source)", "paths", f"{mean_text(observable)}(T) ± SE", f"exact(T){start[0]}",
            f"ratio{start[1]}", f"max_t abs error (at t{start[2]})", "window mean ± SE", "max_t SE/|E|",
            "non-finite paths", "solver it./step (max)", "wall s (path-steps/s)"] + drifts


def drift_keys(rows: list[dict]) -> list[str]:
    """The drift columns the rows have (an experiment's ``drift``), in order: the table's last columns."""
    return list(dict.fromkeys(k for row in rows for k in row if k.startswith(("drift_", "relative_drift_"))))


def md_cells(row: dict) -> list[str]:
    """One table row as text cells (shared by the .md file and the gallery). Records written by
    earlier versions lack later columns (their window SE was always the bound). A single realisation's
    values stand alone: one path has no Monte Carlo SE."""
    single = single_realisation(row)
    # A single realisation is compared with its own start (md_header); a record written before it had those
    # columns shows none rather than its division by the ensemble's exact mean.
    exact, ratio, worst, t_worst = (("start_value", "ratio_to_start", "max_abs_change", "t_max_abs_change") if single
                                    else ("exact_T", "ratio_T", "max_abs_error", "t_max_abs_error"))
    window_se = row.get("window_se", row.get("window_se_bound", ""))
    window = ("" if row.get("window_mean", "") == "" else fmt(row["window_mean"], 5) if single else
              plus_minus(row["window_mean"], window_se, 5, "" if row.get("window_se_exact") else "≤ "))
    wall = _number(row["wall_time_s"])
    throughput = row.get("path_steps_per_s", "")
    # Every path non-finite: no value exists, and the cell says why instead of a bare "—".
    failed = all_paths_failed(row) and not math.isfinite(_number(row["mean_T"]))
    mean = (f"all {fmt(row['paths'])} paths non-finite" if failed else fmt(row["mean_T"], 5) if single
            else plus_minus(row["mean_T"], row["sem_T"], 5))
    return [row["label"], f"{fmt(row['dt'])} ({row['dt_source']})",
            fmt(row["paths"]) + (" (single realisation)" if single else ""),
            mean, fmt(row.get(exact, ""), 5), fmt(row.get(ratio, "")),
            f"{fmt(row[worst])} ({fmt(row[t_worst])})" if row.get(worst, "") != "" else "",
            window, _relative_se_cell(row), fmt(row["nonfinite_paths"]),
            _solver_cell(row),
            (f"{wall:.0f}" if math.isfinite(wall) else NO_VALUE)
            + (f" ({fmt(throughput, 2)})" if throughput not in ("", None) else "")
            + (" (cached, other code)" if row.get("stale") else " (cached)" if row["cached"] else "")] + [
        fmt(row.get(key, ""), 3) for key in drift_keys([row])]


# What the table's "max_t SE/|E|" column is and when it is shown (the tables' header text says it).
RELATIVE_SE_TEXT = ("max_t SE/|E|: the largest Monte Carlo SE relative to |E| over the output times (the run's worst "
                    "relative precision); shown only where E keeps one sign and |E| > 2 SE at every output time, else "
                    "'E crosses 0' or 'E within 2 SE of 0', where a ratio to E has no meaning.")


def all_paths_failed(row: dict) -> bool:
    """Every path of the run went non-finite: its statistics do not exist."""
    paths, failed = row.get("paths"), row.get("nonfinite_paths")
    return isinstance(paths, int) and isinstance(failed, (int, float)) and paths > 0 and failed >= paths


def plus_minus(value, se, digits: int = 4, bound: str = "") -> str:
    """"value ± SE"; a value that does not exist is ``NO_VALUE`` alone, never "— ± —"."""
    if value in ("", None) or not math.isfinite(_number(value)):
        return NO_VALUE
    return f"{fmt(value, digits)} ± {bound}{fmt(se, 2)}"


def _relative_se_cell(row: dict) -> str:
    """The "max_t SE/|E|" cell (``RELATIVE_SE_TEXT``). max_t SE/|E| > 1/2 is |E| < 2 SE at some output time; a
    record written before ``mean_sign_changes`` was kept is judged by that alone."""
    value = row.get("max_rel_mc_error", "")
    if single_realisation(row) or all_paths_failed(row):
        return NO_VALUE
    if value == "":
        return ""
    if not math.isfinite(_number(value)):
        return NO_VALUE
    if row.get("mean_sign_changes") is True:
        return "E crosses 0"
    return "E within 2 SE of 0" if _number(value) > 0.5 else fmt(value, 3)


def _solver_cell(row: dict) -> str:
    """"3.02 (max 5)", with the unconverged path-steps when there are any; empty for explicit methods and for
    records written before these columns existed."""
    per_step = row.get("solver_per_step", "")
    if per_step in ("", None) or (isinstance(per_step, float) and math.isnan(per_step)):
        return ""
    most, failed = row.get("solver_max_iterations", ""), row.get("unconverged_steps", "")
    text = fmt(per_step, 3) + (f" (max {fmt(most)})" if most != "" else "")
    return text + (f"; {fmt(failed)} unconverged" if failed not in ("", 0, 0.0) else "")


STUDY_MD_HEADER = ["run", "error of", "Δt", "error ± SE", "local slope", "fitted order [95% CI]", "paths", "T",
                   "non-finite paths", "wall s"]


def study_md_rows(rows: list[dict]) -> list[list[str]]:
    """Convergence-study rows as text cells (the .md file and the gallery): the run, what its error is,
    its fitted order and counts on its first step size's row only."""
    cells, seen = [], set()
    for row in rows:
        first = row["run"] not in seen
        seen.add(row["run"])
        kind = "strong, RMS of the state" if row["error_kind"] == "strong" else f"weak, E({row['observable']})"
        fitted, low, high = _number(row["order"]), _number(row["order_ci_low"]), _number(row["order_ci_high"])
        slope, wall_s = _number(row["local_slope"]), _number(row["wall_time_s"])
        order = ("none (< 2 errors resolvable)" if not math.isfinite(fitted) else f"{fitted:.3f}"
                 + (f" [{low:.3f}, {high:.3f}]" if math.isfinite(low) and math.isfinite(high) else ""))
        wall = (f"{wall_s:.0f}" if math.isfinite(wall_s) else NO_VALUE) + (
            " (cached, other code)" if row.get("stale") else " (cached)" if row["cached"] else "")
        run = [row["label"], f"{kind} ({row['reference']} reference)"]
        cells.append((run if first else ["", ""])
                     + [f"{row['dt']:g}" + (f" ({row['dt_source']})" if first else ""),
                        plus_minus(row["error"], row["se"]) + ("" if row["resolvable"] else " (not resolvable)"),
                        "–" if not math.isfinite(slope) else f"{slope:.3f}"]
                     + ([order, fmt(row["paths"]), fmt(row["T"])] if first else ["", "", ""])
                     + [fmt(row["nonfinite_paths"]), wall if first else ""])
    return cells


def work_precision_header(rows: list[dict]) -> list[str]:
    drifts = [k[len("drift_"):] for k in (rows[0] if rows else {}) if k.startswith("drift_")]
    return (["method", "Δt", "error ± SE", "wall time per path, median [fastest, slowest]", "path-steps/s",
             "first call (compile + 1 run)"] + [f"largest drift of {name}" for name in drifts])


def work_precision_md_rows(rows: list[dict]) -> list[list[str]]:
    """Work-precision rows as text cells (the .md file, the gallery and the site): a method's label on its first
    row only."""
    cells, seen = [], set()
    for row in rows:
        first = row["run"] not in seen
        seen.add(row["run"])
        cells.append([row["label"] if first else "", f"{row['dt']:g}",
                      f"{fmt(row['error'])} ± {fmt(row['se'], 2)}" + ("" if row["resolvable"] else " (not resolvable)"),
                      f"{row['seconds_per_path']:.3g} s [{row['seconds_per_path_low']:.3g}, "
                      f"{row['seconds_per_path_high']:.3g}]", f"{row['path_steps_per_s']:.3g}",
                      f"{row['first_call_s']:.2f} s"]
                     + [f"{_number(v):.2g}" for k, v in row.items() if k.startswith("drift_")])
    return cells


DISAGREES = "Where this figure disagrees with the paper"


def disagreement_checks(entry: dict, checks) -> list[dict]:
    """The checks (a record's check dicts, or CheckResults) a disagreement names, in the entry's order: a check
    of several runs gives one verdict per run."""
    found = [c if isinstance(c, dict) else c.as_dict() for c in checks]
    return [c for check_id in entry["checks"] for c in found if c["id"] == check_id]


def disagreement_lines(entries, checks, text: Callable[[str], str] = str,
                       verdict: Callable[[str], str] = str) -> list[str]:
    """Markdown of a figure's disagreements with its paper (empty without any): per entry the paper's claim
    quoted, where it is, what is measured, the named checks' computed values (value ± SE, band, verdict) and the
    explanation. ``text``: how a text is escaped (the site's ``markdown_literal``); ``verdict``: how a verdict is
    shown (a badge)."""
    if not entries:
        return []
    # A check that documents a disagreement has its band around what this code computes: its PASS says the
    # disagreement is measured as stated, which a reader could take for agreement with the paper.
    lines = [f"## {DISAGREES}", "", "Each check below passes when this code measures the disagreement as stated "
             "(its band is around the value computed here), not when the figure agrees with the paper.", ""]
    for n, entry in enumerate(entries, 1):
        lines += [f"{n}. **The paper** ({text(entry['where'])}): “{text(entry['claim'])}”", "",
                  f"    **Measured here:** {text(entry['finding'])}", ""]
        found = disagreement_checks(entry, checks)
        for check in found:
            shown = "by construction" if check.get("by_construction") else check["verdict"]
            lines.append(f"    - {verdict(shown)} `{check['id']}` [{check['run']}]: "
                         f"{text(CheckResult.from_record(check).measured())}")
        # A record drawn before the entry's checks existed (a stale one the site shows with today's entries).
        missing = [c for c in entry["checks"] if c not in {check["id"] for check in found}]
        if missing:
            lines.append(f"    - not computed in this record (drawn before the check existed): "
                         f"{', '.join(f'`{c}`' for c in missing)}")
        lines += ["", f"    **Explanation:** {text(entry['explanation'])}", ""]
    return lines



def write_table(exp: Experiment, fidelity: str, table: list[dict], files: dict, studies: list[dict] = (),
                 precision: list[dict] = (), verdicts: Sequence[CheckResult] = (), panels: list[tuple] = ()) -> None:
    # A study's row also holds its step size's drifts and, in a work-precision figure, its cost.
    costs = {(row["run"], row["dt"]): {k: v for k, v in row.items() if k not in ("label", "error", "se", "resolvable")}
             for row in precision}
    studies_out = [row | costs.get((row["run"], row["dt"]), {}) for row in studies]
    extra = [k for row in studies_out for k in row if k not in STUDY_COLUMNS]
    columns = list(dict.fromkeys((TABLE_COLUMNS + drift_keys(table) if table else [])
                                 + (STUDY_COLUMNS + extra if studies else [])))
    with open(files["csv"], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, restval="")
        w.writeheader()
        w.writerows([*table, *studies_out])
    from sgi_run.figures.plots import horizon_text

    counts = " (the paper's counts)" if exp.at_papers_counts(fidelity) else ""
    lines, said = [f"# {exp.heading}", ""], f"Fidelity: {fidelity}{counts}. "
    lines += disagreement_lines(exp.disagreements, verdicts)
    for text, header, rows in panels:     # what the panels draw (e.g. Figure 14's maps), first
        lines += [f"{said}{text}", "", *markdown_table(header, rows), ""]
        said = ""
    if table and len(panels) < len(exp.panels):    # a run's E(observable)(T) where a panel draws it
        mean = mean_text(exp.observable)
        window = (f" Window mean: the time average of {mean} over [{exp.window[0]:g}, {exp.window[1]:g}]; its SE is"
                  " exact (from every path's time average, plan.time_average) where the run has them, else"
                  " '≤' the average single-time SE (an upper bound)." if exp.window else "")
        single = [r for r in table if single_realisation(r)]
        if len(single) == len(table):
            mean = q = path_text(exp.observable)     # the path's value, not an expectation
            se = (f" Every run is a single realisation (1 path): {q}(T) is that path's value, with no Monte Carlo"
                  f" standard error ({NO_VALUE}), compared with the path's own {q}(0), not with an ensemble's exact"
                  " mean.")
        else:
            se = f" SE = Monte Carlo standard error. {RELATIVE_SE_TEXT}" + (
                f" Runs of 1 path are single realisations: their values are that path's, with no SE ({NO_VALUE}),"
                " and their comparison columns hold the path against its own value at t = 0, not against the"
                " exact mean." if single else "")
        drifts = drift_keys(table)
        drift = "".join(f" The {drift_text(key, header=True)}: {drift_text(key)} along the run's path (kept path 0)"
                        " over its output times, as the figure draws it." for key in drifts)
        lines += [f"{said}Observable {exp.observable}; {mean}(T) at the final time {horizon_text(table)}.{se}{window}"
                  f"{drift}",
                  "", *markdown_table(md_header(exp.observable, table), [md_cells(r) for r in table]), ""]
        said = ""
    if studies:
        lines += [f"{said}Convergence studies (plan=convergence): the error at T against the step size Δt (strong: "
                  "the RMS distance of the state to the reference path; weak: the error of the mean), ± its Monte "
                  "Carlo standard error (SE). An error within 2 SE of zero is not resolvable and not fitted; the local "
                  "slope is between a step size and the next coarser one; the fitted order is the least-squares slope "
                  "of log |error| over the resolvable step sizes, with its 95% path-bootstrap interval.", "",
                  *markdown_table(STUDY_MD_HEADER, study_md_rows(studies)), ""]
    if precision:
        first = precision[0]
        lines += [f"Work-precision: each step size's error (as above) against its cost, timed in one series on "
                  f"{first['device']}: {first['timed_paths']} paths from 0 to T in one shard, compiled apart (first "
                  f"call), then timed {first['repeats']} times in rounds that visit every method; the median per path "
                  "with the fastest and slowest repeat. The largest drift of an invariant is over every path and step "
                  "of the study.", "", *markdown_table(work_precision_header(precision), work_precision_md_rows(precision)), ""]
        winners = work_precision.cheapest(precision)
        if winners:
            lines += ["The cheapest method to reach an error (each method's cost interpolated log-log between the two "
                      "step sizes whose resolvable errors bracket it; '≤': below that error already at its coarsest "
                      "step size, whose cost is shown; the next cheapest's cost as a multiple):", "",
                      *markdown_table(["error", "cheapest", "wall time per path", "next cheapest"],
                                 [[f"{w['error']:g}", w["method"],
                                   f"{'≤ ' if w['at_most'] else ''}{w['seconds_per_path']:.3g} s",
                                   f"{w['runner_up']} ({w['ratio']:.2f}x)"] for w in winners]), ""]
    files["md"].write_text("\n".join(lines))


def write_checks(exp: Experiment, fidelity: str, verdicts: list[CheckResult], path: Path) -> None:
    """The verdicts file: the counts (of the checks that do not hold by construction), their lines, then the
    checks that hold by construction in a section of their own, then every check's criterion."""
    judged = [r for r in verdicts if not r.by_construction]
    apart = [r for r in verdicts if r.by_construction]
    lines = [f"# {exp.label}: acceptance checks ({fidelity} fidelity)", "", exp.title, "",
             counts_text(verdict_counts(verdicts)), "", "```", *[r.line() for r in judged], "```"]
    if apart:
        lines += ["", "## By construction", "",
                  "These hold by how the runs are set up (a path starts at the initial value it was given; a path "
                  "picked by a rule is checked against that rule). They are judged all the same, a FAIL would be "
                  "a bug, but not counted with the verdicts above.", "", "```", *[r.line() for r in apart], "```"]
    lines += ["", "Criteria:", ""]
    lines += [f"- {r.id} [{r.run}]: {r.criterion}" + (" (by construction)" if r.by_construction else "")
              for r in verdicts]
    path.write_text("\n".join(lines) + "\n")


# The ensemble table's columns from this one on are about the run (its precision, failures, solver, cost), those
# before it about the observable: where the table is split, it is split here.
RUN_COLUMNS_FROM = 8


def table_parts(header: list[str], cells: list[list[str]], at: int | None = None,
                widest: int = 8) -> list[tuple[list[str], list[list[str]]]]:
    """A wide table as tables a reader can read whole at 800 px: the columns empty in every row left out and,
    where more than ``widest`` remain, the columns from ``at`` on (default: the second half) in a second table
    that repeats the first column (the run)."""
    if not cells:
        return []
    def part(columns):
        columns = [i for i in columns if i == 0 or any(row[i] != "" for row in cells)]
        return [header[i] for i in columns], [[row[i] for i in columns] for row in cells]
    whole = part(range(len(header)))
    if len(whole[0]) <= widest:
        return [whole]
    at = (len(header) + 1) // 2 if at is None else at
    return [part(range(at)), part([0, *range(at, len(header))])]
