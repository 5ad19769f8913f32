"""Panel kind ``scan``: one value per run against its dt, log-log, one curve per entry of
``series: [{label, runs}]`` (e.g. per method): ``measure`` a solver statistic, e.g. ``per_step``, or
``path_deviation`` of ``observable`` along a kept path. Its runs are those of its series."""
from __future__ import annotations

import math

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.layout import LINESTYLES, MARKERS, style
from sgi_run.figures.panels.path import path_label, path_values
from sgi_run.figures.panels.style import BAND_SE, mean_text
from sgi_run.figures.panels.time import reference_label
from sgi_run.figures.panels.validate import is_number
from sgi_run.figures.statistics import window_average
from sgi_run.figures.results import SOLVER_STATISTICS, RunData

PANEL_KEYS = ("quantity", "series", "runs", "measure", "observable", "path", "relative", "title", "ylabel", "ylim",
        "yscale", "window", "reference")
# window_mean: the time average of E(observable) over `window` (a plateau), ±2 SE error bars, against dt.
MEASURES = ("path_deviation", "window_mean", *SOLVER_STATISTICS)


def _runs_of_series(panel: dict, k, where: str) -> None:
    """A scan panel's series; its ``runs`` are those of its series."""
    series = panel.get("series")
    require(k(f"{where}.series"), series,
            isinstance(series, list) and len(series) > 0
            and all(isinstance(e, dict) and set(e) == {"label", "runs"} and isinstance(e["label"], str)
                    and isinstance(e["runs"], list) and e["runs"] and all(isinstance(r, str) for r in e["runs"])
                    for e in series),
            "a list of {label: text, runs: [run ids]}, one curve each")
    require(k(f"{where}.runs"), panel.get("runs"), "runs" not in panel, "nothing: a scan panel's runs are its series'")
    panel["runs"] = [r for e in series for r in e["runs"]]


def _check_scan(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    """A scan panel's measure and scale."""
    require(k(f"{where}.measure"), panel.get("measure"), panel.get("measure") in MEASURES, f"one of {list(MEASURES)}")
    require(k(f"{where}.relative"), panel.get("relative"), isinstance(panel.get("relative", False), bool),
            "true or false")
    require(k(f"{where}.yscale"), panel.get("yscale"), panel.get("yscale", "log") in ("log", "linear"), "log or linear")
    window = panel.get("window")
    require(k(f"{where}.window"), window, (window is None) == (panel.get("measure") != "window_mean") and (
        window is None or (isinstance(window, list) and len(window) == 2 and all(is_number(t) for t in window)
                           and 0 <= window[0] < window[1])),
            "[start, end] of the time average, with measure: window_mean (and only with it)")


def scan_value(run: RunData, panel: dict, observable: str | None) -> float:
    """What a ``scan`` panel draws of one run: a solver statistic (results.SOLVER_STATISTICS) or, for
    ``measure: path_deviation``, max_t |x(t) - x(0)| of ``observable`` along kept path ``path`` (divided
    by |x(0)| with ``relative: true``); inf for a path that went non-finite."""
    if panel["measure"] != "path_deviation":
        return run.solver_statistic(panel["measure"])
    y = path_values(run.curve(observable), {"path": panel.get("path", 0), "relative": panel.get("relative", False),
                                            "absolute": True})
    return float(np.max(np.where(np.isfinite(y), y, np.inf)))


def window_value(run: RunData, panel: dict, observable: str) -> tuple[float, float]:
    """(the time average of E(observable) over the panel's ``window``, its SE); NaN where the run does not
    reach the window's end."""
    found = window_average(run.curve(observable), *panel["window"])
    return found if found is not None else (math.nan, math.nan)


def _scan_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """One value per run against its step size, log-log, one curve per entry of ``series`` (its own colour)
    and per observable (its own line style): e.g. chord iterations per step against dt, or the largest
    relative Casimir error against dt for two methods (statements in Luesink et al.'s (2023) text that have no figure). A run that went
    non-finite is an x at the top edge; a zero has no place on a log axis and is named in the legend
    (``yscale: linear`` draws it)."""
    observables = panel.get("observable", exp.observable)
    observables = [observables] if isinstance(observables, str) else list(observables)
    if panel["measure"] not in ("path_deviation", "window_mean"):
        observables = [None]
    log = panel.get("yscale", "log") == "log"
    plateau = panel["measure"] == "window_mean"
    for i, entry in enumerate(panel["series"]):
        for n, obs in enumerate(observables):
            dts = np.array([data[r].dt for r in entry["runs"]])
            if plateau:
                y, se = np.array([window_value(data[r], panel, obs) for r in entry["runs"]]).T
            else:
                y, se = np.array([scan_value(data[r], panel, obs) for r in entry["runs"]]), np.zeros(len(dts))
            order = np.argsort(dts)
            dts, y, se = dts[order], y[order], se[order]
            shown = np.isfinite(y) & ((y > 0) if log else True)
            label = entry["label"] + (f": {path_label(obs, panel | {'absolute': True})}" if obs and len(observables) > 1 else "")
            zeros = int(np.sum(y == 0)) if log else 0
            label += f" ({zeros} run(s) at exactly 0, not drawn)" if zeros else ""
            look = style(i)
            ax.errorbar(dts[shown], y[shown], yerr=BAND_SE * se[shown] if plateau else None, color=look.colour,
                        ls=LINESTYLES[(i + n) % len(LINESTYLES)], marker=MARKERS[(i + n) % len(MARKERS)], mfc="white",
                        ms=4.5, lw=1.1, capsize=2.5, label=label + (f" (±{BAND_SE} SE)" if plateau else ""))
            blown = ~np.isfinite(y)
            if blown.any() and n == 0:
                ax.plot(dts[blown], np.ones(blown.sum()), "x", color=style(i).colour, ms=7, mew=1.5, clip_on=False,
                        transform=ax.get_xaxis_transform(), label=f"{entry['label']}: non-finite path")
    if panel.get("reference") is not None:
        value = data[panel["runs"][0]].reference(panel["reference"])
        ax.axhline(value, color="k", ls="--", lw=1, zorder=1.5, label=reference_label(panel["reference"], value))
    ax.set_xscale("log")
    ax.set_yscale(panel.get("yscale", "log"))
    if panel.get("yscale") == "linear" and not plateau:
        ax.set_ylim(bottom=0)
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    if plateau:     # ticks at the runs' own step sizes, as a convergence panel has them
        from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullLocator

        ax.xaxis.set_major_locator(FixedLocator(sorted({data[r].dt for r in panel["runs"]})))
        ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(r"$\Delta t$")
    measure = panel["measure"]
    default = (f"max_t {path_label(observables[0] if len(observables) == 1 else 'C', panel | {'absolute': True})}"
               if measure == "path_deviation" else f"time average of {mean_text(observables[0])} over "
               f"[{panel['window'][0]:g}, {panel['window'][1]:g}]" if plateau else SOLVER_STATISTICS[measure])
    ax.set_ylabel(panel.get("ylabel", default))
    return 0


register(PanelKind("scan", PANEL_KEYS, _check_scan, 2.4, _scan_panel, runs_from=_runs_of_series))
