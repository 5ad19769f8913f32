"""Panel kind ``density``: the normalised histogram of one state coordinate at a snapshot time, with the exact
density the panel names.

Its keys are not checked against a list: a key it does not draw is ignored; the ones it needs are required.
"""
from __future__ import annotations

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import symbol
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import histogram_density

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


register(PanelKind("density", None, _check_density, 2.4, _density_panel))
