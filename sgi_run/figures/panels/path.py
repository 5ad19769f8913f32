"""Panel kind ``path``: an observable along one kept path of each run, a single realisation: x(t) - x(0) by
default, ``deviation`` a number or null, ``absolute: true`` for |x(t) - x(0)| on a ``yscale: log`` axis;
``observable`` may list several, one line style each, and ``path`` picks the kept path, default 0."""
from __future__ import annotations

import numpy as np

from sgi_run.core.errors import require
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.validate import check_path_index
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import departure

# Observables along one kept path (a single realisation), their deviation from t = 0.
KEYS = ("quantity", "runs", "observable", "path", "deviation", "absolute", "relative", "title", "ylabel", "ylim",
        "yscale", "xlim", "colours")
LINESTYLES = ("-", "-.", "--", ":")   # one per observable of a path panel (the colour is the run's)


def _check_path(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    observables = panel.get("observable")
    require(k(f"{where}.observable"), observables,
            observables is None or isinstance(observables, str)
            or (isinstance(observables, list) and observables and all(isinstance(o, str) for o in observables)),
            "an observable or a list of observables")
    check_path_index(panel, k, where)
    deviation = panel.get("deviation", "initial")
    require(k(f"{where}.deviation"), deviation,
            deviation is None or deviation == "initial" or (isinstance(deviation, (int, float))
                                                           and not isinstance(deviation, bool)),
            "initial (x(t) - x(0)), a number (x(t) - it) or null (x(t))")
    for flag in ("absolute", "relative"):
        require(k(f"{where}.{flag}"), panel.get(flag), isinstance(panel.get(flag, False), bool), "true or false")


def path_values(series, panel: dict) -> np.ndarray:
    """What a ``path`` panel draws of one observable: its values along kept path ``path``, minus
    x(0) (``deviation: initial``, the default), a number, or nothing (``deviation: null``), in
    absolute value with ``absolute: true``, divided by |x(0)| (or the number) with ``relative: true``.
    A vector observable (e.g. ``spectrum``) is drawn as its largest entry in absolute value, relative to
    its largest |entry| at t = 0."""
    x = series.require_kept("a path panel", panel.get("path", 0))
    deviation = panel.get("deviation", "initial")
    origin = x[0] if deviation == "initial" else 0.0 if deviation is None else float(deviation)
    y = departure(x, origin, panel.get("relative", False))
    return np.abs(y) if panel.get("absolute") or x.ndim == 2 else y


def path_label(observable: str, panel: dict) -> str:
    """"C1(t) - C1(0)", "|C2(t) - 1|", "H(t)"."""
    deviation = panel.get("deviation", "initial")
    text = (f"{observable}(t) - {observable}(0)" if deviation == "initial" else f"{observable}(t)" if deviation is None
            else f"{observable}(t) - {float(deviation):g}")
    if panel.get("relative"):
        origin = f"{observable}(0)" if deviation == "initial" else f"{float(deviation):g}"
        text = f"({text}) / |{origin}|"
    return f"|{text}|" if panel.get("absolute") else text


def _path_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """Observables along one kept path of each run (a single realisation; no bands). On a log axis
    the zeros (e.g. at t = 0) are left out: they have no place there."""
    from matplotlib.ticker import LogLocator, NullFormatter

    observables = panel.get("observable", exp.observable)
    observables = [observables] if isinstance(observables, str) else list(observables)
    log = panel.get("yscale") == "log"
    for run_id in panel["runs"]:
        for n, obs in enumerate(observables):
            s = data[run_id].curve(obs)
            y = path_values(s, panel)
            keep = np.isfinite(y) & ((y > 0) if log else True)
            label = exp.runs[run_id].label + (f": {path_label(obs, panel)}" if len(observables) > 1 else "")
            ax.plot(s.t[keep], y[keep], color=colours[run_id], ls=LINESTYLES[n % len(LINESTYLES)], lw=1.1,
                    label=label)
    if not log and panel.get("deviation", "initial") is not None:
        ax.axhline(0, color="k", lw=0.6)
    if panel.get("xlim"):
        ax.set_xlim(*panel["xlim"])
    ax.set_yscale(panel.get("yscale", "linear"))
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    if log:
        ax.yaxis.set_major_locator(LogLocator(numticks=12))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)
    ax.set_ylabel(panel.get("ylabel", path_label(observables[0], panel) if len(observables) == 1
                            else ", ".join(path_label(o, panel) for o in observables)))
    ax.set_xlabel("t")
    return 0


register(PanelKind("path", KEYS, _check_path, 2.4, _path_panel))
