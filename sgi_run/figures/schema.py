"""What an experiment file may hold, declared once (``EXPERIMENT``): at every level its keys, which of them are
required and what each value may be. ``experiment.load`` checks a file against it before anything else; a key
it does not know, a missing one or a value of the wrong kind is refused in one line naming the file, the key
and what is allowed. What the loader checks after it are the relations between keys: a panel's runs are runs of
the figure, a profile's ``cost`` comes with a work-precision panel, and so on.

A panel and a check are of a kind (``OfKind``), and the kind decides which keys it takes: a panel kind's ``keys``
(``panels.PANEL_KINDS``), a check kind's function parameters with the keys every check takes (``checks.validate``).
The values of the keys several kinds share are declared here (``PANEL``, ``CHECK``); those of a kind's own keys by
the kind: a panel kind's ``check`` (run by the loader, against the figure's runs), a check kind's signature.
"""
from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Callable, Collection, Mapping

from sgi_run.core.errors import require
from sgi_run.engine.plan import MAX_INDEX
from sgi_run.figures import checks
from sgi_run.figures.layout import LEGENDS, PALETTE
from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.panels.validate import check_keys, is_integer, is_number

# A figure's run profiles: each is a set of overrides; a run never knows the profile it was made for (a smoke
# and a reduced run with the same overrides are the same numbers, one cached result).
FIDELITIES = ("smoke", "reduced", "paper")
# "chosen here": a paper figure whose step size the paper does not give; "project choice": a diagnostic
# (not a figure of a paper) whose step size is the project's.
DT_SOURCES = ("paper", "inferred", "chosen here", "project choice")
# `unconverged_steps:` what a run's unconverged solves mean for the figure: its numbers are not the method's, so
# the figure fails, unless where the solves stop converging is what the figure studies (a dt scan).
UNCONVERGED_STEPS = {"fail": "the default: a run whose solves did not all converge fails the figure",
                     "studied": "non-convergence is what the figure shows"}
ORACLES = ("linear_moments",)   # each method's exact moments (linear systems only)
# A work-precision figure times each study this many times at most: the median and the spread of 100 repeats
# are as sharp as a machine's clock allows, and more only multiplies the time the timing takes.
MAX_COST_REPEATS = 100


# --- the kinds of node ------------------------------------------------------------------------------------
def _under(where: str, key) -> str:
    return f"{where}.{key}" if where else str(key)


@dataclasses.dataclass(frozen=True)
class Value:
    """A value of a kind: whether a value ``fits`` it, and what a refusal says is ``allowed``."""
    fits: Callable[[object], bool]
    allowed: str

    def check(self, value, k, where: str) -> None:
        require(k(where), value, self.fits(value), self.allowed)


@dataclasses.dataclass(frozen=True)
class Keys:
    """A mapping of the keys ``keys`` names, each with its own node; ``required`` among them."""
    what: str
    keys: Mapping[str, Node]
    required: tuple[str, ...] = ()

    def check(self, value, k, where: str) -> None:
        require(k(where), value, isinstance(value, dict), f"a mapping: {self.what} ({list(self.keys)})")
        for key, item in value.items():
            require(k(_under(where, key)), item, key in self.keys, f"a key of {self.what}: {list(self.keys)}")
        for key in self.required:
            require(k(_under(where, key)), None, key in value, "a value (required)")
        for key, item in value.items():
            self.keys[key].check(item, k, _under(where, key))


@dataclasses.dataclass(frozen=True)
class Named:
    """A mapping from names the file chooses (``what``: run ids) to values of one node; ``non_empty``: one at least."""
    what: str
    value: Node
    non_empty: bool = False

    def check(self, value, k, where: str) -> None:
        require(k(where), value, isinstance(value, dict) and (len(value) > 0 or not self.non_empty),
                f"a {'non-empty ' * self.non_empty}mapping of {self.what}s to their values")
        for name, item in value.items():
            require(k(where), name, isinstance(name, str) and name.strip() != "", f"{self.what}s (texts) as keys")
            self.value.check(item, k, _under(where, name))


@dataclasses.dataclass(frozen=True)
class Each:
    """A list of entries of one node (``what`` each is); ``non_empty``: one at least."""
    what: str
    entry: Node
    non_empty: bool = False

    def check(self, value, k, where: str) -> None:
        require(k(where), value, isinstance(value, list) and (len(value) > 0 or not self.non_empty),
                f"a {'non-empty ' * self.non_empty}list of {self.what}s")
        for i, item in enumerate(value):
            self.entry.check(item, k, f"{where}[{i}]")


@dataclasses.dataclass(frozen=True)
class OfKind:
    """A mapping of a registered kind (a panel, a check): ``of_kind`` refuses an unknown kind, and the keys and
    values the kind does not take; ``shared``: the values of keys several kinds share, ``required`` among them."""
    what: str
    of_kind: Callable[[dict, Callable, str], None]
    shared: Mapping[str, Value]
    required: tuple[str, ...] = ()

    def check(self, value, k, where: str) -> None:
        require(k(where), value, isinstance(value, dict), f"a mapping: a {self.what}")
        self.of_kind(value, k, where)
        for key in self.required:
            require(k(_under(where, key)), None, key in value, "a value (required)")
        for key, item in value.items():
            if key in self.shared:
                self.shared[key].check(item, k, _under(where, key))


Node = Value | Keys | Named | Each | OfKind


# --- the kinds of value -----------------------------------------------------------------------------------
def one_of(names: Collection[str], allowed: str | None = None) -> Value:
    return Value(lambda v: isinstance(v, str) and v in tuple(names), allowed or f"one of {list(names)}")


def nullable(value: Value) -> Value:
    return Value(lambda v: v is None or value.fits(v), f"null or {value.allowed}")


def integer(least: int, most: int, what: str) -> Value:
    return Value(lambda v: is_integer(v) and least <= v <= most, f"an integer from {least} to {most}: {what}")


def _is_text(v) -> bool:
    return isinstance(v, str) and v.strip() != ""


def _is_range(v) -> bool:
    return (isinstance(v, list) and len(v) == 2 and all(is_number(x) and math.isfinite(x) for x in v)
            and v[0] < v[1])


TEXT = Value(_is_text, "a text")
NAME = Value(_is_text, "a name (a text)")
NAMES = Value(lambda v: isinstance(v, list) and len(v) > 0 and all(_is_text(x) for x in v), "a list of names")
BOOLEAN = Value(lambda v: isinstance(v, bool), "true or false")
# The paper and the figure name the figure's directory and files.
FILE_NAME = Value(lambda v: isinstance(v, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]*", v) is not None,
                  "a name of letters, digits, _ . and - (it names the figure's directory and files)")
OVERRIDES = Value(lambda v: isinstance(v, list) and all(isinstance(o, str) and "=" in o for o in v),
                  "a list of key=value overrides")
RANGE = Value(_is_range, "[low, high] with low < high")


# --- panels and checks: their kinds' keys, and the values of the keys they share -----------------------------
def _panel_of_kind(panel: dict, k, where: str) -> None:
    """The panel's ``quantity`` is a registered kind, and every key of the panel one that kind takes."""
    quantity = panel.get("quantity")
    require(k(_under(where, "quantity")), quantity, isinstance(quantity, str) and quantity in PANEL_KINDS,
            f"one of {list(PANEL_KINDS)}")
    check_keys(panel, PANEL_KINDS[quantity].keys, quantity, k, where)


def _check_of_kind(spec: dict, k, where: str) -> None:
    """The check's ``kind`` is a registered kind, and its keys and their values ones that kind takes."""
    checks.validate(spec, k(where))


LABEL = nullable(Value(_is_text, "a label for the legend (text)"))
PANEL = OfKind("panel", _panel_of_kind, {
    "runs": Value(NAMES.fits, "a list of run ids"), "title": nullable(TEXT), "ylabel": nullable(TEXT),
    "label": nullable(TEXT), "reference_label": LABEL, "density_label": LABEL, "xlim": RANGE, "ylim": RANGE,
    "yscale": one_of(("linear", "log", "symlog")), "exact": BOOLEAN,
    "colours": one_of(("by_position",), "by_position (the n-th curve of every such panel has the same colour)")})
CHECK = OfKind("check", _check_of_kind, {
    "id": NAME, "run": Value(_is_text, "a run id"), "runs": Value(NAMES.fits, "a list of run ids"),
    "criterion": TEXT, "observable": NAME}, required=("id",))

# A place where the figure disagrees with its paper: the paper's claim quoted verbatim, where the paper makes it,
# the checks whose computed values show the disagreement (ids of this file's checks: the loader refuses others),
# what is measured, in words, and why, or "unexplained". Shown on the figure's page, in its table and gallery.
DISAGREEMENT = Keys("a disagreement with the paper", {
    "claim": Value(_is_text, "a text: the paper's sentence(s) the figure contradicts, quoted verbatim"),
    "where": Value(_is_text, 'a text: where the paper says it, e.g. "Section 2.3, Figure 2.2 caption"'),
    "checks": Value(NAMES.fits, "a non-empty list of check ids of this file whose computed values show it"),
    "finding": Value(_is_text, "a text: what the figure measures instead, in words"),
    "explanation": Value(_is_text, 'a text: why, or the word "unexplained"')},
    required=("claim", "where", "checks", "finding", "explanation"))

# --- the file -------------------------------------------------------------------------------------------------
COST = Keys("a profile's cost", {
    "paths": integer(1, MAX_INDEX - 1, "the paths of each timed run (in one shard)"),
    "repeats": integer(2, MAX_COST_REPEATS, "how many times each step size of each method is timed")},
    required=("paths", "repeats"))
PROFILE = Keys("a fidelity profile", {"overrides": OVERRIDES, "runs": Named("run id", OVERRIDES), "cost": COST},
               required=("overrides",))
RUN = Keys("a run", {"overrides": OVERRIDES, "label": TEXT, "dt_source": one_of(DT_SOURCES),
                     "colour": nullable(one_of(PALETTE, f"a colour of the palette: {list(PALETTE)}"))},
           required=("overrides", "dt_source"))
# `drift:` the drift of an invariant along each run's kept path 0, a column of the figure's table per entry (paper
# 001's figures draw a Casimir's or the energy's drift: its table shows it in numbers).
DRIFT = Keys("a drift column", {"observable": NAME, "relative": BOOLEAN}, required=("observable",))
LAYOUT = Keys("layout", {
    "columns": Value(lambda v: is_integer(v) and v >= 1, "an integer from 1 to the number of panels"),
    "legend": one_of(LEGENDS, "panel (each panel's legend beside it) or shared (one legend for the figure)"),
    "letters": BOOLEAN})
EXPERIMENT = Keys("an experiment file", {
    "paper": FILE_NAME, "figure": FILE_NAME,
    "paper_name": Value(_is_text, 'the paper as headings cite it, e.g. "Kraus & Tyranowski (2021)"'),
    "name": TEXT, "title": TEXT, "caption": TEXT, "source": TEXT, "note": TEXT, "observable": NAME,
    "oracle": nullable(one_of(ORACLES)), "common": OVERRIDES,
    "fidelity": Keys("fidelity", dict.fromkeys(FIDELITIES, PROFILE), required=FIDELITIES),
    "runs": Named("run id", RUN, non_empty=True), "layout": LAYOUT, "panels": Each("panel", PANEL, non_empty=True),
    "checks": Each("check", CHECK), "window": nullable(RANGE), "drift": Each("drift column", DRIFT, non_empty=True),
    "disagreements": Each("disagreement with the paper", DISAGREEMENT, non_empty=True),
    "unconverged_steps": one_of(UNCONVERGED_STEPS, " or ".join(f"{n} ({what})" for n, what in UNCONVERGED_STEPS.items()))},
    required=("paper", "figure", "title", "caption", "common", "fidelity", "runs", "panels", "checks"))
