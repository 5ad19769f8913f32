"""Experiment files (``experiments/<paper>/<figure>.yaml``): what an experiment is, read and validated.

An experiment file names the runs of one paper figure as Hydra overrides, the sampling profiles
(smoke / reduced / paper), the plot and the acceptance checks; see
``experiments/kraus_tyranowski_2021/fig4_1.yaml`` for the annotated format. A run whose overrides
choose ``plan=convergence`` is a convergence study: drawn in ``convergence`` panels, judged by the
study check kinds (``fitted_order``, ``error_at``, ...), tabled per step size. This module loads and
validates a file (``load``), finds and orders a directory's (``discover``, ``figure_order``) and checks
what the figure asks of its runs before any compute (``check_against_runs``). Making the figure is
``pipeline``; its tables are ``tables``; its provenance record is ``records``.
"""
from __future__ import annotations

import dataclasses
import re
import shlex
from pathlib import Path
from collections.abc import Sequence

import yaml

from sgi_run.config import BuiltConfig
from sgi_run.core.errors import ConfigError, require
from sgi_run.engine.convergence_plan import ConvergencePlan
from sgi_run.figures import checks as checks_mod
from sgi_run.figures import fields
from sgi_run.figures.layout import Layout, parse_layout
from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.schema import EXPERIMENT, FIDELITIES  # noqa: F401  (the CLI reads FIDELITIES here)

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


def _recorded(setup: BuiltConfig) -> dict[str, tuple[list, str]]:
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


def check_against_runs(exp: Experiment, setups: dict) -> None:
    """Refuse, before any compute, what the figure asks of its runs and they cannot serve (``setups``: each run's
    BuiltConfig, as composed): an observable or invariant a run does not record, a field panel or a check whose run's
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



def figure_command(paper: str, figure: str, fidelity: str) -> str:
    """The command that makes one figure (into ``outputs/figures``)."""
    return shlex.join(["sgi-figures", "--fidelity", fidelity, "--only", f"{paper}/{figure}"])
