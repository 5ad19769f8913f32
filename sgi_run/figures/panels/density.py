"""Panel kind ``density``: the normalised histogram of one state coordinate at a snapshot time, with the exact
density the panel names: ``coordinate``, ``at`` (a snapshot time; null: the final time), ``bins``, ``range: [low,
high]``, ``density`` (the system's method of the exact density), ``period`` (wraps the coordinate).
"""
from __future__ import annotations

import math

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import symbol
from sgi_run.figures.panels.validate import is_integer, is_number
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import histogram_density

PANEL_KEYS = ("quantity", "runs", "coordinate", "at", "bins", "range", "density", "period", "title", "ylabel", "ylim",
        "density_label", "colours")
REQUIRED_KEYS = ("coordinate", "at", "bins", "range")


def density_label(name: str) -> str:
    """The exact density's legend text from the system method that computes it:
    ``initial_density_x`` -> "exact initial density", ``gibbs_density_v`` -> "exact Gibbs density"."""
    kind = name.split("_density")[0] if "_density" in name else ""
    return {"initial": "exact initial density", "gibbs": "exact Gibbs (invariant) density",
            "": "exact density"}.get(kind, f"exact {kind.replace('_', ' ')} density")


def _check_density(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    for key in REQUIRED_KEYS:
        require(k(f"{where}.{key}"), None, key in panel, "a value (density panels need "
                f"{list(REQUIRED_KEYS)}; the runs need plan.snapshots with that time)")
    at, bins, extent, period = panel["at"], panel["bins"], panel["range"], panel.get("period")
    require(k(f"{where}.coordinate"), panel["coordinate"], isinstance(panel["coordinate"], str),
            "a state coordinate (e.g. x)")
    require(k(f"{where}.at"), at, at is None or (is_number(at) and at >= 0),
            "a snapshot time >= 0, or null: the final time")
    require(k(f"{where}.bins"), bins, is_integer(bins) and bins >= 1, "how many bins (an integer >= 1)")
    require(k(f"{where}.range"), extent, isinstance(extent, list) and len(extent) == 2
            and all(is_number(v) and math.isfinite(v) for v in extent) and extent[0] < extent[1],
            "[low, high] of the histogram, low < high")
    require(k(f"{where}.period"), period, period is None or (is_number(period) and period > 0),
            "null or the period the coordinate wraps at (> 0)")
    require(k(f"{where}.density"), panel.get("density"), isinstance(panel.get("density", ""), str),
            "the system's method of the exact density (a name)")


def _density_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    coordinate, at, bins, (lo, hi) = panel["coordinate"], panel["at"], panel["bins"], panel["range"]
    for run_id in panel["runs"]:
        x = data[run_id].samples(coordinate, at)
        if x is None:
            continue
        edges, density = histogram_density(x, bins, lo, hi, period=panel.get("period"))
        ax.stairs(density, edges, color=styles[run_id].colour, ls=styles[run_id].linestyle, lw=1.2,
                  label=exp.runs[run_id].label)
    if panel.get("density"):
        grid = np.linspace(lo, hi, 400)
        exact = getattr(data[panel["runs"][0]].system, panel["density"])
        ax.plot(grid, exact(grid), "k--", lw=1.2, label=panel.get("density_label") or density_label(panel["density"]))
    ax.set_xlabel(symbol(coordinate) + (f" mod {panel['period']:g}" if panel.get("period") else ""))
    when = "the final time" if at is None else f"t={at:g}"
    ax.set_ylabel(panel.get("ylabel", f"density of {symbol(coordinate)} at {when}"))
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    return 0


register(PanelKind("density", PANEL_KEYS, _check_density, 2.4, _density_panel))
