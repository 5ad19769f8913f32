"""Drawing a figure from its experiment's ``panels`` and the runs' data (matplotlib, Agg).

Each panel is drawn by its kind (``sgi_run.figures.panels``: every kind's keys, validation and drawing);
this module stacks the panels, each at its kind's height, and adds the legends, the heading and the footer.

The conventions every figure follows: the heading cites the paper and the paper's figure name
(``Experiment.heading``); each panel's legend stands to the right of its axes, outside the data,
and the figure widens to fit it; reference lines and exact curves carry readable labels with their
value ("2<H> at equilibrium = 0.9791"); a curve that leaves a fixed y-range (``ylim``) is marked
where it leaves, with where it went ("↑ 434 at t=200"); a run declared diverged is drawn up to its
divergence and has no band there; the footer names the fidelity, the horizon T and the path counts
grouped by value, and mentions the ±2 SE bands only when some band is drawn.
"""
from __future__ import annotations

import re
import textwrap
from collections import Counter
from pathlib import Path

import matplotlib

matplotlib.use("Agg")   # files only; never a window (tests and headless machines)
import matplotlib.pyplot as plt

from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.panels.style import AXES_WIDTH, BAND_SE, count_text
from sgi_run.figures.results import RunData

LEGEND_FONT = 7.5
LEGEND_WRAP = 40     # characters per legend line
FOOTER_WRAP = 170    # characters per footer line (at the narrowest figure)
DPI = 130            # drawn and measured at the resolution it is saved at (text extents depend on it)
MAP_WIDTH = 3.4     # inches per map of a row of maps, its colour bar included (the figure widens to fit)


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
    kinds = [PANEL_KINDS[p["quantity"]] for p in exp.panels]
    base = [kind.height for kind in kinds]
    fig, axes = plt.subplots(len(exp.panels), 1, figsize=(AXES_WIDTH + 4, sum(base) + 1.5), dpi=DPI,
                             gridspec_kw={"height_ratios": base}, squeeze=False)
    bands = bars = 0
    for row, kind in enumerate(kinds):
        if kind.projection:     # its own axes in the panel's place, e.g. a sphere's 3-D axes
            spec = axes[row, 0].get_subplotspec()
            axes[row, 0].remove()
            axes[row, 0] = fig.add_subplot(spec, projection=kind.projection)
    for ax, panel, kind in zip(axes[:, 0], exp.panels, kinds):
        by_position = {run_id: f"C{i % 10}" for i, run_id in enumerate(panel["runs"])}
        panel_colours = by_position if panel.get("colours") == "by_position" else colours
        drawn = kind.draw(ax, exp, panel, data, panel_colours)
        if kind.studies:     # error bars around the studies' errors
            bars += drawn
        else:
            bands += drawn
        if panel.get("title"):     # a row of maps: the panel's title stands above its maps' own titles
            ax.set_title(panel["title"], fontsize=9, **({"pad": kind.title_pad} if kind.title_pad else {}))
        if kind.grid:
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
    maps = max([kind.maps(p, data) for p, kind in zip(exp.panels, kinds) if kind.maps], default=0)
    width = max(AXES_WIDTH + 1.2 + legend_column, maps * MAP_WIDTH + 1.0)
    footer = "\n".join(textwrap.wrap(footer, int(FOOTER_WRAP * width / (AXES_WIDTH + 4))))
    footer_in = 0.16 * (footer.count("\n") + 1) + 0.15
    title_in = 0.25 * (fig.get_suptitle().count("\n") + 1) + 0.25
    height = sum(heights) + 0.75 * len(heights) + title_in + footer_in
    fig.set_size_inches(width, height)
    axes[0, 0].get_gridspec().set_height_ratios(heights)
    fig.text(0.01, 0.006, footer, fontsize=7, color="0.35", va="bottom")
    # tight_layout counts the legends hanging off the axes' right edge: the data area keeps its width. It does not
    # count a 3-D axes' title: a titled 3-D first panel (a sphere) gets that room below the heading.
    titled_3d = kinds[0].projection == "3d" and exp.panels[0].get("title")
    fig.tight_layout(rect=(0, footer_in / height, 1, 1 - (0.05 + (0.3 if titled_3d else 0)) / height))
    return fig


def draw(exp, data: dict[str, RunData], table: list[dict], fidelity: str, path: Path) -> Path:
    """Draw the figure to ``path`` (PNG)."""
    fig = figure(exp, data, table, fidelity)
    path = Path(path)
    fig.savefig(path, dpi=DPI)
    plt.close(fig)
    return compact_png(path)


def compact_png(path: Path) -> Path:
    """Rewrite a PNG with a 256-colour palette: line plots and their anti-aliasing lose nothing visible, and
    the file is about 5x smaller (the figures kept in the repository, gallery/paper, stay a few hundred kB)."""
    from PIL import Image

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    palette.save(path, "PNG", optimize=True)
    return path
