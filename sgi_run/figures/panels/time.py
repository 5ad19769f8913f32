"""Panel kinds ``mean`` (E(observable)(t) with ±2 SE bands) and ``error`` (E - exact)."""
from __future__ import annotations

import math

import numpy as np

from sgi_run.core.errors import require
from sgi_run.core.fields import is_number
from sgi_run.figures.panels import PanelKind, register
from sgi_run.figures.panels.style import AXES_WIDTH, BAND_SE, count_text, mean_text
from sgi_run.figures.results import RunData


def reference_digits(value: float) -> str:
    """A reference value as it is, up to 6 significant digits (2.3165, a published value the code holds, not
    "2.317": the runs are compared with it to its last digit), else to 4 (a computed value, 0.9791)."""
    for digits in (4, 5, 6):
        if math.isclose(float(f"{value:.{digits}g}"), value, rel_tol=1e-12, abs_tol=0.0):
            return f"{value:.{digits}g}"
    return f"{value:.4g}"


def reference_label(reference, value: float) -> str:
    """A reference line's legend text from its kind and observable, with its value:
    ``equilibrium_mean:two_H`` -> "2<H> at equilibrium = 0.9791", ``ergodic_energy`` ->
    "<H> in the ergodic limit = 2.3165", a number -> "reference = 1.5"."""
    shown = reference_digits(value)
    if reference is None or isinstance(reference, (int, float)):
        return f"reference = {shown}"
    method, _, argument = str(reference).partition(":")
    if method == "ergodic_energy":
        method, argument = "ergodic_mean", "H"
    where = {"equilibrium_mean": "at equilibrium", "ergodic_mean": "in the ergodic limit",
             "initial_mean": "under the initial law",
             "overdamped_svia_mean": "in SVIA's c → ∞ limit (positions at inverse temperature 2β)"}.get(method)
    if where and argument:
        return f"{mean_text(argument, '<>')} {where} = {shown}"
    readable = method.replace("_", " ")
    return f"{readable}{f' of {argument}' if argument else ''} = {shown}"


REFERENCE_STYLES = ("--", ":", (0, (6, 2, 1, 2)))   # a panel's reference lines, black, in the order listed
PANEL_KEYS = ("quantity", "runs", "observable", "title", "xlim", "ylim", "yscale", "ylabel", "exact", "reference",
        "reference_label", "colours")


def _check_time(panel: dict, k, where: str, runs: dict, studies: frozenset) -> None:
    """``observable``: one name; ``reference``: a number or a value the system computes, or a list of them (one
    line each)."""
    require(k(f"{where}.observable"), panel.get("observable"), isinstance(panel.get("observable", ""), str),
            "an observable the runs record (one name)")
    references = panel.get("reference")
    one = lambda r: isinstance(r, str) or is_number(r)
    require(k(f"{where}.reference"), references, references is None or one(references)
            or (isinstance(references, list) and references and all(one(r) for r in references)),
            "a number, a reference the system computes (method or method:argument), or a list of them")


def _band_mask(s, keep: np.ndarray, diverged: float) -> np.ndarray:
    """Where a ±2 SE band means something: before the run is declared diverged (at and past it the
    ensemble is exploding or losing paths, and its SE is not an error bar), with a finite SE."""
    with np.errstate(invalid="ignore"):
        return keep & (s.t < diverged) & np.isfinite(s.sem) & np.isfinite(s.mean)


def _time_panel(ax, exp, panel: dict, data: dict[str, RunData], styles: dict) -> int:
    """Draws the panel; returns how many ±2 SE bands it drew."""
    obs = panel.get("observable", exp.observable)
    xlim, ylim = panel.get("xlim"), panel.get("ylim")
    bands, curves, t_end = 0, [], []
    for n, run_id in enumerate(panel["runs"]):
        run, style, label = data[run_id], styles[run_id], exp.runs[run_id].label
        colour = style.colour
        s = run.curve(obs)
        t_end.append(float(s.t[-1]))
        keep = np.ones_like(s.t, bool) if not xlim else (s.t >= xlim[0]) & (s.t <= xlim[1])
        diverged = run.diverged_at(s)
        if np.isfinite(diverged):
            # The project's layout for Bou-Rabee & Owhadi's (2007) figures: truncated where the run is declared diverged (a path went non-finite
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
        ax.plot(s.t[keep], y[keep], lw=1.2, label=label, **style.line(int(keep.sum()), n))
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
    references = panel.get("reference")
    for i, reference in enumerate(references if isinstance(references, list) else [references] * (references is not None)):
        value = data[panel["runs"][0]].reference(reference)
        ax.axhline(value, color="k", ls=REFERENCE_STYLES[i % len(REFERENCE_STYLES)], lw=1, zorder=1.5,
                   label=(panel.get("reference_label") if i == 0 else None) or reference_label(reference, value))
    if panel["quantity"] == "error":
        ax.axhline(0, color="0.55", lw=0.6, zorder=0.5)    # under the curves: one that stays at 0 shows
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
    ax.set_xlabel("$t$")
    return bands


def _y_ticks(ax, yscale: str | None) -> None:
    from matplotlib.ticker import (FormatStrFormatter, LogLocator, MaxNLocator, NullFormatter, NullLocator,
                                   SymmetricalLogLocator)

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


register(PanelKind("mean", PANEL_KEYS, _check_time, 2.4, _time_panel))
register(PanelKind("error", PANEL_KEYS, _check_time, 1.4, _time_panel))
