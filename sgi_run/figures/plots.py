"""Drawing a figure from its experiment's ``panels`` and the runs' data (matplotlib, Agg).

Panel quantities: ``mean`` (E(observable)(t) with ±2 SE bands), ``error`` (E - exact),
``density`` (the normalised histogram of one state coordinate at a snapshot time, with the exact
density the panel names) and ``convergence`` (convergence studies, runs with ``plan=convergence``:
log-log |error| against dt with ±2 SE error bars, open markers where the error is not resolvable
above the Monte Carlo noise, the fitted order [95% CI] in each legend label, and reference slopes
``slopes: [1]`` or ``[0.5, 1]``) and ``path`` (an observable along one kept path of each run, a
single realisation: x(t) - x(0) by default, ``deviation`` a number or null, ``absolute: true`` for
|x(t) - x(0)| on a ``yscale: log`` axis; ``observable`` may list several, one line style each, and
``path`` picks the kept path, default 0), ``sphere`` (3-D: the kept state view ``solid``, e.g.
gamma, on the shaded sphere of its initial radius, and ``dashed``, e.g. pi; ``red`` runs drawn red from a
red dot, ``select`` the kept path a rule picks, ``at`` every kept path's point at one time, ``contours`` the
energy's level sets and separatrix, ``view`` the angles: spec 002 Figs 1, 2), ``scan`` (one value per
run against its dt, log-log, one curve per entry of ``series: [{label, runs}]``: ``measure`` a solver
statistic, e.g. ``per_step``, or ``path_deviation`` of ``observable`` along a kept path), ``field`` (one
row of latitude-longitude maps of one path's state at the snapshot times ``at``, default every one the
run stored, rendered by the system's ``render_field``, each on its own colour scale symmetric about 0),
``solvability`` (one (theta, phi) map of ||(A, B)|| per fixed increment vector of ``increments``, the rigid
body's half-step momenta solved by the run's own integrator over the sphere |Pi| = ``radius``: paper 002 Fig. 14).
Optional panel keys: ``observable`` (default: the experiment's),
``reference`` (a horizontal line at a system reference value, e.g. ``ergodic_energy``), ``xlim``,
``ylim``, ``yscale``, ``ylabel``, ``exact`` (draw the exact mean), ``colours: by_position`` (the
n-th curve of every such panel has the same colour, e.g. one curve per friction value per method),
``reference_label`` / ``density_label`` (the legend text of the reference line or of the exact
density, instead of the one derived from the reference's kind and observable).

The conventions every figure follows: the heading cites the paper and the paper's figure name
(``Experiment.heading``); each panel's legend stands to the right of its axes, outside the data,
and the figure widens to fit it; reference lines and exact curves carry readable labels with their
value ("2<H> at equilibrium = 0.9791"); a curve that leaves a fixed y-range (``ylim``) is marked
where it leaves, with where it went ("↑ 434 at t=200"); a run declared diverged is drawn up to its
divergence and has no band there; the footer names the fidelity, the horizon T and the path counts
grouped by value, and mentions the ±2 SE bands only when some band is drawn.
"""
from __future__ import annotations

import math
import re
import textwrap
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # files only; never a window (tests and headless machines)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.ticker import (FixedFormatter, FixedLocator, FormatStrFormatter, LogLocator,  # noqa: E402
                               MaxNLocator, NullFormatter, NullLocator, SymmetricalLogLocator)

from sgi_run.figures.results import SOLVER_STATISTICS, RunData, StudyData  # noqa: E402
from sgi_run.figures.statistics import (departure, energy_levels, histogram_density, increment_text,  # noqa: E402
                                       potential_from_run, select_path, solvability_map, sphere_energy)

BAND_SE = 2          # shaded band: ±2 Monte Carlo standard errors
AXES_WIDTH = 6.4     # inches of data area per panel; the legend column comes on top of it
LEGEND_FONT = 7.5
LEGEND_WRAP = 40     # characters per legend line
FOOTER_WRAP = 170    # characters per footer line (at the narrowest figure)
DPI = 130            # drawn and measured at the resolution it is saved at (text extents depend on it)
PANEL_HEIGHTS = {"error": 1.4, "convergence": 3.4, "sphere": 5.0, "field": 1.5, "solvability": 1.5}   # inches of data area; others 2.4
FIELD_MAP_WIDTH = 3.4   # inches per map of a field panel, its colour bar included (the figure widens to fit)
FIELD_CMAP = "RdBu_r"   # diverging, white at 0: every map's colour scale is symmetric about 0
FIELD_GRID = (256, 512)   # (n_lat, n_lon) of a field panel without `grid` (spec 004 section 3.9)

# --- readable names ------------------------------------------------------------------------------------
# How an observable reads inside E(.) and <.>: (factor, quantity); "two_H" is 2 H, so E(two_H) = 2 E(H).
_OBSERVABLE_TEXT = {"two_H": ("2", "H"), "H_change": ("", "H(t) - H(0)"), "sin4pix": ("", "sin 4πx"),
                    "cos2pix": ("", "cos 2πx"), "v_sq": ("", "v²"), "kinetic_temperature": ("", "kinetic temperature")}


def mean_text(observable: str, brackets: str = "E()") -> str:
    """E(H), 2 E(H), E(sin 4πx); with ``brackets="<>"``: <H>, 2<H>."""
    factor, quantity = _OBSERVABLE_TEXT.get(observable, ("", observable))
    if brackets == "<>":
        return f"{factor}<{quantity}>"
    return f"{factor + ' ' if factor else ''}E({quantity})"


def reference_label(reference, value: float) -> str:
    """A reference line's legend text from its kind and observable, with its value:
    ``equilibrium_mean:two_H`` -> "2<H> at equilibrium = 0.9791", ``ergodic_energy`` ->
    "<H> in the ergodic limit = 2.317", a number -> "reference = 1.5"."""
    shown = f"{value:.4g}"
    if reference is None or isinstance(reference, (int, float)):
        return f"reference = {shown}"
    method, _, argument = str(reference).partition(":")
    if method == "ergodic_energy":
        method, argument = "ergodic_mean", "H"
    where = {"equilibrium_mean": "at equilibrium", "ergodic_mean": "in the ergodic limit",
             "initial_mean": "under the initial law"}.get(method)
    if where and argument:
        return f"{mean_text(argument, '<>')} {where} = {shown}"
    readable = method.replace("_", " ")
    return f"{readable}{f' of {argument}' if argument else ''} = {shown}"


def density_label(name: str) -> str:
    """The exact density's legend text from the system method that computes it:
    ``initial_density_x`` -> "exact initial density", ``gibbs_density_v`` -> "exact Gibbs density"."""
    kind = name.split("_density")[0] if "_density" in name else ""
    return {"initial": "exact initial density", "gibbs": "exact Gibbs (invariant) density",
            "": "exact density"}.get(kind, f"exact {kind.replace('_', ' ')} density")


def count_text(n) -> str:
    """10^4 as "10⁴", other counts with thousands separators: "160,000", "5000"."""
    n = int(n)
    exponent = round(math.log10(n)) if n > 0 else 0
    if n >= 1000 and 10 ** exponent == n:
        return "10" + str(exponent).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
    return f"{n:,}" if n >= 10000 else str(n)


def grouped(items: list[tuple[str, object]], show=str) -> tuple[str, list[tuple[str, list[str]]]]:
    """(the most common value, [(another value, the labels that have it), ...]) of (label, value) pairs,
    values shown by ``show``; the exceptions in order of first appearance."""
    counts = Counter(show(v) for _, v in items)
    common = max(counts, key=lambda v: (counts[v], -[show(x) for _, x in items].index(v)))
    others: dict[str, list[str]] = {}
    for label, value in items:
        if show(value) != common:
            others.setdefault(show(value), []).append(label)
    return common, list(others.items())


def paths_text(table: list[dict]) -> str:
    """"10⁴ paths each" or "10⁴ paths each, except 2000 (midpoint, Δt=0.15 / SV, Δt=0.15)"."""
    common, others = grouped([(r["label"], r["paths"]) for r in table], count_text)
    noun = "path" if common == "1" else "paths"
    each = " each" if len(table) > 1 else ""
    return f"{common} {noun}{each}" + _exceptions(others)


def horizon_text(table: list[dict]) -> str:
    """"T = 200" or "T = 999.9, except 1000 (SRKw2, Δt=0.25)"."""
    common, others = grouped([(r["label"], r["T"]) for r in table], lambda t: f"{float(t):g}")
    return f"T = {common}" + _exceptions(others)


def _exceptions(others: list[tuple[str, list[str]]]) -> str:
    return "" if not others else ", except " + ", ".join(f"{v} ({' / '.join(labels)})" for v, labels in others)


def footer_text(table: list[dict], fidelity: str, bands: int, bars: int = 0) -> str:
    parts = [f"{fidelity} fidelity", horizon_text(table), paths_text(table)]
    if bands:
        parts.append(f"shaded: ±{BAND_SE} SE bands (Monte Carlo standard error)")
    if bars:
        parts.append(f"error bars: ±{BAND_SE} SE (Monte Carlo standard error); order: least-squares slope of "
                     f"log |error| over the resolvable step sizes [95% path-bootstrap interval]")
    return "; ".join(parts)


# --- panels ----------------------------------------------------------------------------------------------
def _band_mask(s, keep: np.ndarray, diverged: float) -> np.ndarray:
    """Where a ±2 SE band means something: before the run is declared diverged (at and past it the
    ensemble is exploding or losing paths, and its SE is not an error bar), with a finite SE."""
    with np.errstate(invalid="ignore"):
        return keep & (s.t < diverged) & np.isfinite(s.sem) & np.isfinite(s.mean)


def _time_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """Draws the panel; returns how many ±2 SE bands it drew."""
    obs = panel.get("observable", exp.observable)
    xlim, ylim = panel.get("xlim"), panel.get("ylim")
    bands, curves, t_end = 0, [], []
    for run_id in panel["runs"]:
        run, colour, label = data[run_id], colours[run_id], exp.runs[run_id].label
        s = run.curve(obs)
        t_end.append(float(s.t[-1]))
        keep = np.ones_like(s.t, bool) if not xlim else (s.t >= xlim[0]) & (s.t <= xlim[1])
        diverged = run.diverged_at(s)
        if np.isfinite(diverged):
            # Spec 003 layout: truncated where the run is declared diverged (a path went non-finite
            # or |E| > 1e6); past it the mean is over a shrinking, exploding ensemble.
            band_keep = _band_mask(s, keep, diverged)
            keep &= s.t <= diverged
            lost = int(run.nonfinite[-1]) if run.nonfinite is not None else 0
            how_many = f"all {count_text(lost)}" if lost == run.paths else f"{count_text(lost)} of {count_text(run.paths)}"
            label += f" (diverged at t={diverged:g}; {how_many} paths non-finite at T)"
        else:
            band_keep = _band_mask(s, keep, math.inf)
        shift = s.exact if panel["quantity"] == "error" else 0.0
        y = s.mean - shift
        if ylim:   # no band around a curve that is off the scale: it would only paint the panel over
            with np.errstate(invalid="ignore"):
                band_keep &= (y >= ylim[0]) & (y <= ylim[1])
        ax.plot(s.t[keep], y[keep], color=colour, lw=1.2, label=label)
        curves.append((s.t[keep], y[keep], colour))
        sem = np.where(band_keep, s.sem, 0.0)
        if (sem > 0).any():
            with np.errstate(over="ignore", invalid="ignore"):
                ax.fill_between(s.t, y - BAND_SE * sem, y + BAND_SE * sem, where=band_keep, color=colour,
                                alpha=0.25, lw=0, interpolate=False)
            bands += 1
    if panel.get("exact"):
        longest = max((data[r].curve(obs) for r in panel["runs"]), key=lambda s: len(s.t))
        ax.plot(longest.t, longest.exact, "k--", lw=1, label=f"exact {mean_text(obs)}")
    if panel.get("reference") is not None:
        value = data[panel["runs"][0]].reference(panel["reference"])
        ax.axhline(value, color="k", ls="--", lw=1,
                   label=panel.get("reference_label") or reference_label(panel["reference"], value))
    if panel["quantity"] == "error":
        ax.axhline(0, color="k", lw=0.6)
    if xlim:
        ax.set_xlim(*xlim)
        if t_end and max(t_end) < xlim[0]:
            ax.text(0.5, 0.75, f"nothing to draw: the runs end at T = {max(t_end):g}, before t = {xlim[0]:g}",
                    transform=ax.transAxes, ha="center", va="center", fontsize=8.5, color="0.3",
                    bbox={"boxstyle": "round,pad=0.3", "fc": "white", "ec": "0.7"})
    ax.set_yscale(panel.get("yscale", "linear"))
    if ylim:
        ax.set_ylim(*ylim)
    _y_ticks(ax, panel.get("yscale"))
    if ylim:
        mark_off_scale(ax, curves)
    ax.set_ylabel(panel.get("ylabel", mean_text(obs) if panel["quantity"] == "mean"
                            else f"{mean_text(obs)} - exact"))
    ax.set_xlabel("t")
    return bands


def _y_ticks(ax, yscale: str | None) -> None:
    low, high = ax.get_ylim()
    if yscale == "log":     # plain numbers, not powers of ten
        if low > 0 and high / low < 10:    # less than a decade: evenly spaced ticks read best
            ax.yaxis.set_major_locator(MaxNLocator(6, steps=[1, 2, 2.5, 5, 10]))
            ax.yaxis.set_minor_locator(NullLocator())
        else:
            ax.yaxis.set_major_locator(LogLocator(subs=(1, 2, 5) if high / low < 1e3 else (1,)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())
    elif yscale == "symlog":   # decades only far from 0; plain linear ticks inside the linear range
        transform = ax.yaxis.get_transform()
        if max(abs(low), abs(high)) <= 10 * transform.linthresh:
            ax.yaxis.set_major_locator(MaxNLocator(7))
        else:
            ax.yaxis.set_major_locator(SymmetricalLogLocator(transform, subs=(1, 2, 5)))
        ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(NullFormatter())


def off_scale(t: np.ndarray, y: np.ndarray, low: float, high: float) -> list[dict]:
    """Where a curve first leaves [low, high] through each edge: the crossing time (interpolated
    between output times), and the farthest value it reaches beyond that edge, with its time."""
    marks = []
    for edge, beyond in (("top", y > high), ("bottom", y < low)):
        if not beyond.any():
            continue
        i = int(np.argmax(beyond))
        level = high if edge == "top" else low
        if i > 0 and np.isfinite(y[i - 1]) and np.isfinite(y[i]) and y[i] != y[i - 1]:
            t_exit = t[i - 1] + (t[i] - t[i - 1]) * (level - y[i - 1]) / (y[i] - y[i - 1])
        else:
            t_exit = t[i]
        with np.errstate(invalid="ignore"):
            far = np.where(beyond, y, -np.inf if edge == "top" else np.inf)
        j = int(np.argmax(far) if edge == "top" else np.argmin(far))
        marks.append({"edge": edge, "t_exit": float(t_exit), "level": level, "value": float(y[j]),
                      "t": float(t[j])})
    return marks


def mark_off_scale(ax, curves: list[tuple[np.ndarray, np.ndarray, str]]) -> list:
    """A triangle at the edge where each curve leaves the y-range, pointing the way it went, and a
    note in the curve's colour: "↑ 434 at t=200" (its farthest value off the scale, and when).
    Notes near one another are stacked. Returns the notes (matplotlib Annotations)."""
    low, high = ax.get_ylim()
    x0, x1 = ax.get_xlim()
    width_pt = AXES_WIDTH * 72
    placed: dict[str, list[tuple[float, float, int]]] = {"top": [], "bottom": []}
    notes = []
    marks = [(m, colour) for t, y, colour in curves for m in off_scale(t, y, low, high)]
    for m, colour in sorted(marks, key=lambda mc: mc[0]["t_exit"]):
        top = m["edge"] == "top"
        arrow = "↑" if top else "↓"
        text = f"{arrow} {m['value']:.3g} at t={m['t']:g}"
        x_pt = (m["t_exit"] - x0) / (x1 - x0) * width_pt
        text_pt = 0.55 * 7 * len(text) + 8
        right_side = x_pt + text_pt > width_pt           # no room to the right: the note goes left
        start, end = (x_pt - text_pt, x_pt) if right_side else (x_pt, x_pt + text_pt)
        row = 0
        while any(r == row and s < end and start < e for s, e, r in placed[m["edge"]]):
            row += 1
        placed[m["edge"]].append((start, end, row))
        ax.plot([m["t_exit"]], [m["level"]], marker="^" if top else "v", color=colour, ms=6, mec="white",
                mew=0.5, clip_on=False, zorder=5, linestyle="none")
        dy = -(7 + 9 * row) if top else (7 + 9 * row)
        notes.append(ax.annotate(text, xy=(m["t_exit"], m["level"]), xytext=(-5 if right_side else 5, dy),
                                 textcoords="offset points", ha="right" if right_side else "left",
                                 va="top" if top else "bottom", fontsize=7, color=colour, zorder=6,
                                 annotation_clip=False,
                                 bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.75}))
    return notes


def _density_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    coordinate, at, bins, (lo, hi) = panel["coordinate"], panel["at"], panel["bins"], panel["range"]
    for run_id in panel["runs"]:
        x = data[run_id].samples(coordinate, at)
        if x is None:
            continue
        edges, density = histogram_density(x, bins, lo, hi, period=panel.get("period"))
        ax.stairs(density, edges, color=colours[run_id], lw=1.2, label=exp.runs[run_id].label)
    if panel.get("density"):
        grid = np.linspace(lo, hi, 400)
        exact = getattr(data[panel["runs"][0]].system, panel["density"])
        ax.plot(grid, exact(grid), "k--", lw=1.2, label=panel.get("density_label") or density_label(panel["density"]))
    ax.set_xlabel(coordinate + (f" mod {panel['period']:g}" if panel.get("period") else ""))
    when = "the final time" if at is None else f"t={at:g}"
    ax.set_ylabel(panel.get("ylabel", f"density of {coordinate} at {when}"))
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    return 0


LINESTYLES = ("-", "-.", "--", ":")   # one per observable of a path panel (the colour is the run's)


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


def _sphere_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """A 3-D panel (``ax`` has ``projection="3d"``): the state view ``solid`` (e.g. gamma) along one
    kept path, drawn solid on the grey-shaded sphere of its initial radius, and ``dashed`` (e.g. pi)
    dashed, of each run (spec 001, Figs 1-3). A view of several vectors (point vortices: (t, k, 3)) draws
    one curve per vector, one colour each; the runs listed in ``black`` are drawn black (e.g. the
    deterministic paths of spec 004 Figure 1), those in ``red`` red with their initial point a red dot (spec 002
    Figs 1, 2: the deterministic path from Pi0). ``select: {run, rule, orbit}`` draws the kept path of ``run`` a
    rule picks (statistics.SELECTION_RULES; ``orbit``: the run whose path is the deterministic orbit), ``at`` a
    time draws every kept path's point at that time instead of paths (spec 002 Fig. 2), and ``contours: n``
    draws n level sets of the first run's energy on the sphere and its separatrix in black (spec 002 P17)."""
    solid, dashed, at = panel.get("solid", "gamma"), panel.get("dashed"), panel.get("at")
    radius = 0.0
    for run_id in panel["runs"]:
        run, colour, label = data[run_id], colours[run_id], exp.runs[run_id].label
        paths, note = _sphere_paths(panel, run_id, data)
        black, red = run_id in panel.get("black", []), run_id in panel.get("red", [])
        tone = "k" if black else "red" if red else colour
        if at is not None:
            radius = max(radius, _sphere_points(ax, run, solid, paths, at, tone, f"{label}{note}"))
            continue
        if not paths:
            ax.plot([], [], color=tone, lw=1.0, label=f"{label}{note}")
        for path in paths:
            x = run.kept_view(solid, path)
            vectors = [x] if x.ndim == 2 else [x[:, i] for i in range(x.shape[1])]   # (t, 3) or (t, k, 3)
            for i, v in enumerate(vectors):
                radius = max(radius, float(np.linalg.norm(v[0])))
                # Several vectors (point vortices): one colour each, unless the run is drawn black.
                shade = tone if black or red or len(vectors) == 1 else f"C{i % 10}"
                text = (f"{label}{note}: {solid}" + (" (solid)" if dashed else "")
                        + (f", vector {i + 1}" if len(vectors) > 1 and not black else ""))
                ax.plot(*v.T, color=shade, lw=1.0, label=text if i == 0 or not black else "_nolegend_")
                if red:
                    ax.plot(*v[0][:, None], "o", color="red", ms=5, label=f"{solid}(0) = "
                            f"({', '.join(f'{c:.4g}' for c in v[0])})")
            if dashed:
                y = run.kept_view(dashed, path)
                ax.plot(*y.T, color="k" if black else colour, lw=0.9, ls="--", alpha=0.8, label=f"{label}: {dashed} (dashed)")
    u, v = np.meshgrid(np.linspace(0, 2 * np.pi, 41), np.linspace(0, np.pi, 21))
    ax.plot_surface(radius * np.cos(u) * np.sin(v), radius * np.sin(u) * np.sin(v), radius * np.cos(v),
                    color="0.6", alpha=0.18, lw=0, shade=False)
    ax.plot([], [], "s", color="0.6", alpha=0.4, label=f"sphere |{solid}| = {radius:.4g}")
    if panel.get("view"):
        ax.view_init(*panel["view"])
    if panel.get("contours"):
        _energy_contours(ax, data[panel["runs"][0]].system, radius, panel["contours"])
    ax.set_box_aspect((1, 1, 1))
    extent = max(radius, *(float(np.nanmax(np.abs(data[r].kept_view(v, panel.get("path", 0))))) for r in panel["runs"]
                           for v in (solid, dashed) if v))
    for set_lim in (ax.set_xlim, ax.set_ylim, ax.set_zlim):
        set_lim(-extent, extent)
    ax.set_xlabel("x", labelpad=-2)
    ax.set_ylabel("y", labelpad=-2)
    ax.set_zlabel("z", labelpad=-2)
    ax.tick_params(labelsize=7, pad=0)
    return 0


def _sphere_paths(panel: dict, run_id: str, data: dict[str, RunData]) -> tuple[list[int], str]:
    """(the kept paths a sphere panel draws of a run, a note for its label): the one its ``select`` rule picks
    (none when no kept path qualifies), every kept path at a time ``at``, else ``path``."""
    select = panel.get("select")
    if select and select["run"] == run_id:
        orbit = data[select["orbit"]] if select.get("orbit") else None
        chosen = select_path(data[run_id], select["rule"], orbit)
        if chosen.path is None:
            return [], f" (no kept path qualifies: {chosen.text().replace('; ', ', ')})"
        what = ("least max_t |E - E0| of the paths that never cross the separatrix"
                if chosen.rule == "least_energy_change"
                else "farthest from the deterministic orbit of the paths that cross the separatrix")
        return [chosen.path], (f", path {chosen.path} of {chosen.kept}: {what} ({chosen.score:.3g}, "
                               f"{chosen.qualifying} qualify)")
    if panel.get("at") is not None:
        return list(range(len(data[run_id].kept[panel.get("solid", "gamma")]))), ""
    return [panel.get("path", 0)], ""


def _sphere_points(ax, run: RunData, view: str, paths: list[int], at: float, tone, label: str) -> float:
    """Every listed kept path's ``view`` at output time ``at`` as a point (one realisation each: spec 002 Fig. 2's
    ensemble forecast); returns the sphere's radius (|view(0)| of the first path)."""
    i = run.output_index(at)
    points = np.array([run.kept_view(view, p)[i] for p in paths]) if i is not None else np.empty((0, 3))
    count = f"{len(paths)} kept paths" if len(paths) > 1 else "kept path"
    text = f"{label}: {view} at t = {at:g} ({count})" if i is not None else f"{label}: no output time t = {at:g}"
    ax.plot(*points.T, "o", color=tone, ms=4 if len(paths) > 1 else 6, ls="none", label=text)
    return float(np.linalg.norm(run.kept_view(view, paths[0])[0])) if paths else 0.0


def _energy_contours(ax, system, radius: float, count: int) -> None:
    """``count`` level sets of the system's energy on the sphere of ``radius`` (thin) and its separatrix (thicker),
    black, on the hemisphere facing the viewer only (the far side's would show through the shaded sphere and
    cross the paths): computed on a (theta, phi) mesh from the run's own hamiltonian (statistics.sphere_energy;
    spec 002 P17)."""
    import contourpy

    theta, phi, energy = sphere_energy(system, radius)
    levels, separatrix = energy_levels(system, radius, count)
    lines = contourpy.contour_generator(phi, theta, energy, line_type="Separate")
    elev, azim = np.radians(ax.elev), np.radians(ax.azim)
    eye = np.array([np.cos(elev) * np.cos(azim), np.cos(elev) * np.sin(azim), np.sin(elev)])
    for level, width in [*((float(e), 0.45) for e in levels), (separatrix, 1.1)]:
        for line in lines.lines(level):
            p, t = line[:, 0], line[:, 1]
            xyz = radius * np.stack([np.sin(t) * np.cos(p), np.sin(t) * np.sin(p), np.cos(t)])
            xyz[:, eye @ xyz < 0] = np.nan      # the far hemisphere
            ax.plot(*xyz, color="k", lw=width, alpha=0.7)
    ax.plot([], [], color="k", lw=0.45, label=f"energy contours: {count} levels in ({levels[0]:.4g}, {levels[-1]:.4g})")
    ax.plot([], [], color="k", lw=1.1, label=f"separatrix E = {separatrix:.6g}")


def field_times(panel: dict, run: RunData) -> list[float]:
    """The snapshot times a field panel draws: its ``at``, or every snapshot the run stored."""
    return [float(t) for t in panel["at"]] if panel.get("at") is not None else sorted(run.snapshot_times)


_PI_TICKS = {0.0: "0", 0.5: "π/2", 1.0: "π", 1.5: "3π/2", 2.0: "2π", -0.5: "-π/2"}


def _pi_axis(axis, multiples) -> None:
    axis.set_major_locator(FixedLocator([m * np.pi for m in multiples]))
    axis.set_major_formatter(FixedFormatter([_PI_TICKS[m] for m in multiples]))


def _potential_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """The symmetric heavy top's effective potential V(theta; p_psi(t), p_phi(t)) (solid) and the level of the
    reduced energy E'(t) (dashed, same colour) of each run's kept path ``path`` at each time of ``at``, over
    theta in ``xlim`` (spec 002 Figs 3, 10, 13: the curves coincide while p_psi and p_phi are conserved)."""
    theta = np.linspace(*panel.get("xlim", [0.2, 1.0]), 801)
    path, drawn = panel.get("path", 0), 0
    for run_id in panel["runs"]:
        for t in panel["at"]:
            found = potential_from_run(data[run_id], t, path)
            colour = f"C{drawn % 10}"
            if found is None:
                continue
            v, e_prime, at = found
            label = exp.runs[run_id].label + (f", t = {at:g}" if len(panel["at"]) > 1 else "")
            ax.plot(theta, v(theta), color=colour, lw=1.3, label=f"V(θ), {label}")
            ax.axhline(e_prime, color=colour, lw=1.0, ls="--", label=f"E' = {e_prime:.6g}, {label}")
            drawn += 1
    ax.set_xlabel("θ")
    ax.set_ylabel(panel.get("ylabel", "V(θ; p_ψ, p_φ)"))
    if panel.get("ylim"):
        ax.set_ylim(panel["ylim"])
    return 0


def _field_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """One row of maps in the panel's place (``ax`` becomes a frame without axes): path ``path``'s state at
    each snapshot time, rendered on a latitude-longitude grid (longitude φ in [0, 2π) across, latitude
    down from π/2 at the top) by the system's ``render_field(state, n_lat, n_lon) -> (values (n_lat, n_lon),
    lat, lon)``, each map on its own colour scale, symmetric about 0, with its own colour bar (spec 004
    section 3.9: vorticity snapshots)."""
    run_id, path = panel["runs"][0], panel.get("path", 0)
    run = data[run_id]
    times = field_times(panel, run)
    n_lat, n_lon = panel.get("grid", FIELD_GRID)
    ax.axis("off")
    if not times:
        ax.text(0.5, 0.5, f"nothing to draw: {exp.runs[run_id].label} stored no snapshots (plan.snapshots)",
                transform=ax.transAxes, ha="center", va="center", fontsize=8.5, color="0.3")
        return 0
    for i, (sub, t) in enumerate(zip(_map_row(ax, len(times)), times)):
        step = f" (step {round(t / run.dt)})" if run.dt else ""
        sub.set_title(f"t = {t:.4g}{step}", fontsize=8.5)
        state = run.state(t, path)
        if state is None:
            sub.text(0.5, 0.5, f"no snapshot at t = {t:g}\n(plan.snapshots)", transform=sub.transAxes,
                     ha="center", va="center", fontsize=8, color="0.3")
            sub.set_axis_off()
            continue
        values, lat, lon = (np.asarray(a, float) for a in run.system.render_field(state, n_lat, n_lon))
        with np.errstate(invalid="ignore"):
            scale = float(np.nanmax(np.abs(values))) if np.isfinite(values).any() else math.nan
        if not math.isfinite(scale) or scale == 0:
            sub.text(0.5, 0.5, "not finite" if not math.isfinite(scale) else "zero everywhere",
                     transform=sub.transAxes, ha="center", va="center", fontsize=8, color="0.3")
            scale = 1.0
        d_lon, d_lat = 2 * np.pi / len(lon), np.pi / len(lat)
        _colour_map(sub, values, (lon[0] - d_lon / 2, lon[-1] + d_lon / 2, lat[-1] - d_lat / 2, lat[0] + d_lat / 2),
                    FIELD_CMAP, (-scale, scale),
                    panel.get("label", "rendered field") + " (each map its own scale)" if i == len(times) - 1 else None)
        _pi_axis(sub.xaxis, (0.0, 0.5, 1.0, 1.5, 2.0))
        _pi_axis(sub.yaxis, (-0.5, 0.0, 0.5))
        sub.set_xlabel("longitude φ", fontsize=7.5)
        if i == 0:
            sub.set_ylabel("latitude", fontsize=7.5)
    return 0


def _map_row(ax, count: int, wspace: float = 0.3) -> list:
    """``count`` axes side by side in a panel's place (``ax`` stays as a frame without axes, for the panel's
    title and legend): the maps of a field or solvability panel, ``wspace`` apart (room for the colour bars)."""
    cells = ax.get_subplotspec().subgridspec(1, count, wspace=wspace)
    return [ax.figure.add_subplot(cells[0, i]) for i in range(count)]


def _colour_map(sub, values: np.ndarray, extent: tuple, cmap: str, limits: tuple, label: str | None = None,
                tick_format: str | None = None):
    """``values`` drawn as an image over ``extent`` (first row at the top) with its own colour bar on ``limits``,
    its ticks as ``tick_format`` says (e.g. "%.7f": values that differ in the 6th digit, written out, no offset)."""
    from mpl_toolkits.axes_grid1 import make_axes_locatable

    image = sub.imshow(values, cmap=cmap, vmin=limits[0], vmax=limits[1], origin="upper", aspect="equal",
                       interpolation="nearest", extent=extent)
    sub.tick_params(labelsize=7)
    bar = sub.figure.colorbar(image, cax=make_axes_locatable(sub).append_axes("right", size="4%", pad=0.05))
    bar.ax.tick_params(labelsize=6.5)
    if tick_format:
        bar.ax.yaxis.set_major_formatter(FormatStrFormatter(tick_format))
    if label:
        bar.set_label(label, fontsize=7)
    return image


SOLVABILITY_CMAP = "viridis"   # sequential: ||(A, B)|| is positive, each map on its own range


def _solvability_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """Paper 002's Figure 14: one (theta, phi) map per fixed increment vector of ``increments`` of ||(A, B)|| =
    sqrt(|A|^2 + |B|^2), the rigid body's half-step momenta of eqs. (62) solved by the run's own integrator at
    every point of the sphere |Pi| = ``radius`` (statistics.solvability_map; polar angle theta down, azimuth phi
    across), each on its own colour scale, titled with its increments, its range and the solve's iterations."""
    run = data[panel["runs"][0]]
    ax.axis("off")
    increments = panel["increments"]
    for i, (sub, spec) in enumerate(zip(_map_row(ax, len(increments), wspace=0.6), increments)):
        m = solvability_map(run, spec, panel.get("radius", 1.0))
        d_theta, d_phi = m.theta[1] - m.theta[0], m.phi[1] - m.phi[0]
        _colour_map(sub, m.norm, (m.phi[0] - d_phi / 2, m.phi[-1] + d_phi / 2, m.theta[-1] + d_theta / 2,
                                  m.theta[0] - d_theta / 2), SOLVABILITY_CMAP, (float(m.norm.min()), float(m.norm.max())),
                    panel.get("label", "||(A, B)||") if i == len(increments) - 1 else None, "%.7f")
        converged = "all converged" if m.converged.all() else f"{int(np.sum(~m.converged))} unconverged"
        sub.set_title(f"{increment_text(spec, run.increment_bound)}\n||(A, B)|| in [{m.norm.min():.7f}, "
                      f"{m.norm.max():.7f}]\n≤ {int(m.iterations.max())} iterations, {converged}", fontsize=7.5)
        _pi_axis(sub.xaxis, (0.0, 0.5, 1.0, 1.5, 2.0))
        _pi_axis(sub.yaxis, (0.0, 0.5, 1.0))
        sub.set_xlabel("azimuth φ", fontsize=7.5)
        if i == 0:
            sub.set_ylabel("polar angle θ", fontsize=7.5)
    return 0


MARKERS = "os^Dv<>PX*"   # one per curve of a convergence panel: curves that coincide stay visible


def scan_value(run: RunData, panel: dict, observable: str | None) -> float:
    """What a ``scan`` panel draws of one run: a solver statistic (results.SOLVER_STATISTICS) or, for
    ``measure: path_deviation``, max_t |x(t) - x(0)| of ``observable`` along kept path ``path`` (divided
    by |x(0)| with ``relative: true``); inf for a path that went non-finite."""
    if panel["measure"] != "path_deviation":
        return run.solver_statistic(panel["measure"])
    y = path_values(run.curve(observable), {"path": panel.get("path", 0), "relative": panel.get("relative", False),
                                            "absolute": True})
    return float(np.max(np.where(np.isfinite(y), y, np.inf)))


def _scan_panel(ax, exp, panel: dict, data: dict[str, RunData], colours: dict) -> int:
    """One value per run against its step size, log-log, one curve per entry of ``series`` (its own colour)
    and per observable (its own line style): e.g. chord iterations per step against dt, or the largest
    relative Casimir error against dt for two methods (spec 001's text-only statements). A run that went
    non-finite is an x at the top edge; a zero has no place on a log axis and is named in the legend
    (``yscale: linear`` draws it)."""
    observables = panel.get("observable", exp.observable)
    observables = [observables] if isinstance(observables, str) else list(observables)
    if panel["measure"] != "path_deviation":
        observables = [None]
    log = panel.get("yscale", "log") == "log"
    for i, entry in enumerate(panel["series"]):
        for n, obs in enumerate(observables):
            dts = np.array([data[r].dt for r in entry["runs"]])
            y = np.array([scan_value(data[r], panel, obs) for r in entry["runs"]])
            order = np.argsort(dts)
            dts, y = dts[order], y[order]
            shown = np.isfinite(y) & ((y > 0) if log else True)
            label = entry["label"] + (f": {path_label(obs, panel | {'absolute': True})}" if obs and len(observables) > 1 else "")
            zeros = int(np.sum(y == 0)) if log else 0
            label += f" ({zeros} run(s) at exactly 0, not drawn)" if zeros else ""
            ax.plot(dts[shown], y[shown], color=f"C{i}", ls=LINESTYLES[n % len(LINESTYLES)], marker=MARKERS[n],
                    ms=4, lw=1.1, label=label)
            blown = ~np.isfinite(y)
            if blown.any() and n == 0:
                ax.plot(dts[blown], np.ones(blown.sum()), "x", color=f"C{i}", ms=7, mew=1.5, clip_on=False,
                        transform=ax.get_xaxis_transform(), label=f"{entry['label']}: non-finite path")
    ax.set_xscale("log")
    ax.set_yscale(panel.get("yscale", "log"))
    if panel.get("yscale") == "linear":
        ax.set_ylim(bottom=0)
    if panel.get("ylim"):
        ax.set_ylim(*panel["ylim"])
    ax.set_xlabel("Δt")
    measure = panel["measure"]
    default = (f"max_t {path_label(observables[0] if len(observables) == 1 else 'C', panel | {'absolute': True})}"
               if measure == "path_deviation" else SOLVER_STATISTICS[measure])
    ax.set_ylabel(panel.get("ylabel", default))
    return 0


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


def _convergence_panel(ax, exp, panel: dict, data: dict, colours: dict) -> int:
    """Log-log |error| against dt of each study, ±2 SE error bars, a line through the resolvable points
    and open markers where |error| <= 2 SE (left out of the fit), the fitted order in each label and
    the panel's reference slopes. Returns how many studies it drew error bars for."""
    studies = [data[run_id] for run_id in panel["runs"]]
    unresolved = False
    for n, (run_id, study) in enumerate(zip(panel["runs"], studies)):
        r, colour, marker = study.result, colours[run_id], MARKERS[n % len(MARKERS)]
        err = np.abs(np.asarray(r.error, float))
        shown = np.isfinite(err) & (err > 0)           # a log axis has no place for 0 or NaN
        dts, err, se, resolved = r.dts[shown], err[shown], np.asarray(r.se, float)[shown], np.asarray(r.resolvable)[shown]
        # A bar reaching zero cannot be drawn on a log axis: an unresolvable point's bar stops a decade
        # below it (its open marker says the interval holds zero).
        lower = np.minimum(BAND_SE * se, 0.9 * err)
        ax.errorbar(dts, err, yerr=[lower, BAND_SE * se], fmt="none", ecolor=colour, elinewidth=0.9, capsize=2.5)
        # The line joins the points the order is fitted on; a point within the noise stands alone.
        ax.plot(dts[resolved], err[resolved], "-", color=colour, lw=1.1, marker=marker, ms=5,
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
    ax.set_xlabel("Δt")
    ax.set_ylabel(panel.get("ylabel", error_label(studies)))
    return len(studies)


# --- the figure ----------------------------------------------------------------------------------------
def wrap_label(label: str, width: int = LEGEND_WRAP) -> str:
    """A legend label on lines of at most ``width`` characters, broken preferably before a
    parenthesis or after a semicolon; continuation lines indented."""
    if len(label) <= width:
        return label
    lines: list[str] = []
    for piece in re.split(r"(?<=;) |(?= \()", label):
        if lines and len(lines[-1]) + len(piece) <= width:
            lines[-1] += piece
        else:
            lines += textwrap.wrap(piece.strip(), width - 2) or [piece]
    return "\n".join(lines[:1] + ["  " + line for line in lines[1:]])


def _legend(ax):
    """The panel's legend to the right of its axes, long labels wrapped."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    labels = [wrap_label(label) for label in labels]
    return ax.legend(handles, labels, fontsize=LEGEND_FONT, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, frameon=False, handlelength=1.8)


def run_colours(exp) -> dict:
    """One colour per run, the same in every panel; runs that share a panel get different colours,
    from the ten strong ones first (in file order), the pale tab20 shades only when a panel has
    more than ten curves."""
    shares = {run_id: set() for run_id in exp.runs}
    for panel in exp.panels:
        for run_id in panel.get("runs", []):
            shares[run_id].update(r for r in panel["runs"] if r != run_id)
    palette = [f"C{i}" for i in range(10)] + [plt.cm.tab20(i) for i in range(1, 20, 2)]
    colours: dict = {}
    for i, run_id in enumerate(exp.runs):
        taken = {str(colours[r]) for r in shares[run_id] if r in colours}
        colours[run_id] = next((c for c in palette if str(c) not in taken), palette[i % len(palette)])
    return colours


def figure(exp, data: dict[str, RunData], table: list[dict], fidelity: str):
    """The figure (one panel per entry of ``exp.panels``, stacked) as a matplotlib Figure."""
    colours = run_colours(exp)
    base = [PANEL_HEIGHTS.get(p["quantity"], 2.4) for p in exp.panels]
    fig, axes = plt.subplots(len(exp.panels), 1, figsize=(AXES_WIDTH + 4, sum(base) + 1.5), dpi=DPI,
                             gridspec_kw={"height_ratios": base}, squeeze=False)
    bands = bars = 0
    for row, panel in enumerate(exp.panels):
        if panel["quantity"] == "sphere":     # a 3-D axes in the panel's place
            spec = axes[row, 0].get_subplotspec()
            axes[row, 0].remove()
            axes[row, 0] = fig.add_subplot(spec, projection="3d")
    for ax, panel in zip(axes[:, 0], exp.panels):
        by_position = {run_id: f"C{i % 10}" for i, run_id in enumerate(panel["runs"])}
        panel_colours = by_position if panel.get("colours") == "by_position" else colours
        if panel["quantity"] == "convergence":
            bars += _convergence_panel(ax, exp, panel, data, panel_colours)
        else:
            draw_panel = {"density": _density_panel, "path": _path_panel, "sphere": _sphere_panel,
                          "scan": _scan_panel, "field": _field_panel, "potential": _potential_panel,
                          "solvability": _solvability_panel}.get(panel["quantity"], _time_panel)
            bands += draw_panel(ax, exp, panel, data, panel_colours)
        if panel.get("title"):     # a row of maps: the panel's title stands above its maps' own titles
            pad = {"field": 18, "solvability": 40}.get(panel["quantity"])
            ax.set_title(panel["title"], fontsize=9, **({"pad": pad} if pad else {}))
        if panel["quantity"] not in ("sphere", "field", "solvability"):
            ax.grid(alpha=0.3)
        _legend(ax)
    fig.suptitle("\n".join(textwrap.wrap(exp.heading, 95)), fontsize=10.5)
    footer = footer_text(table, fidelity, bands, bars)

    # Size: the data area keeps its width and each panel is at least as tall as its legend.
    renderer = fig.canvas.get_renderer()
    legends = [ax.get_legend() for ax in axes[:, 0]]
    widths = [lg.get_window_extent(renderer).width / fig.dpi for lg in legends if lg]
    heights = [max(b, (lg.get_window_extent(renderer).height / fig.dpi + 0.5) if lg else 0)
               for b, lg in zip(base, legends)]
    legend_width = max(widths, default=0)
    legend_column = legend_width + 0.35 if legend_width else 0.15
    maps = max([len(field_times(p, data[p["runs"][0]])) for p in exp.panels if p["quantity"] == "field"]
               + [len(p["increments"]) for p in exp.panels if p["quantity"] == "solvability"], default=0)
    width = max(AXES_WIDTH + 1.2 + legend_column, maps * FIELD_MAP_WIDTH + 1.0)
    footer = "\n".join(textwrap.wrap(footer, int(FOOTER_WRAP * width / (AXES_WIDTH + 4))))
    footer_in = 0.16 * (footer.count("\n") + 1) + 0.15
    title_in = 0.25 * (fig.get_suptitle().count("\n") + 1) + 0.25
    height = sum(heights) + 0.75 * len(heights) + title_in + footer_in
    fig.set_size_inches(width, height)
    axes[0, 0].get_gridspec().set_height_ratios(heights)
    fig.text(0.01, 0.006, footer, fontsize=7, color="0.35", va="bottom")
    # tight_layout counts the legends hanging off the axes' right edge: the data area keeps its width. It does not
    # count a 3-D axes' title: a first panel that is a titled sphere gets that room below the heading.
    titled_sphere = exp.panels[0]["quantity"] == "sphere" and exp.panels[0].get("title")
    fig.tight_layout(rect=(0, footer_in / height, 1, 1 - (0.05 + (0.3 if titled_sphere else 0)) / height))
    return fig


def draw(exp, data: dict[str, RunData], table: list[dict], fidelity: str, path: Path) -> Path:
    """Draw the figure to ``path`` (PNG)."""
    fig = figure(exp, data, table, fidelity)
    path = Path(path)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return path
