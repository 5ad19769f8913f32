"""Panel kind ``convergence``: convergence studies, runs with ``plan=convergence``: log-log |error| against
dt with ±2 SE error bars, open markers where the error is not resolvable above the Monte Carlo noise, the
fitted order [95% CI] in each legend label, and reference slopes ``slopes: [1]`` or ``[0.5, 1]``."""
from __future__ import annotations

import math

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import BAND_SE, mean_text
from sgi_run.figures.panels.validate import is_number
from sgi_run.figures.results import StudyData

PANEL_KEYS = ("quantity", "runs", "title", "ylabel", "ylim", "slopes", "colours")   # all a convergence panel takes


def _check_convergence(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    slopes = panel.get("slopes", [])
    require(k(f"{where}.slopes"), slopes, isinstance(slopes, list) and all(is_number(v) and v > 0 for v in slopes),
            "a list of reference orders > 0, e.g. [1] or [0.5, 1]")


def order_label(label: str, study) -> str:
    """A study's legend text: "Heun: order 1.08 [1.07, 1.09]" (95% bootstrap interval), or why no
    order was fitted."""
    r = study.result
    if not math.isfinite(r.order):
        return f"{label}: no order (< 2 errors resolvable)"
    ci = f" [{r.order_ci[0]:.2f}, {r.order_ci[1]:.2f}]" if all(math.isfinite(c) for c in r.order_ci) else ""
    return f"{label}: order {r.order:.2f}{ci}"


def superscript(x: float) -> str:
    """A number as superscript characters: 1 -> "¹", 0.5 -> "⁰·⁵"."""
    return f"{x:g}".translate(str.maketrans("0123456789.-", "⁰¹²³⁴⁵⁶⁷⁸⁹·⁻"))


def _dt_tick(dt: float) -> str:
    """A step size as a tick label: 2^-k where it is one (mathtext), else the number."""
    k = math.log2(dt)
    return "1" if k == 0 else rf"$2^{{{k:g}}}$" if k.is_integer() else f"{dt:g}"


def error_label(studies: list[StudyData]) -> str:
    """The y label of a convergence panel from what its studies measure."""
    kinds = {s.result.error_kind for s in studies}
    horizon = {f"{s.T:g}" for s in studies}
    at = f" at T = {horizon.pop()}" if len(horizon) == 1 else " at T"
    if kinds == {"strong"}:
        return f"RMS error of the state{at}"
    observables = {s.observable for s in studies}
    if kinds == {"weak"} and len(observables) == 1:
        return f"|error of {mean_text(observables.pop())}|{at}"
    return f"|error|{at}"


def _convergence_panel(ax, exp, panel: dict, data: dict, styles: dict) -> int:
    """Log-log |error| against dt of each study, ±2 SE error bars, a line through the resolvable points
    and open markers where |error| <= 2 SE (left out of the fit), the fitted order in each label and
    the panel's reference slopes. Returns how many studies it drew error bars for."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    studies = [data[run_id] for run_id in panel["runs"]]
    unresolved = False
    for run_id, study in zip(panel["runs"], studies):
        r, look = study.result, styles[run_id]
        colour, marker, line = look.colour, look.marker, look.linestyle
        err = np.abs(np.asarray(r.error, float))
        shown = np.isfinite(err) & (err > 0)           # a log axis has no place for 0 or NaN
        dts, err, se, resolved = r.dts[shown], err[shown], np.asarray(r.se, float)[shown], np.asarray(r.resolvable)[shown]
        # A bar reaching zero cannot be drawn on a log axis: an unresolvable point's bar stops a decade
        # below it (its open marker says the interval holds zero).
        lower = np.minimum(BAND_SE * se, 0.9 * err)
        ax.errorbar(dts, err, yerr=[lower, BAND_SE * se], fmt="none", ecolor=colour, elinewidth=0.9, capsize=2.5)
        # The line joins the points the order is fitted on; a point within the noise stands alone.
        ax.plot(dts[resolved], err[resolved], ls=line, color=colour, lw=1.1, marker=marker, ms=5,
                label=order_label(exp.runs[run_id].label, study))
        if (~resolved).any():
            unresolved = True
            ax.plot(dts[~resolved], err[~resolved], marker, color=colour, mfc="white", ms=5, ls="none", zorder=3)
    every_dt = np.unique(np.concatenate([s.result.dts for s in studies]))
    # Reference slopes start below every curve's coarsest error, so that they read as slopes, not as data.
    coarsest = [abs(s.result.error[0]) for s in studies if np.isfinite(s.result.error[0]) and s.result.error[0] != 0]
    x = np.array([every_dt.min(), every_dt.max()])
    for slope, style in zip(panel.get("slopes", []) if coarsest else [], ("--", ":", "-.", (0, (5, 1, 1, 1)))):
        ax.plot(x, 0.5 * min(coarsest) * (x / x[1]) ** slope, color="k", ls=style, lw=1,
                label=f"reference slope {slope:g} (∝ Δt{superscript(slope)})")
    if unresolved:
        ax.plot([], [], "o", color="0.4", mfc="white", ls="none", label=f"open: |error| ≤ {BAND_SE} SE (not fitted)")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.xaxis.set_major_locator(FixedLocator(every_dt))
    ax.xaxis.set_major_formatter(FixedFormatter([_dt_tick(d) for d in every_dt]))
    ax.xaxis.set_minor_locator(NullLocator())
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    ax.set_xlabel(r"$\Delta t$")
    ax.set_ylabel(panel.get("ylabel", error_label(studies)))
    return len(studies)


register(PanelKind("convergence", PANEL_KEYS, _check_convergence, 3.4, _convergence_panel, studies=True))
