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

import csv
import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import yaml

from sgi_run import __version__
from sgi_run.config import build, compose
from sgi_run.core.errors import ConfigError
from sgi_run.core.noise import truncation_bound
from sgi_run.engine.linear_oracle import method_moments
from sgi_run.figures import checks as checks_mod
from sgi_run.figures.results import (FAIL, PASS, SKIP, SOLVER_STATISTICS, Band, CheckResult, RunData, Series,
                                     StudyData)
from sgi_run.figures.statistics import SELECTION_RULES, has_path_averages, valid_increments, window_average
from sgi_run.runner import ConvergenceRun, RunResult, run
from sgi_run.summary import max_relative_error, solver_counts, unconverged_line

FIDELITIES = ("smoke", "reduced", "paper")
# "project choice": a diagnostic whose step size neither the paper nor its spec sets.
DT_SOURCES = ("paper", "inferred", "spec choice", "project choice")
PANEL_QUANTITIES = ("mean", "error", "density", "convergence", "path", "sphere", "scan", "field", "potential",
                    "solvability")
# A `scan` panel: one value per run against its dt, a curve per series (e.g. per method).
_SCAN_KEYS = ("quantity", "series", "runs", "measure", "observable", "path", "relative", "title", "ylabel", "ylim",
              "yscale")
SCAN_MEASURES = ("path_deviation", *SOLVER_STATISTICS)
# A `sphere` panel (3-D): state views along one kept path, one on the sphere of its initial radius; or every kept
# path's point at one time `at`; `select` a kept path by a rule, `contours` of the energy, runs drawn `red`.
_SPHERE_KEYS = ("quantity", "runs", "solid", "dashed", "path", "title", "colours", "black", "red", "select", "at",
                "contours", "view")
# A `solvability` panel: one (theta, phi) map of ||(A, B)|| per fixed increment vector, from one run's integrator
# and system (paper 002 Figure 14).
_SOLVABILITY_KEYS = ("quantity", "runs", "increments", "radius", "title", "label")
# A `path` panel: observables along one kept path (a single realisation), their deviation from t = 0.
_PATH_KEYS = ("quantity", "runs", "observable", "path", "deviation", "absolute", "relative", "title", "ylabel", "ylim",
              "yscale", "xlim", "colours")
# A `field` panel: one row of maps, path `path`'s state at each snapshot time `at` (default: every snapshot
# the run stored) drawn on a latitude-longitude grid by the system's `render_field(state, n_lat, n_lon)`.
_FIELD_KEYS = ("quantity", "runs", "at", "path", "grid", "title", "label")
# A `potential` panel: the heavy top's effective potential V(theta; p_psi(t), p_phi(t)) of kept path `path`
# at each time `at` (solid) and the level of E'(t) (dashed), theta over `xlim` (spec 002 Figs 3, 10, 13).
_POTENTIAL_KEYS = ("quantity", "runs", "at", "path", "xlim", "ylim", "title", "ylabel")
_DENSITY_KEYS = ("coordinate", "at", "bins", "range")
_CONVERGENCE_KEYS = ("quantity", "runs", "title", "ylabel", "ylim", "slopes", "colours")   # all a convergence panel takes
_LABEL_KEYS = ("reference_label", "density_label")   # per-panel overrides of the derived legend labels
_REQUIRED = ("paper", "figure", "title", "caption", "common", "fidelity", "runs", "panels", "checks")
# `unconverged_steps:` what a run's unconverged solves mean for the figure: its numbers are not the method's, so
# the figure fails, unless where the solves stop converging is what the figure studies (a dt scan).
UNCONVERGED_STEPS = {"fail": "the default: a run whose solves did not all converge fails the figure",
                     "studied": "non-convergence is what the figure shows"}


@dataclasses.dataclass(frozen=True)
class RunSpec:
    id: str
    overrides: tuple[str, ...]
    label: str
    dt_source: str


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
    unconverged_steps: str = "fail"    # a key of UNCONVERGED_STEPS

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
                  profile["runs"].get(run_id, ()), [f"plan.fidelity={fidelity}"],
                  [f"output_root={hydra_quoted(str(runs_root))}"] if runs_root is not None else [],
                  [f"cache={cache}"] if cache is not None else [], executor]
        return list(_merged(layers).values())


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
        _need(len(kinds) == 1, k(f"runs.{run_id}.overrides"), list(spec.overrides),
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
    _need(isinstance(paper_name, str) and paper_name.strip() != "", k("paper_name"), paper_name,
          'the paper as headings cite it, e.g. "Kraus & Tyranowski (2021)"')
    number = _figure_number(str(data["figure"]))
    name = data.get("name", f"Figure {number}" if number else None)
    if number:
        _need(isinstance(name, str) and re.search(rf"(?<![\d.]){re.escape(number)}(?![\d.])", name) is not None,
              k("name"), name, f'the paper\'s name for figure {data["figure"]}, e.g. "Figure {number}"')
    else:
        _need(isinstance(name, str) and name.strip() != "" and not re.match(r"(?i)\s*fig", name), k("name"), name,
              'what this is, since its id names no paper figure, e.g. "diagnostic (not a paper figure)"')
    return paper_name.strip(), name.strip()


def _need(ok: bool, key: str, value, allowed: str) -> None:
    if not ok:
        raise ConfigError(key, value, allowed)


def _override_list(value, key: str) -> tuple[str, ...]:
    _need(isinstance(value, list) and all(isinstance(o, str) and "=" in o for o in value),
          key, value, "a list of key=value overrides")
    return tuple(value)


def load(path) -> Experiment:
    """Read and validate an experiment file; every refusal is one line naming the file and key."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        raise ConfigError(str(path), "", f"valid YAML ({str(err).splitlines()[0]})") from None
    k = lambda key: f"{path.name}:{key}"
    _need(isinstance(data, dict), k(""), type(data).__name__, "a mapping")
    for key in _REQUIRED:
        _need(key in data, k(key), None, "a value (required)")
    paper_name, figure_name = _names(data, k)

    _need(set(data["fidelity"]) == set(FIDELITIES), k("fidelity"), sorted(data["fidelity"]),
          f"exactly the profiles {list(FIDELITIES)}")
    runs = {}
    for run_id, spec in data["runs"].items():
        _need(spec.get("dt_source") in DT_SOURCES, k(f"runs.{run_id}.dt_source"), spec.get("dt_source"),
              f"one of {list(DT_SOURCES)}")
        runs[run_id] = RunSpec(run_id, _override_list(spec.get("overrides"), k(f"runs.{run_id}.overrides")),
                               spec.get("label", run_id), spec["dt_source"])
    fidelity = {}
    for name, profile in data["fidelity"].items():
        per_run = profile.get("runs") or {}
        for run_id, extra in per_run.items():
            _need(run_id in runs, k(f"fidelity.{name}.runs"), run_id, f"a run of this figure: {list(runs)}")
            _override_list(extra, k(f"fidelity.{name}.runs.{run_id}"))
        fidelity[name] = {"overrides": _override_list(profile.get("overrides"), k(f"fidelity.{name}.overrides")),
                          "runs": {r: tuple(v) for r, v in per_run.items()}}

    common = _override_list(data["common"], k("common"))
    studies = _studies(common, runs, fidelity, k)
    for i, panel in enumerate(data["panels"]):
        _check_panel(panel, k, f"panels[{i}]", runs, studies)

    window = data.get("window")
    _need(window is None or (isinstance(window, list) and len(window) == 2 and window[0] < window[1]),
          k("window"), window, "null or [start, end] with start < end")
    oracle = data.get("oracle")
    _need(oracle is None or oracle in ORACLES, k("oracle"), oracle, f"null or one of {list(ORACLES)}")
    unconverged = data.get("unconverged_steps", "fail")
    _need(unconverged in UNCONVERGED_STEPS, k("unconverged_steps"), unconverged,
          " or ".join(f"{name} ({what})" for name, what in UNCONVERGED_STEPS.items()))

    expanded = []
    for i, spec in enumerate(data["checks"]):
        checks_mod.validate(spec, k(f"checks[{i}]"))
        if "other" in spec:
            _need(spec["other"] in runs and spec["other"] not in studies, k(f"checks[{i}].other"), spec["other"],
                  f"an ensemble run of this figure: {[r for r in runs if r not in studies]}")
        targets = spec.get("runs") or [spec.get("run")]
        for run_id in targets:
            _need(run_id in runs, k(f"checks[{i}].run"), run_id, f"a run of this figure: {list(runs)}")
            _need((spec["kind"] in checks_mod.STUDY_KINDS) == (run_id in studies), k(f"checks[{i}].kind"), spec["kind"],
                  checks_mod.kind_mismatch(run_id, run_id in studies))
            expanded.append({**{x: v for x, v in spec.items() if x not in ("run", "runs")}, "run": run_id})

    return Experiment(path=path, paper=data["paper"], figure=data["figure"], title=data["title"],
                      caption=data["caption"], source=data.get("source", ""), note=data.get("note", ""),
                      observable=data.get("observable", "H"), oracle=oracle,
                      common=common, fidelity=fidelity, runs=runs, panels=list(data["panels"]), checks=expanded,
                      window=tuple(window) if window else None, paper_name=paper_name, name=figure_name,
                      studies=studies, unconverged_steps=unconverged)


def _check_panel(panel, k, where: str, runs: dict, studies: frozenset) -> None:
    """Refuse a panel that cannot be drawn, in one line naming its key."""
    if isinstance(panel, dict) and panel.get("quantity") == "scan":
        _check_scan(panel, k, where)
    _need(isinstance(panel, dict) and panel.get("quantity") in PANEL_QUANTITIES, k(f"{where}.quantity"),
          panel.get("quantity") if isinstance(panel, dict) else panel, f"one of {list(PANEL_QUANTITIES)}")
    convergence = panel["quantity"] == "convergence"
    _need(isinstance(panel.get("runs"), list) and len(panel["runs"]) > 0, k(f"{where}.runs"), panel.get("runs"),
          "a list of run ids")
    for run_id in panel["runs"]:
        _need(run_id in runs, k(f"{where}.runs"), run_id, f"a run of this figure: {list(runs)}")
        _need((run_id in studies) == convergence, k(f"{where}.runs"), run_id,
              "a convergence study (a run with plan=convergence), as this panel draws `convergence`" if convergence
              else "an ensemble run: this one is a convergence study (plan=convergence), drawn by `quantity: convergence`")
    for key in _LABEL_KEYS:
        _need(panel.get(key) is None or (isinstance(panel[key], str) and panel[key].strip() != ""),
              k(f"{where}.{key}"), panel.get(key), "a label for the legend (text)")
    _need(panel.get("ylim") is None or (isinstance(panel["ylim"], list) and len(panel["ylim"]) == 2
                                       and all(isinstance(v, (int, float)) for v in panel["ylim"])
                                       and panel["ylim"][0] < panel["ylim"][1]),
          k(f"{where}.ylim"), panel.get("ylim"), "[low, high] with low < high")
    if convergence:
        _check_keys(panel, _CONVERGENCE_KEYS, "convergence", k, where)
        slopes = panel.get("slopes", [])
        _need(isinstance(slopes, list) and all(_is_number(v) and v > 0 for v in slopes),
              k(f"{where}.slopes"), slopes, "a list of reference orders > 0, e.g. [1] or [0.5, 1]")
    else:
        _need("slopes" not in panel, k(f"{where}.slopes"), panel.get("slopes"), "a key of convergence panels only")
    if panel["quantity"] == "path":
        _check_keys(panel, _PATH_KEYS, "path", k, where)
        observables = panel.get("observable")
        _need(observables is None or isinstance(observables, str)
              or (isinstance(observables, list) and observables and all(isinstance(o, str) for o in observables)),
              k(f"{where}.observable"), observables, "an observable or a list of observables")
        _check_path_index(panel, k, where)
        deviation = panel.get("deviation", "initial")
        _need(deviation is None or deviation == "initial" or (isinstance(deviation, (int, float))
                                                             and not isinstance(deviation, bool)),
              k(f"{where}.deviation"), deviation, "initial (x(t) - x(0)), a number (x(t) - it) or null (x(t))")
        for flag in ("absolute", "relative"):
            _need(isinstance(panel.get(flag, False), bool), k(f"{where}.{flag}"), panel.get(flag), "true or false")
    if panel["quantity"] == "sphere":
        _check_keys(panel, _SPHERE_KEYS, "sphere", k, where)
        for key in ("solid", "dashed"):
            _need(panel.get(key) is None or isinstance(panel[key], str), k(f"{where}.{key}"), panel.get(key),
                  "a state view the runs keep along their paths (e.g. gamma, pi)")
        _check_path_index(panel, k, where)
        for key, how in (("black", "drawn black"), ("red", "drawn red, their start a red dot")):
            _need(isinstance(panel.get(key, []), list) and all(r in panel["runs"] for r in panel.get(key, [])),
                  k(f"{where}.{key}"), panel.get(key), f"a list of this panel's runs, {how}")
        _check_sphere_extras(panel, k, where)
    if panel["quantity"] == "solvability":
        _check_solvability(panel, k, where)
    if panel["quantity"] == "field":
        _check_field(panel, k, where)
    if panel["quantity"] == "potential":
        _check_keys(panel, _POTENTIAL_KEYS, "potential", k, where)
        at = panel.get("at")
        _need(_is_times(at), k(f"{where}.at"), at, "a list of output times >= 0 (the momenta V is built from)")
        xlim = panel.get("xlim", [0.2, 1.0])
        _need(isinstance(xlim, list) and len(xlim) == 2 and all(_is_number(v) for v in xlim)
              and 0 < xlim[0] < xlim[1] < math.pi, k(f"{where}.xlim"), xlim, "[low, high] inside (0, pi)")
        _check_path_index(panel, k, where)
    if panel["quantity"] == "density":
        for key in _DENSITY_KEYS:
            _need(key in panel, k(f"{where}.{key}"), None, "a value (density panels need "
                  f"{list(_DENSITY_KEYS)}; the runs need plan.snapshots with that time)")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_keys(panel: dict, allowed: tuple, kind: str, k, where: str) -> None:
    """Every key of a panel is one its kind takes."""
    for key in panel:
        _need(key in allowed, k(f"{where}.{key}"), panel[key], f"a key of a {kind} panel: {list(allowed)}")


def _check_path_index(panel: dict, k, where: str) -> None:
    _need(_is_int(panel.get("path", 0)) and panel.get("path", 0) >= 0, k(f"{where}.path"), panel.get("path"),
          "the index of a kept path (an integer >= 0)")


def _check_texts(panel: dict, keys: tuple, k, where: str) -> None:
    for key in keys:
        _need(panel.get(key) is None or (isinstance(panel[key], str) and panel[key].strip() != ""),
              k(f"{where}.{key}"), panel.get(key), "a text")


def _is_times(at) -> bool:
    """A non-empty list of times >= 0."""
    return isinstance(at, list) and len(at) > 0 and all(_is_number(t) and t >= 0 for t in at)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _check_sphere_extras(panel: dict, k, where: str) -> None:
    """A sphere panel's optional selection of a kept path, snapshot time, energy contours and view angles."""
    select = panel.get("select")
    _need(select is None or (isinstance(select, dict) and set(select) <= {"run", "rule", "orbit"}
                             and select.get("run") in panel["runs"] and select.get("rule") in SELECTION_RULES
                             and select.get("orbit", panel["runs"][0]) in panel["runs"]
                             and (select["rule"] != "farthest_crossing" or "orbit" in select)),
          k(f"{where}.select"), select, f"{{run: a run of this panel, rule: one of {list(SELECTION_RULES)}, orbit: the "
          "panel's run whose kept path is the deterministic orbit (farthest_crossing needs it)}")
    _need(panel.get("at") is None or (_is_number(panel["at"]) and panel["at"] >= 0), k(f"{where}.at"),
          panel.get("at"), "an output time >= 0 (every kept path's point at it)")
    _need(panel.get("contours") is None or (_is_int(panel["contours"]) and panel["contours"] >= 1),
          k(f"{where}.contours"), panel.get("contours"), "how many energy levels to draw (an integer >= 1)")
    view = panel.get("view")
    _need(view is None or (isinstance(view, list) and len(view) == 2 and all(_is_number(v) for v in view)),
          k(f"{where}.view"), view, "[elevation, azimuth] in degrees")


def _check_solvability(panel: dict, k, where: str) -> None:
    """A solvability panel's keys: one run, its increment vectors, the sphere's radius, texts."""
    _check_keys(panel, _SOLVABILITY_KEYS, "solvability", k, where)
    _need(len(panel["runs"]) == 1, k(f"{where}.runs"), panel["runs"], "a list of one run id (whose integrator and "
          "system the map is solved with)")
    _need(valid_increments(panel.get("increments")), k(f"{where}.increments"), panel.get("increments"),
          'a list of increment vectors, entries numbers or "D" / "-D" (+-the truncation bound)')
    _need(_is_number(panel.get("radius", 1.0)) and panel.get("radius", 1.0) > 0, k(f"{where}.radius"),
          panel.get("radius"), "the sphere's radius |Pi| > 0 (default 1)")
    _check_texts(panel, ("title", "label"), k, where)


def _check_field(panel: dict, k, where: str) -> None:
    """A field panel's keys: one run, snapshot times, a path index, the grid, texts."""
    _check_keys(panel, _FIELD_KEYS, "field", k, where)
    _need(len(panel["runs"]) == 1, k(f"{where}.runs"), panel["runs"], "a list of one run id (a field panel draws "
          "one run's snapshots)")
    at = panel.get("at")
    _need(at is None or (_is_times(at) and len(set(at)) == len(at)),
          k(f"{where}.at"), at, "a list of distinct snapshot times >= 0 (plan.snapshots), or absent: every snapshot")
    _check_path_index(panel, k, where)
    grid = panel.get("grid", [2, 2])
    _need(isinstance(grid, list) and len(grid) == 2 and all(_is_int(n) and n >= 2 for n in grid),
          k(f"{where}.grid"), grid, "[n_lat, n_lon]: two integers >= 2 (default [256, 512])")
    _check_texts(panel, ("title", "label"), k, where)


def _check_system_methods(exp: "Experiment", configs: dict) -> None:
    """Refuse, before any compute, a field panel or a check whose run's system lacks the method it calls, or a
    solvability panel or check whose run's integrator cannot give its half-step momenta."""
    from sgi_run.config import build_system

    needs = [(f"panels[{i}].quantity", "field", p["runs"][0], "render_field", "(state, n_lat, n_lon)")
             for i, p in enumerate(exp.panels) if p["quantity"] == "field"]
    needs += [(f"checks.{c['id']}.kind", c["kind"], c["run"], checks_mod.SYSTEM_METHODS[c["kind"]], "(state)")
              for c in exp.checks if c["kind"] in checks_mod.SYSTEM_METHODS]
    solvers = [(f"panels[{i}].quantity", "solvability", p["runs"][0]) for i, p in enumerate(exp.panels)
               if p["quantity"] == "solvability"]
    solvers += [(f"checks.{c['id']}.kind", "solvability", c["run"]) for c in exp.checks if c["kind"] == "solvability"]
    for key, value, run_id in solvers:
        integrator = build(configs[run_id]).integrator
        _need(callable(getattr(integrator, "half_step_momenta", None)), f"{exp.path.name}:{key}", value,
              f"a panel or check kind run {run_id}'s integrator can serve: {integrator.name} has no "
              "half_step_momenta(system, pi, dt, dw) (lgvi_cayley has)")
    systems = {}
    for key, value, run_id, method, arguments in needs:
        if run_id not in systems:
            systems[run_id] = build_system(configs[run_id].system)
        system = systems[run_id]
        _need(callable(getattr(system, method, None)), f"{exp.path.name}:{key}", value,
              f"a {'panel' if value == 'field' else 'check kind'} run {run_id}'s system can serve: "
              f"{type(system).__name__} has no method {method}{arguments}")


def _check_scan(panel: dict, k, where: str) -> None:
    """A scan panel's series, measure and keys; its ``runs`` are those of its series."""
    series = panel.get("series")
    _need(isinstance(series, list) and len(series) > 0
          and all(isinstance(e, dict) and set(e) == {"label", "runs"} and isinstance(e["label"], str)
                  and isinstance(e["runs"], list) and e["runs"] for e in series),
          k(f"{where}.series"), series, "a list of {label: text, runs: [run ids]}, one curve each")
    _need("runs" not in panel, k(f"{where}.runs"), panel.get("runs"), "nothing: a scan panel's runs are its series'")
    panel["runs"] = [r for e in series for r in e["runs"]]
    _check_keys(panel, _SCAN_KEYS, "scan", k, where)
    _need(panel.get("measure") in SCAN_MEASURES, k(f"{where}.measure"), panel.get("measure"),
          f"one of {list(SCAN_MEASURES)}")
    _need(isinstance(panel.get("relative", False), bool), k(f"{where}.relative"), panel.get("relative"),
          "true or false")
    _need(panel.get("yscale", "log") in ("log", "linear"), k(f"{where}.yscale"), panel.get("yscale"), "log or linear")


def figure_order(path: Path) -> tuple:
    """Paper by paper; figures by number (4.2 before 4.10), then the paper's diagnostics."""
    number = re.fullmatch(r"fig(\d+)(?:_(\d+))?", path.stem)
    return (path.parent.name, number is None, tuple(int(n) for n in number.groups() if n) if number else (), path.stem)


def discover(directory, only: list[str] | None = None) -> list[Experiment]:
    """Every ``<paper>/<figure>.yaml`` under ``directory``; ``only`` keeps the figures it names, each as
    paper/figure or by a figure id only one paper has (fig1 is a figure of several)."""
    directory = Path(directory)
    _need(directory.is_dir(), "--experiments", str(directory), "an existing directory")
    experiments = [load(p) for p in sorted(directory.glob("*/*.yaml"))]
    if only:
        ids = sorted((Path(e.paper) / e.figure for e in experiments), key=figure_order)
        papers: dict[str, list[str]] = {}      # paper -> its figures, in the paper's order
        for i in ids:
            papers.setdefault(i.parent.name, []).append(i.name)
        wanted = set()
        for given in only:
            matches = [i.as_posix() for i in ids if given in (i.as_posix(), i.name)]
            _need(bool(matches), "--only", given, f"a figure of {directory}, as paper: figures; "
                  + "; ".join(f"{paper}: {', '.join(figures)}" for paper, figures in papers.items()))
            _need(len(matches) == 1, "--only", given,
                  f"one figure; {given} is a figure of {len(matches)} papers: {', '.join(matches)}")
            wanted.update(matches)
        experiments = [e for e in experiments if f"{e.paper}/{e.figure}" in wanted]
    return experiments


# --- one figure -----------------------------------------------------------------------------------------
@dataclasses.dataclass
class FigureOutcome:
    experiment: Experiment
    fidelity: str
    table: list[dict]            # one row per ensemble run
    checks: list[CheckResult]
    files: dict[str, Path]
    convergence: list[dict] = dataclasses.field(default_factory=list)   # one row per study and step size


TABLE_COLUMNS = ["run", "label", "integrator", "dt", "dt_source", "paths", "T", "mean_T", "sem_T",
                 "exact_T", "ratio_T", "max_abs_error", "t_max_abs_error", "window_mean", "window_se", "window_se_exact",
                 "max_rel_mc_error", "nonfinite_paths", "solver_per_step", "solver_max_iterations",
                 "unconverged_steps", "wall_time_s", "path_steps_per_s", "cached", "stale"]


# A convergence study's rows: one per step size, its fitted order on each.
STUDY_COLUMNS = ["run", "label", "integrator", "dt_source", "error_kind", "reference", "observable", "paths", "T",
                 "dt", "error", "se", "resolvable", "local_slope", "order", "order_ci_low", "order_ci_high",
                 "nonfinite_paths", "wall_time_s", "cached", "stale"]

ORACLES = ("linear_moments",)


def _run_data(result: RunResult, cfg, observable: str, oracle: str | None) -> RunData:
    """The run's curves (one per recorded observable; the method oracle for ``observable``)."""
    ens = result.ensemble
    setup = build(cfg)
    _need(observable in ens.observables, f"{cfg.system.name}/{cfg.integrator.name}: plan.observables",
          list(ens.observables), f"a list including the experiment's observable {observable}")
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


def _table_row(exp: Experiment, spec: RunSpec, cfg, result: RunResult, data: RunData) -> dict:
    s = data.curve(None)
    row = {"run": spec.id, "label": spec.label, "integrator": cfg.integrator.name, "dt": cfg.plan.dt,
           "dt_source": spec.dt_source, "paths": cfg.plan.paths, "T": cfg.plan.T,
           "mean_T": float(s.mean[-1]), "sem_T": float(s.sem[-1]),
           "max_rel_mc_error": max_relative_error(s.mean, s.sem),
           "nonfinite_paths": int(np.max(result.ensemble.diagnostics["nonfinite_paths"])),
           "solver_per_step": data.solver_statistic("per_step"),
           "solver_max_iterations": data.solver_statistic("max_iterations"),
           "unconverged_steps": data.solver_statistic("unconverged_steps"),
           "wall_time_s": float(result.ensemble.attrs.get("wall_time_s", math.nan)), "cached": result.cached,
           "stale": result.stale}
    # Throughput of the run as it ran (compilation included): what a researcher choosing a method compares.
    wall = row["wall_time_s"]
    row["path_steps_per_s"] = float(result.ensemble.attrs.get("path_steps", math.nan)) / wall if wall > 0 else math.nan
    if s.exact is not None:
        err = np.abs(s.mean - s.exact)
        worst = int(np.argmax(np.where(np.isnan(err), np.inf, err)))
        row.update(exact_T=float(s.exact[-1]), ratio_T=float(s.mean[-1] / s.exact[-1]),
                   max_abs_error=float(err[worst]), t_max_abs_error=float(s.t[worst]))
    window = window_average(s, *exp.window) if exp.window else None
    if window is not None:
        row.update(window_mean=window[0], window_se=window[1],
                   window_se_exact=has_path_averages(s, *exp.window))
    return {c: row.get(c, "") for c in TABLE_COLUMNS}


def _study_rows(spec: RunSpec, cfg, result: ConvergenceRun) -> list[dict]:
    r, a = result.result, result.attrs
    run = {"run": spec.id, "label": spec.label, "integrator": cfg.integrator.name, "dt_source": spec.dt_source,
           "error_kind": r.error_kind, "reference": r.reference, "observable": a["observable"], "paths": r.paths,
           "T": float(a["T"]), "order": float(r.order), "order_ci_low": float(r.order_ci[0]),
           "order_ci_high": float(r.order_ci[1]), "wall_time_s": float(a.get("wall_time_s", math.nan)),
           "cached": result.cached, "stale": result.stale}
    return [run | {"dt": float(dt), "error": float(e), "se": float(se), "resolvable": bool(ok),
                   "local_slope": float(slope), "nonfinite_paths": int(bad)}
            for dt, e, se, ok, slope, bad in zip(r.dts, r.error, r.se, r.resolvable, r.local_slopes, r.nonfinite)]


def _describe(cfg) -> str:
    """The log line of a run: what it computes."""
    plan = cfg.plan
    if plan.get("kind") == "convergence":
        return (f"{cfg.integrator.name} {plan.error} convergence, dts={list(plan.dts)} paths={plan.paths} "
                f"T={plan.T}")
    return f"{cfg.integrator.name} dt={plan.dt} paths={plan.paths} T={plan.T}"


def compose_runs(exp: Experiment, fidelity: str, runs_root: str | None = None, cache: str | None = None,
                 executor: Sequence[str] = ()) -> dict:
    """Every run's validated config: a bad override is refused here, before any compute."""
    return {run_id: compose(exp.overrides(run_id, fidelity, runs_root, cache, executor)) for run_id in exp.runs}


def make_figure(exp: Experiment, fidelity: str, output_dir, runs_root: str | None = None,
                log: Callable[[str], None] = print, cache: str | None = None,
                executor: Sequence[str] = ()) -> FigureOutcome:
    from sgi_run.figures import plots   # matplotlib only when a figure is drawn

    configs = compose_runs(exp, fidelity, runs_root, cache, executor)
    _check_system_methods(exp, configs)
    results, data = {}, {}
    for n, (run_id, cfg) in enumerate(configs.items(), 1):
        log(f"[{exp.figure} {n}/{len(configs)}] {run_id}: {_describe(cfg)}")
        r = results[run_id] = run(cfg)
        data[run_id] = (StudyData(r.result, r.attrs["observable"], float(r.attrs["T"])) if isinstance(r, ConvergenceRun)
                        else _run_data(r, cfg, exp.observable, exp.oracle))
        seconds = r.ensemble.attrs.get("wall_time_s", math.nan)
        stale = " by other numerics code: --cache refresh_stale recomputes it" if r.stale else ""
        log(f"    cached (computed in {seconds:.1f} s{stale}): {r.run_dir}" if r.cached
            else f"    ran in {seconds:.1f} s: {r.run_dir}")

    table = [_table_row(exp, exp.runs[i], configs[i], results[i], data[i])
             for i in exp.runs if i not in exp.studies]
    studies = [row for i in exp.runs if i in exp.studies for row in _study_rows(exp.runs[i], configs[i], results[i])]
    per_run = {row["run"]: row for row in table + studies}     # a row of each run: its label, paths and T
    verdicts = [checks_mod.evaluate(spec, spec["run"], data[spec["run"]], data) for spec in exp.checks]
    verdicts += _unconverged_verdicts(exp, results)

    out = Path(output_dir) / exp.paper
    out.mkdir(parents=True, exist_ok=True)
    files = {"png": out / f"{exp.figure}.png", "csv": out / f"{exp.figure}.csv", "md": out / f"{exp.figure}.md",
             "checks": out / f"{exp.figure}_checks.md", "json": out / f"{exp.figure}.json"}
    plots.draw(exp, data, [per_run[i] for i in exp.runs], fidelity, files["png"])
    _write_table(exp, fidelity, table, files, studies)
    _write_checks(exp, fidelity, verdicts, files["checks"])
    record = {"paper": exp.paper, "figure": exp.figure, "title": exp.title, "paper_name": exp.paper_name,
              "name": exp.name, "label": exp.label, "heading": exp.heading, "diagnostic": exp.diagnostic,
              "caption": exp.caption,
              "source": exp.source, "note": exp.note, "observable": exp.observable, "fidelity": fidelity,
              "fidelity_overrides": {name: {"overrides": list(p["overrides"]),
                                            "runs": {r: list(v) for r, v in p["runs"].items()}}
                                     for name, p in exp.fidelity.items()},
              "table": table, "convergence": studies, "checks": [v.as_dict() for v in verdicts],
              "files": {k: p.name for k, p in files.items()}, "sgi_run_version": __version__}
    files["json"].write_text(json.dumps(record, indent=1, default=_json_default) + "\n")
    return FigureOutcome(exp, fidelity, table, verdicts, files, studies)


def _unconverged_verdicts(exp: Experiment, results: dict) -> list[CheckResult]:
    """A FAIL for each run some of whose solves did not converge (its numbers are not the method's), unless
    the figure studies exactly that (``unconverged_steps: studied``); nothing for runs whose solves converged."""
    if exp.unconverged_steps == "studied":
        return []
    lines = {run_id: unconverged_line(r.ensemble) for run_id, r in results.items()}
    return [CheckResult(id="solves_converge", kind="solver_statistic", run=run_id,
                        criterion="every implicit solve of the run converges (the experiment does not declare "
                                  "unconverged_steps: studied)",
                        verdict=FAIL, value=float(solver_counts(results[run_id].ensemble)["unconverged_steps"]),
                        se=None, t=None, band=str(Band(None, 0)), margin_se=None, detail=line)
            for run_id, line in lines.items() if line]


def _json_default(x):
    if isinstance(x, np.generic):
        return x.item()
    raise TypeError(f"not JSON serialisable: {type(x).__name__}")


# --- writing ---------------------------------------------------------------------------------------------
def fmt(x, digits: int = 4) -> str:
    if isinstance(x, bool) or x == "" or x is None:
        return "" if x is None else str(x)
    if isinstance(x, float):
        return f"{x:.{digits}g}"
    return str(x)


MD_HEADER = ["run", "Δt (source)", "paths", "E(T) ± SE", "exact(T)", "ratio", "max_t abs error (at t)",
             "window mean ± SE", "max_t SE/E", "non-finite paths", "solver it./step (max)", "wall s (path-steps/s)"]


def md_cells(row: dict) -> list[str]:
    """One table row as text cells (shared by the .md file and the gallery). Records written by
    earlier versions lack later columns (their window SE was always the bound)."""
    window_se = row.get("window_se", row.get("window_se_bound", ""))
    return [row["label"], f"{fmt(row['dt'])} ({row['dt_source']})", fmt(row["paths"]),
            f"{fmt(row['mean_T'], 5)} ± {fmt(row['sem_T'], 2)}", fmt(row["exact_T"], 5), fmt(row["ratio_T"]),
            f"{fmt(row['max_abs_error'])} ({fmt(row['t_max_abs_error'])})" if row["max_abs_error"] != "" else "",
            (f"{fmt(row['window_mean'], 5)} ± {'' if row.get('window_se_exact') else '≤ '}{fmt(window_se, 2)}"
             if row.get("window_mean", "") != "" else ""),
            fmt(row["max_rel_mc_error"], 3), fmt(row["nonfinite_paths"]), _solver_cell(row),
            f"{row['wall_time_s']:.0f}" + (f" ({fmt(row['path_steps_per_s'], 2)})" if row.get("path_steps_per_s", "") != ""
                                           else "")
            + (" (cached, other code)" if row.get("stale") else " (cached)" if row["cached"] else "")]


def _solver_cell(row: dict) -> str:
    """"3.02 (max 5)", with the unconverged path-steps when there are any; empty for explicit methods and for
    records written before these columns existed."""
    per_step = row.get("solver_per_step", "")
    if per_step == "" or (isinstance(per_step, float) and math.isnan(per_step)):
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
        low, high = row["order_ci_low"], row["order_ci_high"]
        order = ("none (< 2 errors resolvable)" if not math.isfinite(row["order"]) else f"{row['order']:.3f}"
                 + (f" [{low:.3f}, {high:.3f}]" if math.isfinite(low) and math.isfinite(high) else ""))
        wall = f"{row['wall_time_s']:.0f}" + (" (cached, other code)" if row.get("stale") else " (cached)" if row["cached"] else "")
        run = [row["label"], f"{kind} ({row['reference']} reference)"]
        cells.append((run if first else ["", ""])
                     + [f"{row['dt']:g}" + (f" ({row['dt_source']})" if first else ""),
                        f"{fmt(row['error'])} ± {fmt(row['se'], 2)}" + ("" if row["resolvable"] else " (not resolvable)"),
                        "–" if not math.isfinite(row["local_slope"]) else f"{row['local_slope']:.3f}"]
                     + ([order, fmt(row["paths"]), fmt(row["T"])] if first else ["", "", ""])
                     + [fmt(row["nonfinite_paths"]), wall if first else ""])
    return cells


def _markdown(header: list[str], cells: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(c) + " |" for c in cells]


def _write_table(exp: Experiment, fidelity: str, table: list[dict], files: dict, studies: list[dict] = ()) -> None:
    columns = list(dict.fromkeys((TABLE_COLUMNS if table else []) + (STUDY_COLUMNS if studies else [])))
    with open(files["csv"], "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=columns, restval="")
        w.writeheader()
        w.writerows([*table, *studies])
    from sgi_run.figures.plots import horizon_text

    lines, said = [f"# {exp.heading}", ""], f"Fidelity: {fidelity}. "
    if table:
        window = (f" Window mean: the time average of E over [{exp.window[0]:g}, {exp.window[1]:g}]; its SE is"
                  " exact (from every path's time average, plan.time_average) where the run has them, else"
                  " '≤' the average single-time SE (an upper bound)." if exp.window else "")
        lines += [f"{said}Observable {exp.observable}; E(T) at the final time {horizon_text(table)}; "
                  f"SE = Monte Carlo standard error.{window}", "", *_markdown(MD_HEADER, [md_cells(r) for r in table]), ""]
        said = ""
    if studies:
        lines += [f"{said}Convergence studies (plan=convergence): the error at T against the step size Δt (strong: "
                  "the RMS distance of the state to the reference path; weak: the error of the mean), ± its Monte "
                  "Carlo standard error (SE). An error within 2 SE of zero is not resolvable and not fitted; the local "
                  "slope is between a step size and the next coarser one; the fitted order is the least-squares slope "
                  "of log |error| over the resolvable step sizes, with its 95% path-bootstrap interval.", "",
                  *_markdown(STUDY_MD_HEADER, study_md_rows(studies)), ""]
    files["md"].write_text("\n".join(lines))


def _write_checks(exp: Experiment, fidelity: str, verdicts: list[CheckResult], path: Path) -> None:
    counts = {v: sum(r.verdict == v for r in verdicts) for v in (PASS, FAIL, SKIP)}
    lines = [f"# {exp.label}: acceptance checks ({fidelity} fidelity)", "", exp.title, "",
             ", ".join(f"{n} {v}" for v, n in counts.items()), "", "```"]
    lines += [r.line() for r in verdicts]
    lines += ["```", "", "Criteria:", ""]
    lines += [f"- {r.id} [{r.run}]: {r.criterion}" for r in verdicts]
    path.write_text("\n".join(lines) + "\n")
