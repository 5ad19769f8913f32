"""Panel kind ``path``: an observable along one kept path of each run, a single realisation: x(t) - x(0) by
default, ``deviation`` a number or null, ``absolute: true`` for |x(t) - x(0)| on a ``yscale: log`` axis;
``observable`` may list several, one line style each, ``labels`` their legend texts as the paper writes them
(one per observable), and ``path`` picks the kept path, default 0; ``ylim`` a fixed y-range, a curve that leaves
it marked where it leaves with its farthest value ("↓ -80 at t=28")."""
from __future__ import annotations

import dataclasses
import re

import numpy as np

from sgi_run.core.errors import require
from sgi_run.core.fields import is_number
from sgi_run.figures.layout import LINESTYLES, style
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import symbol
from sgi_run.figures.panels.time import mark_off_scale
from sgi_run.figures.panels.validate import check_path_index
from sgi_run.figures.results import RunData
from sgi_run.figures.statistics import departure

# Observables along one kept path (a single realisation), their deviation from t = 0.
PANEL_KEYS = ("quantity", "runs", "observable", "path", "deviation", "absolute", "relative", "title", "ylabel", "ylim",
        "yscale", "xlim", "colours", "labels")


def _check_path(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    observables = panel.get("observable")
    require(k(f"{where}.observable"), observables,
            observables is None or isinstance(observables, str)
            or (isinstance(observables, list) and observables and all(isinstance(o, str) for o in observables)),
            "an observable or a list of observables")
    check_path_index(panel, k, where)
    deviation = panel.get("deviation", "initial")
    require(k(f"{where}.deviation"), deviation,
            deviation is None or deviation == "initial" or is_number(deviation),
            "initial (x(t) - x(0)), a number (x(t) - it) or null (x(t))")
    for flag in ("absolute", "relative"):
        require(k(f"{where}.{flag}"), panel.get(flag), isinstance(panel.get(flag, False), bool), "true or false")
    count = 1 if isinstance(observables, str) or observables is None else len(observables)
    labels = panel.get("labels")
    require(k(f"{where}.labels"), labels,
            labels is None or (isinstance(labels, list) and len(labels) == count
                               and all(isinstance(x, str) and x.strip() for x in labels)),
            f"a list of {count} legend texts, one per observable (as the paper writes them)")


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


def path_label(observable: str | list[str], panel: dict) -> str:
    """"$C_1(t) - C_1(0)$", "$|C_2(t) - 1|$", "$H(t)$"; of a ± pair of eigenvalues, "$|\\lambda_1(t) - \\lambda_1(0)|$,
    $\\lambda_{10}$ alike" (their departures are equal: one curve)."""
    names = [observable] if isinstance(observable, str) else observable
    mathtext = symbol(names[0]) != names[0]
    x = symbol(names[0]).strip("$")
    deviation = panel.get("deviation", "initial")
    text = (f"{x}(t) - {x}(0)" if deviation == "initial" else f"{x}(t)" if deviation is None
            else f"{x}(t) - {float(deviation):g}")
    if panel.get("relative"):
        origin = f"{x}(0)" if deviation == "initial" else f"{float(deviation):g}"
        text = f"({text}) / |{origin}|"
    text = f"|{text}|" if panel.get("absolute") else text
    text = f"${text}$" if mathtext else text
    return text + "".join(f", {symbol(other)}" for other in names[1:]) + (" alike" if len(names) > 1 else "")


def pairs(observables: list[str], run: RunData, path: int) -> list[list[str]]:
    """The observables grouped into the curves a panel draws: eigenvalues ``lambda<k>`` that are each other's
    negatives at t = 0 (the spectrum of i X for a real antisymmetric X: ±i|x|, one pair per rotation plane) depart
    by the same amount and are one curve, one legend entry; any other observable is its own."""
    groups: list[list[str]] = []
    start = {o: run.curve(o).require_kept("a path panel", path)[0] for o in observables}
    scale = max((abs(float(v)) for v in start.values() if np.ndim(v) == 0), default=0.0)
    for obs in observables:
        partner = next((g for g in groups if len(g) == 1 and re.fullmatch(r"lambda\d+", obs)
                        and re.fullmatch(r"lambda\d+", g[0]) and start[obs] != 0
                        and abs(float(start[obs]) + float(start[g[0]])) <= 1e-12 * scale), None)
        if partner is None:
            groups.append([obs])
        else:
            partner.append(obs)
    return groups


def _path_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """Observables along one kept path of each run (a single realisation; no bands). On a log axis
    the zeros (e.g. at t = 0) are left out: they have no place there. Several observables of one run: each its
    own style; of several runs: the run's colour and marker, a line style per observable."""
    from matplotlib.ticker import LogLocator, NullFormatter

    observables = panel.get("observable", exp.observable)
    observables = [observables] if isinstance(observables, str) else list(observables)
    log = panel.get("yscale") == "log"
    names = dict(zip(observables, panel.get("labels") or []))   # the paper's texts, where given
    text = lambda group: names.get(group[0]) or path_label(group, panel)
    curves = []
    for run_id in panel["runs"]:
        groups = pairs(observables, data[run_id], panel.get("path", 0))
        for n, group in enumerate(groups):
            for member, obs in enumerate(group):
                s = data[run_id].curve(obs)
                y = path_values(s, panel)
                keep = np.isfinite(y) & ((y > 0) if log else True)
                # One run: its observables are the entries (the heading and the other panels name the run).
                label = (text(group) if len(panel["runs"]) == 1 else exp.runs[run_id].label
                         + f": {text(group)}") if len(observables) > 1 else exp.runs[run_id].label
                run_style = styles[run_id]
                look = (run_style if len(groups) == 1 else style(n) if len(panel["runs"]) == 1 else
                        dataclasses.replace(run_style, linestyle=LINESTYLES[n % len(LINESTYLES)]))
                t = s.t[keep]
                shown = (t >= panel["xlim"][0]) & (t <= panel["xlim"][1]) if panel.get("xlim") else np.ones(len(t), bool)
                ax.plot(t, y[keep], lw=1.1, label=label if member == 0 else "_nolegend_",
                        **look.line(int(shown.sum()), n, int(np.argmax(shown))))
                curves.append((t[shown], y[keep][shown], look.colour))   # marks only what the x-range shows
    if not log and panel.get("deviation", "initial") is not None:
        ax.axhline(0, color="0.55", lw=0.6, zorder=0.5)    # under the curves: one that stays at 0 shows
    if panel.get("xlim"):
        ax.set_xlim(*panel["xlim"])
    ax.set_yscale(panel.get("yscale", "linear"))
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
        mark_off_scale(ax, curves)     # a value cut off is marked, never hidden
    elif panel.get("xlim") and not log:
        _fit_y(ax, [y for _, y, _ in curves])
    if log:
        ax.yaxis.set_major_locator(LogLocator(numticks=12))
        ax.yaxis.set_minor_formatter(NullFormatter())
    else:
        ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useMathText=True)
    ax.set_ylabel(panel.get("ylabel", path_label(observables[0], panel) if len(observables) == 1
                            else ", ".join(path_label(o, panel) for o in observables[:3])
                            + (", ..." if len(observables) > 3 else "")))
    ax.set_xlabel("$t$")
    return 0


def _fit_y(ax, values: list[np.ndarray]) -> None:
    """The y-range of what an x-range shows (5% margin): matplotlib scales y to the whole curve, so a zoom on
    a few cycles would keep the scale of a spike far outside them (Gay-Balmaz & Wu 2024 Fig. 12)."""
    shown = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.empty(0)
    if shown.size:
        low, high = float(shown.min()), float(shown.max())
        pad = 0.05 * (high - low) or 0.05 * max(abs(high), 1e-300)
        ax.set_ylim(low - pad, high + pad)


register(PanelKind("path", PANEL_KEYS, _check_path, 2.4, _path_panel))
