"""Panel kind ``work_precision``: convergence studies (``plan=convergence``, one per method, on the same Brownian
paths) drawn against what each step size costs (``sgi_run.work_precision``: every method timed in one series
on one device). Log-log, one curve per method, a point per step size, the finest to the right:

- ``y: error`` (the default): |error| ± 2 SE against the median wall time per path, with the timings' spread
  (the fastest and the slowest repeat) as horizontal bars; open markers where |error| <= 2 SE;
- ``y: drift``: the largest drift of the invariant ``invariant`` (a name the system declares) over the paths
  and steps, against the same cost; a drift at round-off is drawn at it (a log axis has no zero).

``x: seconds_per_path`` (the default) or ``x: path_steps_per_second`` (then more is faster, to the right)."""
from __future__ import annotations

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.convergence import error_label, order_label
from sgi_run.figures.panels.style import BAND_SE, symbol

PANEL_KEYS = ("quantity", "runs", "title", "ylabel", "ylim", "y", "x", "invariant", "colours")
Y = ("error", "drift")
X = {"seconds_per_path": "wall time per path (s)", "path_steps_per_second": "path-steps per second"}


def _check(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    y = panel.get("y", "error")
    require(k(f"{where}.y"), y, y in Y, f"one of {list(Y)} (the error, or the largest drift of an invariant)")
    x = panel.get("x", "seconds_per_path")
    require(k(f"{where}.x"), x, x in X, f"one of {list(X)}")
    invariant = panel.get("invariant")
    require(k(f"{where}.invariant"), invariant, (y == "drift") == isinstance(invariant, str),
            "the name of a declared invariant (e.g. C2) with y: drift, and only then")


def _draw(ax, exp, panel: dict, data: dict, styles: dict) -> int:
    y_kind, x_kind = panel.get("y", "error"), panel.get("x", "seconds_per_path")
    studies = [data[run_id] for run_id in panel["runs"]]
    unresolved = False
    for run_id, study in zip(panel["runs"], studies):
        r, c, look = study.result, study.cost, styles[run_id]
        require(f"{exp.path.name}:panels.runs", run_id, c is not None,
                "a study timed for this panel (the profile's cost: {paths, repeats})")
        order = c.at(r.dts)
        seconds = c.per_path_s[order]
        low, high = (a[order] for a in c.per_path_range_s)
        x = seconds if x_kind == "seconds_per_path" else c.path_steps_per_s[order]
        xerr = [seconds - low, high - seconds] if x_kind == "seconds_per_path" else None
        label = order_label(exp.runs[run_id].label, study)
        if y_kind == "error":
            err, se = np.abs(np.asarray(r.error, float)), np.asarray(r.se, float)
            resolved = np.asarray(r.resolvable) & np.isfinite(err) & (err > 0)
            ax.errorbar(x, err, xerr=xerr, yerr=[np.minimum(BAND_SE * se, 0.9 * err), BAND_SE * se], fmt="none",
                        ecolor=look.colour, elinewidth=0.9, capsize=2.5)
            ax.plot(x, err, ls=look.linestyle, color=look.colour, lw=1.1, marker=look.marker, ms=5, label=label)
            if (~resolved).any():
                unresolved = True
                ax.plot(x[~resolved], err[~resolved], look.marker, color=look.colour, mfc="white", ms=5, ls="none",
                        zorder=3)
        else:
            drift = r.drift_max[:, r.invariants.index(panel["invariant"])]
            floor = np.finfo(float).eps * 0.5
            ax.plot(x, np.maximum(drift, floor), ls=look.linestyle, color=look.colour, lw=1.1, marker=look.marker,
                    ms=5, label=label)
    if unresolved:
        ax.plot([], [], "o", color="0.4", mfc="white", ls="none", label=f"open: |error| ≤ {BAND_SE} SE")
    ax.set_xscale("log")
    ax.set_yscale("log")
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    ax.set_xlabel(X[x_kind])
    default_y = (error_label(studies) if y_kind == "error"
                 else f"largest |{symbol(panel['invariant'])}(t) − {symbol(panel['invariant'])}(0)| over paths and steps")
    ax.set_ylabel(panel.get("ylabel", default_y))
    return len(studies) if y_kind == "error" else 0


def _footer(panel: dict, data: dict) -> str:
    """How the costs were measured: the timed paths, the repeats and the device (every method in one series)."""
    costs = [data[run_id].cost for run_id in panel["runs"] if data[run_id].cost is not None]
    if not costs:
        return ""
    c = costs[0]
    return (f"cost: the median over {c.seconds.shape[1]} timed runs of {c.paths} paths from 0 to T (compiled apart; "
            f"horizontal bars: fastest to slowest), every method in one series on {c.device}")


register(PanelKind("work_precision", PANEL_KEYS, _check, 3.6, _draw, studies=True, footer=_footer))
