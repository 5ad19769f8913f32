"""Experiment files (``experiments/<paper>/<figure>.yaml``) and the pipeline that makes one figure.

An experiment file names the runs of one paper figure as Hydra overrides, the sampling profiles
(smoke / reduced / paper), the plot and the acceptance checks; see
``experiments/kraus_tyranowski_2021/fig4_1.yaml`` for the annotated format. A run whose overrides
choose ``plan=convergence`` is a convergence study: drawn in ``convergence`` panels, judged by the
study check kinds (``fitted_order``, ``error_at``, ...), tabled per step size. ``make_figure`` runs
what is missing (runs are cached by config hash), draws the PNG, writes the figure's table
(``.csv``, ``.md``), its verdicts (``_checks.md``) and a ``.json`` record the gallery is built from.
"""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import datetime
import hashlib
import json
import math
import os
import re
import shlex
import shutil
import tempfile
import time
from pathlib import Path
from collections.abc import Callable, Sequence

import numpy as np
import yaml
from omegaconf import DictConfig

from sgi_run import work_precision
from sgi_run.version import __version__
from sgi_run.config import ConfigSource, Setup, compose_setup, config_hash
from sgi_run.convergence_run import drift_cells
from sgi_run.core.errors import ConfigError, require
from sgi_run.core.noise import truncation_bound
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.engine.linear_oracle import method_moments
from sgi_run.figures import checks as checks_mod
from sgi_run.figures import fields
from sgi_run.figures.layout import Layout, parse_layout
from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.panels.style import mean_text, path_text
from sgi_run.figures.schema import EXPERIMENT, FIDELITIES  # noqa: F401  (the CLI reads FIDELITIES here)
from sgi_run.figures.results import (FAIL, SOLVER_STATISTICS, Band, CheckResult, RunData, Series, StudyData,
                                     counts_text, verdict_counts)
from sgi_run.figures.statistics import departure, has_path_averages, window_average
from sgi_run.runner import ConvergenceRun, RunResult, run
from sgi_run.summary import max_relative_error, solver_counts, unconverged_line

@dataclasses.dataclass(frozen=True)
class RunSpec:
    id: str
    overrides: tuple[str, ...]
    label: str
    dt_source: str
    colour: str | None = None   # a colour of layout.PALETTE the caption names for it; None: the next one


@dataclasses.dataclass(frozen=True)
class Experiment:
    path: Path
    paper: str
    figure: str
    title: str
    caption: str
    source: str
    note: str               # what this reproduction leaves out or does differently, for the gallery
    observable: str
    oracle: str | None      # "linear_moments": each method's exact moments (linear systems only)
    common: tuple[str, ...]
    fidelity: dict          # name -> {"overrides": [...], "runs": {run id: [...]}}
    runs: dict              # run id -> RunSpec, in file order (the order of colours and rows)
    panels: list
    checks: list            # one dict per (check, run): "runs" lists expanded
    window: tuple[float, float] | None = None   # the table also reports the time average over it
    paper_name: str = ""    # how headings cite the paper, e.g. "Kraus & Tyranowski (2021)"
    name: str = ""          # the paper's name for the figure ("Figure 4.1"), or what it is instead
    studies: frozenset = frozenset()   # the runs that are convergence studies (plan=convergence)
    unconverged_steps: str = "fail"    # a key of schema.UNCONVERGED_STEPS
    layout: Layout = dataclasses.field(default_factory=Layout)   # the panels' grid, legend and letters
    # Where the figure disagrees with its paper: {claim, where, checks (ids), finding, explanation} each
    # (schema.DISAGREEMENT), in file order.
    disagreements: tuple = ()
    drift: tuple[tuple[str, bool], ...] = ()   # (observable, relative): a table column of its drift per run

    @property
    def diagnostic(self) -> bool:
        """Not a figure of the paper (its id is not ``fig<N>_<M>``): a check the project adds."""
        return _figure_number(self.figure) is None

    @property
    def label(self) -> str:
        """The paper and the figure's name: "Kraus & Tyranowski (2021), Figure 4.1"."""
        return f"{self.paper_name or self.paper}, {self.name or self.figure}"

    @property
    def heading(self) -> str:
        """The figure's title as a reader cites it: "Kraus & Tyranowski (2021), Figure 4.1: <title>"."""
        return f"{self.label}: {self.title}"

    def overrides(self, run_id: str, fidelity: str, runs_root: str | None = None, cache: str | None = None,
                  executor: Sequence[str] = ()) -> list[str]:
        """The run's overrides at a fidelity; a later value for the same key replaces an earlier one.
        ``executor``: where its shards run (``executor=dask``, ``executor.address=...``), never its numbers."""
        profile = self.fidelity[fidelity]
        layers = [self.common, self.runs[run_id].overrides, profile["overrides"],
                  profile["runs"].get(run_id, ()),
                  [f"output_root={hydra_quoted(str(runs_root))}"] if runs_root is not None else [],
                  [f"cache={cache}"] if cache is not None else [], executor]
        return list(_merged(layers).values())

    def at_papers_counts(self, fidelity: str) -> bool:
        """Every run of the profile is the paper profile's run (the same overrides): a profile whose counts are
        the paper's is the paper's figure, whatever the profile is called."""
        return "paper" in self.fidelity and all(
            self.overrides(run_id, fidelity) == self.overrides(run_id, "paper") for run_id in self.runs)


def hydra_quoted(text: str) -> str:
    """``text`` as a Hydra override value that reads back as it is: a directory may hold =, commas, spaces
    or quotes, which Hydra's grammar would otherwise read as syntax (a backslash escapes only a quote,
    so one ending the text is doubled)."""
    backslash = "\\"
    body = text.replace("'", backslash + "'")
    return "'" + body + backslash * (len(body) - len(body.rstrip(backslash))) + "'"


def _merged(layers) -> dict[str, str]:
    """Override key -> the last override of that key."""
    merged: dict[str, str] = {}
    for override in (o for layer in layers for o in layer):
        merged[override.split("=", 1)[0].lstrip("+~")] = override
    return merged


def _studies(common, runs: dict, fidelity: dict, k) -> frozenset:
    """The runs whose plan is a convergence study (``plan=convergence``), the same at every fidelity."""
    studies = set()
    for run_id, spec in runs.items():
        plans = [_merged([common, spec.overrides, p["overrides"], p["runs"].get(run_id, ())]).get("plan", "=")
                 for p in fidelity.values()]
        kinds = {plan.split("=", 1)[1].strip() == "convergence" for plan in plans}
        require(k(f"runs.{run_id}.overrides"), list(spec.overrides), len(kinds) == 1,
                "plan=convergence at every fidelity or at none (a run is a convergence study or an ensemble)")
        if kinds.pop():
            studies.add(run_id)
    return frozenset(studies)


# --- loading and validation -------------------------------------------------------------------------
def _figure_number(figure_id: str) -> str | None:
    """"4.1" for the id ``fig4_1``, "4" for ``fig4`` (a paper that numbers its figures 1, 2, ...);
    None for an id that names no paper figure (a diagnostic)."""
    match = re.fullmatch(r"fig(\d+)(?:_(\d+))?", figure_id)
    return None if not match else f"{match[1]}.{match[2]}" if match[2] else match[1]


def _names(data: dict, k) -> tuple[str, str]:
    """(paper_name, name): optional keys; a paper figure's name defaults to "Figure N.M" from its id,
    a diagnostic must say what it is, and neither may pretend to be another figure."""
    paper_name = data.get("paper_name", data["paper"])
    number = _figure_number(data["figure"])
    name = data.get("name", f"Figure {number}" if number else None)
    if number:
        require(k("name"), name, re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", name) is not None,
                f'the paper\'s name for figure {data["figure"]}, e.g. "Figure {number}"')
    else:
        require(k("name"), name, name is not None and not re.match(r"(?i)\s*fig", name),
                'what this is, since its id names no paper figure, e.g. "diagnostic (not a paper figure)"')
    return paper_name.strip(), name.strip()


# An experiment file holds at most this many values once its aliases (*name) are expanded: the largest of the
# repository's holds under 1,000; past this an alias is a mistake, or a file made to exhaust the reader.
MAX_VALUES = 100_000


def read_data(path: Path):
    """An experiment file's data: UTF-8 YAML that holds no value inside itself (an alias inside the anchor it
    names) and expands to at most MAX_VALUES values, else refused in one line naming the file."""
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(file, "", f"UTF-8 text (byte {err.start} is not UTF-8)") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise ConfigError(file, "", f"valid YAML ({str(err).splitlines()[0]})") from None
    except RecursionError:
        raise ConfigError(file, "", "valid YAML nested less deep") from None
    values = 0

    def walk(node, holders: frozenset) -> None:
        nonlocal values
        values += 1
        require(file, "", values <= MAX_VALUES, f"at most {MAX_VALUES} values once its aliases (*name) are expanded")
        if isinstance(node, (dict, list)):
            require(file, "", id(node) not in holders,
                    "data that does not hold itself: an alias (*name) inside the anchor (&name) it names")
            for child in node.values() if isinstance(node, dict) else node:
                walk(child, holders | {id(node)})

    walk(data, frozenset())
    return data


def load(path) -> Experiment:
    """Read and validate an experiment file: its keys and values against the schema (``schema.EXPERIMENT``),
    then the relations between them; every refusal is one line naming the file and key."""
    path = Path(path)
    data = read_data(path)
    k = lambda key: f"{path.name}:{key}"
    EXPERIMENT.check(data, k, "")
    paper_name, figure_name = _names(data, k)

    runs = {run_id: RunSpec(run_id, tuple(spec["overrides"]), spec.get("label", run_id), spec["dt_source"],
                            spec.get("colour")) for run_id, spec in data["runs"].items()}
    timed = any(panel["quantity"] == "work_precision" for panel in data["panels"])
    fidelity = {}
    for name, profile in data["fidelity"].items():
        per_run = profile.get("runs", {})
        for run_id in per_run:
            require(k(f"fidelity.{name}.runs"), run_id, run_id in runs, f"a run of this figure: {list(runs)}")
        if timed:
            require(k(f"fidelity.{name}.cost"), None, "cost" in profile,
                    "{paths: N, repeats: R}: how this profile times the runs of the work_precision panels")
        else:
            require(k(f"fidelity.{name}.cost"), profile.get("cost"), "cost" not in profile,
                    "nothing: a profile's cost times the runs of work_precision panels, and this figure has none")
        fidelity[name] = {"overrides": tuple(profile["overrides"]), "runs": {r: tuple(v) for r, v in per_run.items()}}
        if timed:
            fidelity[name]["cost"] = dict(profile["cost"])

    common = tuple(data["common"])
    studies = _studies(common, runs, fidelity, k)
    for i, panel in enumerate(data["panels"]):
        _check_panel(panel, k, f"panels[{i}]", runs, studies)

    expanded = []
    for i, spec in enumerate(data["checks"]):
        require(k(f"checks[{i}].run"), spec.get("run"), ("run" in spec) != ("runs" in spec),
                "a run id, or runs: a list of run ids (one of the two)")
        if "other" in spec:
            require(k(f"checks[{i}].other"), spec["other"],
                    isinstance(spec["other"], str) and spec["other"] in runs and spec["other"] not in studies,
                    f"an ensemble run of this figure: {[r for r in runs if r not in studies]}")
        for run_id in spec.get("runs") or [spec["run"]]:
            require(k(f"checks[{i}].run"), run_id, run_id in runs, f"a run of this figure: {list(runs)}")
            require(k(f"checks[{i}].kind"), spec["kind"], checks_mod.CHECK_KINDS[spec["kind"]].study == (run_id in studies),
                    checks_mod.kind_mismatch(run_id, run_id in studies))
            expanded.append({**{x: v for x, v in spec.items() if x not in ("run", "runs")}, "run": run_id})

    ids = list(dict.fromkeys(spec["id"] for spec in data["checks"]))
    for i, entry in enumerate(data.get("disagreements", [])):
        for check_id in entry["checks"]:
            require(k(f"disagreements[{i}].checks"), check_id, check_id in ids, f"a check id of this file: {ids}")

    window = data.get("window")
    return Experiment(path=path, paper=data["paper"], figure=data["figure"], title=data["title"],
                      caption=data["caption"], source=data.get("source", ""), note=data.get("note", ""),
                      observable=data.get("observable", "H"), oracle=data.get("oracle"),
                      common=common, fidelity=fidelity, runs=runs, panels=list(data["panels"]), checks=expanded,
                      window=tuple(window) if window else None, paper_name=paper_name, name=figure_name,
                      studies=studies, unconverged_steps=data.get("unconverged_steps", "fail"),
                      layout=parse_layout(data.get("layout"), k("layout"), len(data["panels"])),
                      disagreements=tuple(dict(entry) for entry in data.get("disagreements", [])),
                      drift=tuple((d["observable"], d.get("relative", False)) for d in data.get("drift", [])))


def _check_panel(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    """Refuse a panel that cannot be drawn from the figure's runs, in one line naming its key (its keys and the
    values every panel shares: the schema), then what its kind cannot draw (panels.PANEL_KINDS)."""
    kind = PANEL_KINDS[panel["quantity"]]
    if kind.runs_from is not None:   # its runs come from its other keys (a scan panel's series)
        kind.runs_from(panel, k, where)
    require(k(f"{where}.runs"), None, "runs" in panel, "a list of run ids")
    for run_id in panel["runs"]:
        require(k(f"{where}.runs"), run_id, run_id in runs, f"a run of this figure: {list(runs)}")
        require(k(f"{where}.runs"), run_id, (run_id in studies) == kind.studies,
                "a convergence study (a run with plan=convergence), as this panel draws `convergence`" if kind.studies
                else "an ensemble run: this one is a convergence study (plan=convergence), drawn by `quantity: convergence`")
    kind.check(panel, k, where, runs, studies)


# The keys of panels and checks that name something their runs record: refused before any compute where a run
# does not record it (in place of a refusal after the runs, when the figure is drawn or judged).
RECORDED = ("observable", "invariant")


def _recorded(setup: Setup) -> dict[str, tuple[list, str]]:
    """What a run records of each of RECORDED: (the names, where they come from, as a refusal says it)."""
    system, plan = setup.system, setup.plan
    declared = f"{type(system).__name__} declares: {list(system.invariants())}"
    if isinstance(plan, ConvergencePlan):
        return {"observable": ([plan.observable], "its plan.observable"),
                "invariant": (list(system.invariants()) if plan.invariants == "declared" else [],
                              f"plan.invariants=declared records the ones {declared}")}
    return {"observable": (list(plan.observables), f"plan.observables; {type(system).__name__} has "
                                                   f"{list(system.observables())}"),
            "invariant": (list(system.invariants()), declared)}


def _named(exp: Experiment) -> list[tuple[str, str, object, str]]:
    """(key, which of RECORDED, a name it gives, a run that must record it), for every name the experiment's
    observable, panels and checks give."""
    named = [("observable", "observable", exp.observable, run_id) for run_id in exp.runs if run_id not in exp.studies]
    for i, panel in enumerate(exp.panels):
        for what in (w for w in RECORDED if w in panel):
            names = panel[what] if isinstance(panel[what], list) else [panel[what]]
            named += [(f"panels[{i}].{what}", what, name, run_id) for name in names for run_id in panel["runs"]]
    for check in exp.checks:
        for what in (w for w in RECORDED if w in check):
            named += [(f"checks.{check['id']}.{what}", what, check[what], run_id)
                      for run_id in (check["run"], check.get("other")) if run_id is not None]
    return named


def _check_against_runs(exp: Experiment, setups: dict) -> None:
    """Refuse, before any compute, what the figure asks of its runs and they cannot serve (``setups``: each run's
    Setup, as composed): an observable or invariant a run does not record, a field panel or a check whose run's
    system lacks the method it calls, a solvability panel or check whose run's integrator cannot give its
    half-step momenta."""
    for key, what, name, run_id in _named(exp):
        names, source = _recorded(setups[run_id])[what]
        require(f"{exp.path.name}:{key}", name, name in names, f"an {what} run {run_id} records: {names} ({source})")
    # (key, its value, the run, the record of its panel or check kind, what it is), panels first
    users = [(f"panels[{i}].quantity", p["quantity"], p["runs"][0], PANEL_KINDS[p["quantity"]], "panel")
             for i, p in enumerate(exp.panels)]
    users += [(f"checks.{c['id']}.kind", c["kind"], c["run"], checks_mod.CHECK_KINDS[c["kind"]], "check kind")
              for c in exp.checks]
    for key, value, run_id, kind, _ in users:
        if kind.needs_integrator_method:
            integrator = setups[run_id].integrator
            method = kind.needs_integrator_method
            require(f"{exp.path.name}:{key}", value, callable(getattr(integrator, method.split("(")[0], None)),
                    f"a panel or check kind run {run_id}'s integrator can serve: {integrator.name} has no {method}")
    for key, value, run_id, kind, what in users:
        if kind.needs_system_method:
            system = setups[run_id].system
            method = kind.needs_system_method
            require(f"{exp.path.name}:{key}", value, fields.method_of(system, method.split("(")[0]) is not None,
                    f"a {what} run {run_id}'s system can serve: {type(system).__name__} has no method {method}")


def figure_order(path: Path) -> tuple:
    """Paper by paper; figures by number (4.2 before 4.10), then the paper's diagnostics."""
    number = re.fullmatch(r"fig(\d+)(?:_(\d+))?", path.stem)
    return (path.parent.name, number is None, tuple(int(n) for n in number.groups() if n) if number else (), path.stem)


def discover(directories, only: list[str] | None = None) -> list[Experiment]:
    """Every ``<paper>/<figure>.yaml`` under ``directories`` (one directory or several: the built-in papers'
    ``bundled.EXPERIMENTS_DIR`` beside a user's own); ``only`` keeps the figures it names, each as paper/figure
    or by a figure id only one paper has (fig1 is a figure of several). Two files of one paper/figure id are
    refused: both would write, and the second replace, the same figure files."""
    directories = [Path(directories)] if isinstance(directories, (str, Path)) else [Path(d) for d in directories]
    for directory in directories:
        require("--experiments", str(directory), directory.is_dir(), "an existing directory")
    experiments, files = [], {}
    for directory in directories:
        for path in sorted(directory.glob("*/*.yaml")):
            exp = load(path)
            first = files.setdefault((exp.paper, exp.figure), path)
            require("--experiments", str(path), first == path,
                    f"one experiment file per paper/figure id; {exp.paper}/{exp.figure} is also {first}")
            experiments.append(exp)
    return select(experiments, only, ", ".join(map(str, directories))) if only else experiments


def select(experiments: list[Experiment], only: list[str], where: str) -> list[Experiment]:
    """The figures ``only`` names (``discover``), each as paper/figure or by a figure id only one paper has;
    ``where`` says in a refusal where they were looked for."""
    ids = sorted((Path(e.paper) / e.figure for e in experiments), key=figure_order)
    papers: dict[str, list[str]] = {}      # paper -> its figures, in the paper's order
    for i in ids:
        papers.setdefault(i.parent.name, []).append(i.name)
    wanted = set()
    for given in only:
        matches = [i.as_posix() for i in ids if given in (i.as_posix(), i.name)]
        require("--only", given, bool(matches), f"a figure of {where}, as paper: figures; "
                + "; ".join(f"{paper}: {', '.join(figures)}" for paper, figures in papers.items()))
        require("--only", given, len(matches) == 1,
                f"one figure; {given} is a figure of {len(matches)} papers: {', '.join(matches)}")
        wanted.update(matches)
    return [e for e in experiments if f"{e.paper}/{e.figure}" in wanted]


# --- one figure -----------------------------------------------------------------------------------------
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


TABLE_COLUMNS = ["run", "label", "integrator", "dt", "dt_source", "paths", "T", "mean_T", "sem_T",
                 "exact_T", "ratio_T", "max_abs_error", "t_max_abs_error", "start_value", "ratio_to_start",
                 "max_abs_change", "t_max_abs_change", "window_mean", "window_se", "window_se_exact",
                 "max_rel_mc_error", "mean_sign_changes", "nonfinite_paths", "solver_per_step", "solver_max_iterations",
                 "unconverged_steps", "wall_time_s", "path_steps_per_s", "cached", "stale"]


# A convergence study's rows: one per step size, its fitted order on each.
STUDY_COLUMNS = ["run", "label", "integrator", "dt_source", "error_kind", "reference", "observable", "paths", "T",
                 "dt", "error", "se", "resolvable", "local_slope", "order", "order_ci_low", "order_ci_high",
                 "nonfinite_paths", "wall_time_s", "cached", "stale"]


def _run_data(result: RunResult, cfg, observable: str, oracle: str | None) -> RunData:
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
                   _solver_statistics(ens), tuple(float(t) for t in ens.snapshots["t"]) if ens.snapshots else (),
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


def drift_column(observable: str, relative: bool) -> str:
    """The table's key of an observable's drift along a run's path: ``drift_C1``, ``relative_drift_C2``."""
    return f"{'relative_' if relative else ''}drift_{observable}"


def _drift_text(key: str, header: bool = False) -> str:
    """A drift column's quantity, "max_t |C1(t) - C1(0)|", "max_t |C2(t) - C2(0)| / |C2(0)|"; as a table's header
    (no "|", which would split a markdown cell) "largest drift of C1", "largest relative drift of C2"."""
    relative, name = key.startswith("relative_"), key.split("drift_", 1)[1]
    if header:
        return f"largest {'relative ' if relative else ''}drift of {name}"
    return f"max_t |{name}(t) - {name}(0)|" + (f" / |{name}(0)|" if relative else "")


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


def _table_row(exp: Experiment, spec: RunSpec, cfg, result: RunResult, data: RunData) -> dict:
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
                       ) -> dict[str, tuple[DictConfig, Setup]]:
    """Every run's validated config and the Setup its validation built (``config.compose_setup``), which the
    run uses: built once, then checked against what the figure's panels and checks ask of them
    (``_check_against_runs``). ``source``: where its configs are found (a user's ``--config-dir`` adds theirs)."""
    composed = {run_id: compose_setup(exp.overrides(run_id, fidelity, runs_root, cache, executor), source)
                for run_id in exp.runs}
    _check_against_runs(exp, {run_id: setup for run_id, (_, setup) in composed.items()})
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
        seconds = r.ensemble.attrs.get("wall_time_s", math.nan)
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
        _write_table(exp, fidelity, table, stage, studies, precision, verdicts, _panel_tables(exp, data))
        _write_checks(exp, fidelity, verdicts, stage["checks"])
        write_record(stage["json"], seal(_record(exp, fidelity, table, studies, precision, verdicts, files, configs,
                                                 _provenance(exp, fidelity, results, time.perf_counter() - started,
                                                             command, source)), stage))
    return FigureOutcome(exp, fidelity, table, verdicts, files, studies)


def _record(exp: Experiment, fidelity: str, table: list[dict], studies: list[dict], precision: list[dict],
            verdicts: list[CheckResult], files: dict[str, Path], configs: dict, provenance: dict) -> dict:
    """The figure's record: what the gallery shows of it, and what it was made from (``kept_record``)."""
    return {"paper": exp.paper, "figure": exp.figure, "title": exp.title, "paper_name": exp.paper_name,
            "name": exp.name, "label": exp.label, "heading": exp.heading, "diagnostic": exp.diagnostic,
            "caption": exp.caption,
            "source": exp.source, "note": exp.note, "observable": exp.observable, "fidelity": fidelity,
            "fidelity_overrides": {name: {"overrides": list(p["overrides"]),
                                          "runs": {r: list(v) for r, v in p["runs"].items()}}
                                   for name, p in exp.fidelity.items()},
            "table": table, "convergence": studies, "work_precision": precision,
            "checks": [v.as_dict() for v in verdicts],
            "disagreements": [dict(entry) for entry in exp.disagreements],
            "verdicts": verdict_counts(verdicts),
            "files": {k: p.name for k, p in files.items()}, "sgi_run_version": __version__,
            "papers_counts": exp.at_papers_counts(fidelity),
            "run_config_hashes": {run_id: config_hash(cfg) for run_id, cfg in configs.items()},
            "experiment_digest": experiment_digest(exp), "provenance": provenance}


def _provenance(exp: Experiment, fidelity: str, results: dict, wall_time_s: float, command: str | None,
                source: dict | None = None) -> dict:
    """What made the figure's numbers: the sgi-run commit, the numerics code, the device, JAX, when, the command;
    ``compute_wall_time_s``: the runs' own wall times as computed (a cached run's from when it ran), so a figure
    made from runs of several sessions still says what it cost."""
    import jax

    from sgi_run.engine import device
    from sgi_run.provenance import code_digest, source_commit

    computed_on = sorted({str(r.ensemble.attrs.get("device", "")) for r in results.values()} - {""})
    return {**(source or source_commit()), "numerics_code": code_digest(), "device": device.describe(),
            "runs_computed_on": computed_on, "jax_version": jax.__version__,
            "date_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "wall_time_s": round(wall_time_s, 1),
            "compute_wall_time_s": round(sum(float(r.ensemble.attrs.get("wall_time_s", 0.0))
                                             for r in results.values()), 1),
            "cached_runs": sum(bool(r.cached) for r in results.values()), "runs": len(results),
            "command": command or figure_command(exp.paper, exp.figure, fidelity)}


def figure_command(paper: str, figure: str, fidelity: str) -> str:
    """The command that makes one figure (into ``outputs/figures``)."""
    return shlex.join(["sgi-figures", "--fidelity", fidelity, "--only", f"{paper}/{figure}"])


def figure_files(exp: Experiment, output_dir) -> dict[str, Path]:
    """The files ``make_figure`` writes for a figure: its image (PNG, and PDF and SVG for print), table (csv, md),
    verdicts and JSON record."""
    out = Path(output_dir) / exp.paper
    return {"png": out / f"{exp.figure}.png", "pdf": out / f"{exp.figure}.pdf", "svg": out / f"{exp.figure}.svg",
            "csv": out / f"{exp.figure}.csv", "md": out / f"{exp.figure}.md",
            "checks": out / f"{exp.figure}_checks.md", "json": out / f"{exp.figure}.json"}


def experiment_digest(exp: Experiment) -> str:
    """A digest of the experiment file's content (its YAML as data: comments and layout aside): its panels, checks,
    bands, captions."""
    data = yaml.safe_load(exp.path.read_text())
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()


def stale_reasons(record: dict, exp: Experiment | None) -> list[str]:
    """Why a figure's record no longer shows what today's checkout would draw, in words (empty: it is current):
    its experiment file was edited since (``experiment_digest``, the same test ``kept_record`` makes), the
    numerics code changed since (``provenance.numerics_code``), or it was drawn from uncommitted code (no commit
    names what drew it). ``exp``: the figure's experiment today (None: not known here, so not compared)."""
    from sgi_run.provenance import code_digest

    made = record.get("provenance") or {}
    reasons = []
    if exp is not None and record.get("experiment_digest") != experiment_digest(exp):
        reasons.append("its experiment file was changed after it was drawn")
    if made.get("numerics_code") != code_digest():
        reasons.append("the numerics code was changed after it was drawn")
    if made.get("uncommitted_changes"):
        reasons.append("drawn from uncommitted code")
    return reasons


def kept_record(exp: Experiment, fidelity: str, output_dir, configs: dict, cache: str,
                log: Callable[[str], None] = print) -> dict | None:
    """The figure's record already in ``output_dir`` when it was made from exactly these runs (the same config
    of every run) and exactly this experiment file (``experiment_digest``: an edited band or panel makes the figure
    again, from the cached runs), and the cache policy reuses it: ``reuse`` keeps it whatever numerics code made it
    (its provenance names the commit), ``refresh_stale`` only from today's numerics code, ``off`` never. A figure
    computed in an earlier session (a GPU window) is then not recomputed, e.g. from ``gallery/paper``. One that
    would be kept but whose files are not as sgi-figures wrote them (``figure_fault``: a file missing or changed,
    the record edited) is not trusted: it is made again, and ``log`` says why."""
    from sgi_run.provenance import code_digest

    files = figure_files(exp, output_dir)
    if cache == "off" or not files["json"].exists():
        return None
    try:
        record = read_record(files["json"])
    except (OSError, ValueError) as err:
        log(f"    made again: {files['json']} cannot be read as a figure's record ({err})")
        return None
    same_runs = (record.get("run_config_hashes") == {run_id: config_hash(cfg) for run_id, cfg in configs.items()}
                 and record.get("experiment_digest") == experiment_digest(exp))
    same_code = record.get("provenance", {}).get("numerics_code") == code_digest()
    if not (same_runs and record.get("fidelity") == fidelity and (same_code or cache == "reuse")):
        return None
    fault = figure_fault(record, files_in(files["json"].parent), files["json"].parent)
    if fault:
        log(f"    made again: {fault}")
        return None
    return record


def _unconverged_verdicts(exp: Experiment, results: dict) -> list[CheckResult]:
    """A FAIL for each run some of whose solves did not converge (its numbers are not the method's), unless
    the figure studies exactly that (``unconverged_steps: studied``); nothing for runs whose solves converged."""
    if exp.unconverged_steps == "studied":
        return []
    lines = {run_id: unconverged_line(r.ensemble) for run_id, r in results.items()}
    return [CheckResult(id="solves_converge", kind="solver_statistic", run=run_id,
                        criterion="every implicit solve of the run converges (the experiment does not declare "
                                  "unconverged_steps: studied)", quantity=SOLVER_STATISTICS["unconverged_steps"],
                        verdict=FAIL, value=float(solver_counts(results[run_id].ensemble)["unconverged_steps"]),
                        se=None, t=None, band=str(Band(None, 0)), margin_se=None, detail=line)
            for run_id, line in lines.items() if line]


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


def strict_json(x):
    """``x`` with every non-finite float (NaN, ±inf: a mean over no finite paths, a run that never diverged)
    as None, numpy scalars as Python ones, tuples as lists: what strict JSON (``allow_nan=False``) can hold."""
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {k: strict_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [strict_json(v) for v in x]
    return x


def write_record(path: Path, record: dict) -> None:
    """A figure's record as strict JSON: a non-finite number is null (NaN is no JSON; a strict parser, as a
    browser's, refuses the file). Readers take null as the missing or non-finite value it stood for. The record
    ends with the digest of its content (``record_digest``), which an edit made after it was written breaks."""
    content = json.loads(json.dumps(strict_json(record), default=_json_default, allow_nan=False))   # as read back
    content["record_digest"] = record_digest(content)
    path.write_text(json.dumps(content, indent=1, allow_nan=False) + "\n")


def read_record(path: Path) -> dict:
    """A figure's record (``write_record``'s, or an earlier version's, whose non-finite numbers are NaN)."""
    record = json.loads(Path(path).read_text())
    if not isinstance(record, dict):
        raise ValueError(f"a JSON {type(record).__name__}, not an object")
    return record


def record_digest(record: dict) -> str:
    """sha256 of a record's content as read back (keys sorted), its own digest left out."""
    content = {k: v for k, v in record.items() if k != "record_digest"}
    return hashlib.sha256(json.dumps(content, sort_keys=True).encode()).hexdigest()


def seal(record: dict, files: dict[str, Path]) -> dict:
    """``record`` with the sha256 of each of the figure's other files as written at ``files``: a file changed or
    cut short after it was written (a full disk, a hand) then no longer matches its record (``figure_fault``)."""
    return {**record, "file_digests": {key: hashlib.sha256(path.read_bytes()).hexdigest()
                                       for key, path in files.items() if key != "json"}}


def files_in(directory: Path) -> Callable[[str], bytes | None]:
    """The ``read`` of ``figure_fault`` for a figure's files in ``directory``."""
    def read(name: str) -> bytes | None:
        path = Path(directory) / name
        return path.read_bytes() if path.is_file() else None
    return read


def figure_fault(record: dict, read: Callable[[str], bytes | None], where) -> str | None:
    """Why a figure's files are not as sgi-figures wrote them, naming the file (None when they are): the record has
    no digests (an earlier sgi-figures wrote it) or was changed since, or a file it lists is missing or differs
    from its digest. ``read(name)``: the bytes of the figure's file ``name`` (None: there is none); ``where``: the
    place the files are named in (a directory, an archive's ``<paper>``)."""
    files = record.get("files")
    if not isinstance(files, dict) or "json" not in files:
        return f"{where} holds no figure's record"
    if "record_digest" not in record:
        return f"{where}/{files['json']} keeps no digests of its files (an earlier sgi-figures wrote it)"
    if record["record_digest"] != record_digest(record):
        return f"{where}/{files['json']} was changed after sgi-figures wrote it (its digest does not match)"
    for key, name in files.items():
        if key == "json":
            continue
        data = read(name)
        if data is None:
            return f"{where}/{name} is missing"
        if hashlib.sha256(data).hexdigest() != record.get("file_digests", {}).get(key):
            return f"{where}/{name} is not the file its record was written with (its sha256 differs)"
    return None


@contextlib.contextmanager
def staged(files: dict[str, Path]):
    """Paths of the same names in a temporary directory beside ``files`` (all in one directory) for the caller to
    write; once all are written each is renamed over its own name, in their order (a figure's record last). A
    write that fails (a full disk) leaves the files as they were, and nothing of its own."""
    directory = next(iter(files.values())).parent
    directory.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=f".{next(iter(files.values())).stem}.", suffix=".partial", dir=directory))
    try:
        yield {key: stage / path.name for key, path in files.items()}
        for path in files.values():
            os.replace(stage / path.name, path)
    except OSError as err:
        if err.filename and Path(err.filename).parent == stage:    # the file the user knows, not its stage
            err.filename = str(directory / Path(err.filename).name)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)


# --- writing ---------------------------------------------------------------------------------------------
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
    drifts = [_drift_text(key, header=True) for key in drift_keys(rows)]
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


def _markdown(header: list[str], cells: list[list[str]]) -> list[str]:
    def row(texts) -> str:      # a "|" of a cell's text ("SE/|E|") would end its cell
        return "| " + " | ".join(str(t).replace("|", "\\|") for t in texts) + " |"
    return [row(header), "|" + "---|" * len(header)] + [row(c) for c in cells]


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
    explanation. ``text``: how a text is escaped (the site's ``plain``); ``verdict``: how a verdict is shown (a
    badge)."""
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


def _panel_tables(exp: Experiment, data: dict) -> list[tuple]:
    """The tables of the figure's panels whose kind makes one (panels.PanelKind.table): the values they draw."""
    from sgi_run.figures.panels import PANEL_KINDS

    kinds = [PANEL_KINDS[panel["quantity"]] for panel in exp.panels]
    return [kind.table(panel, data) for panel, kind in zip(exp.panels, kinds) if kind.table]


def _write_table(exp: Experiment, fidelity: str, table: list[dict], files: dict, studies: list[dict] = (),
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
        lines += [f"{said}{text}", "", *_markdown(header, rows), ""]
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
        drift = "".join(f" The {_drift_text(key, header=True)}: {_drift_text(key)} along the run's path (kept path 0)"
                        " over its output times, as the figure draws it." for key in drifts)
        lines += [f"{said}Observable {exp.observable}; {mean}(T) at the final time {horizon_text(table)}.{se}{window}"
                  f"{drift}",
                  "", *_markdown(md_header(exp.observable, table), [md_cells(r) for r in table]), ""]
        said = ""
    if studies:
        lines += [f"{said}Convergence studies (plan=convergence): the error at T against the step size Δt (strong: "
                  "the RMS distance of the state to the reference path; weak: the error of the mean), ± its Monte "
                  "Carlo standard error (SE). An error within 2 SE of zero is not resolvable and not fitted; the local "
                  "slope is between a step size and the next coarser one; the fitted order is the least-squares slope "
                  "of log |error| over the resolvable step sizes, with its 95% path-bootstrap interval.", "",
                  *_markdown(STUDY_MD_HEADER, study_md_rows(studies)), ""]
    if precision:
        first = precision[0]
        lines += [f"Work-precision: each step size's error (as above) against its cost, timed in one series on "
                  f"{first['device']}: {first['timed_paths']} paths from 0 to T in one shard, compiled apart (first "
                  f"call), then timed {first['repeats']} times in rounds that visit every method; the median per path "
                  "with the fastest and slowest repeat. The largest drift of an invariant is over every path and step "
                  "of the study.", "", *_markdown(work_precision_header(precision), work_precision_md_rows(precision)), ""]
        winners = work_precision.cheapest(precision)
        if winners:
            lines += ["The cheapest method to reach an error (each method's cost interpolated log-log between the two "
                      "step sizes whose resolvable errors bracket it; '≤': below that error already at its coarsest "
                      "step size, whose cost is shown; the next cheapest's cost as a multiple):", "",
                      *_markdown(["error", "cheapest", "wall time per path", "next cheapest"],
                                 [[f"{w['error']:g}", w["method"],
                                   f"{'≤ ' if w['at_most'] else ''}{w['seconds_per_path']:.3g} s",
                                   f"{w['runner_up']} ({w['ratio']:.2f}x)"] for w in winners]), ""]
    files["md"].write_text("\n".join(lines))


def _write_checks(exp: Experiment, fidelity: str, verdicts: list[CheckResult], path: Path) -> None:
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
