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

from sgi_run.figures.layout import CurveStyle, letter, style
from sgi_run.figures.panels import PANEL_KINDS
from sgi_run.figures.panels.style import AXES_WIDTH, BAND_SE, count_text
from sgi_run.figures.results import RunData

LEGEND_FONT = 7.5
LEGEND_WRAP = 40     # characters per legend line
FOOTER_WRAP = 170    # characters per footer line (at the narrowest figure)
HEADING_CHARACTERS_PER_INCH = 12
DPI = 130            # drawn and measured at this resolution (text extents depend on it)
PNG_DPI = 200        # saved at this one: the gallery's full-size view stays sharp
RASTERIZE_POINTS = 20000   # a curve with more points is an image inside the PDF and SVG (sizes stay ~1 MB)
MAP_WIDTH = 3.4     # inches per map of a row of maps, its colour bar included (the figure widens to fit)
TITLE_CHARACTERS_PER_INCH = 14   # a panel's title is wrapped to its data area's width (9 pt)
GRID_AXES_WIDTH = 4.2   # inches of data area per panel where panels stand side by side


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
def wrap(text: str, width: int) -> list[str]:
    """``textwrap.wrap`` that never breaks inside mathtext ($...$): a formula split over two lines is not one."""
    keep = "\x00"
    joined = re.sub(r"\$[^$]*\$", lambda m: m[0].replace(" ", keep), text)
    return [line.replace(keep, " ") for line in textwrap.wrap(joined, width)]


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
            lines += wrap(piece.strip(), width - 2) or [piece]
    return "\n".join(lines[:1] + ["  " + line for line in lines[1:]])


def _legend(ax):
    """The panel's legend to the right of its axes, long labels wrapped."""
    handles, labels = ax.get_legend_handles_labels()
    if not handles:
        return None
    labels = [wrap_label(label) for label in labels]
    return ax.legend(handles, labels, fontsize=LEGEND_FONT, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                     borderaxespad=0.0, frameon=False, handlelength=2.6)


def _shared_legend(fig, axes):
    """One legend for the figure, one entry per distinct label (a run drawn in every panel is listed once), to the
    right of the grid (placed once the figure has its size)."""
    entries: dict = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    if not entries:
        return None
    return fig.legend(list(entries.values()), [wrap_label(label) for label in entries], fontsize=LEGEND_FONT,
                      loc="upper left", frameon=False, handlelength=2.6)


def run_styles(exp) -> dict[str, CurveStyle]:
    """One style (colour, line style, marker) per run, the same in every panel; runs that share a panel get
    different ones, in file order; a run that names its colour (``runs.<id>.colour``) keeps it."""
    shares = {run_id: set() for run_id in exp.runs}
    for panel in exp.panels:
        for run_id in panel.get("runs", []):
            shares[run_id].update(r for r in panel["runs"] if r != run_id)
    numbers: dict[str, int] = {}
    for run_id in exp.runs:
        taken = {numbers[r] for r in shares[run_id] if r in numbers}
        numbers[run_id] = next(n for n in range(len(exp.runs) + 1) if n not in taken)
    return {run_id: style(n, exp.runs[run_id].colour) for run_id, n in numbers.items()}


def _panel_axes(fig, kinds, rows: int, columns: int, heights: list[float]):
    grid = fig.add_gridspec(rows, columns, height_ratios=heights)
    return [fig.add_subplot(grid[i // columns, i % columns], projection=kind.projection)
            for i, kind in enumerate(kinds)]


def figure(exp, data: dict[str, RunData], table: list[dict], fidelity: str):
    """The figure: the panels of ``exp.panels`` on ``exp.layout``'s grid (stacked by default), as a matplotlib
    Figure."""
    styles, layout = run_styles(exp), exp.layout
    kinds = [PANEL_KINDS[p["quantity"]] for p in exp.panels]
    rows, columns = layout.grid(len(kinds))
    cells = [list(range(r * columns, min((r + 1) * columns, len(kinds)))) for r in range(rows)]
    base = [max(kinds[i].height for i in row) for row in cells]
    panel_width = AXES_WIDTH if columns == 1 else GRID_AXES_WIDTH
    fig = plt.figure(figsize=(columns * (panel_width + 4), sum(base) + 1.5), dpi=DPI)
    axes = _panel_axes(fig, kinds, rows, columns, base)
    bands = bars = 0
    for i, (ax, panel, kind) in enumerate(zip(axes, exp.panels, kinds)):
        by_position = {run_id: style(n) for n, run_id in enumerate(panel["runs"])}
        drawn = kind.draw(ax, exp, panel, data, by_position if panel.get("colours") == "by_position" else styles)
        if kind.studies:     # error bars around the studies' errors
            bars += drawn
        else:
            bands += drawn
        title = " ".join(filter(None, [letter(i) if layout.letters else "", panel.get("title")]))
        if title:     # a row of maps: the panel's title stands above its maps' own titles
            ax.set_title("\n".join(wrap(title, int(TITLE_CHARACTERS_PER_INCH * panel_width))), fontsize=9,
                         **({"pad": kind.title_pad} if kind.title_pad else {}))
        if kind.grid:
            ax.grid(alpha=0.3)
        if layout.legend == "panel":
            _legend(ax)
    shared = _shared_legend(fig, axes) if layout.legend == "shared" else None
    footer = "; ".join([footer_text(table, fidelity, bands, bars)] + list(dict.fromkeys(
        filter(None, (kind.footer(panel, data) for panel, kind in zip(exp.panels, kinds) if kind.footer)))))

    # Size: the data area keeps its width and each row is at least as tall as its panels' legends.
    renderer = fig.canvas.get_renderer()
    extent = lambda legend: legend.get_window_extent(renderer) if legend else None
    legends = [extent(ax.get_legend()) for ax in axes]
    heights = [max([base[r]] + [legends[i].height / fig.dpi + 0.5 for i in row if legends[i]])
               for r, row in enumerate(cells)]
    column_widths = []
    for c in range(columns):
        in_column = [i for i in range(c, len(kinds), columns)]
        legend_width = max([legends[i].width / fig.dpi for i in in_column if legends[i]], default=0)
        maps = max([kinds[i].maps(exp.panels[i], data) for i in in_column if kinds[i].maps], default=0)
        column_widths.append(max(panel_width + 1.2 + (legend_width + 0.35 if legend_width else 0.15),
                                 maps * MAP_WIDTH + 1.0))
    shared_width = extent(shared).width / fig.dpi + 0.3 if shared else 0.0
    width = sum(column_widths) + shared_width
    footer = "\n".join(textwrap.wrap(footer, int(FOOTER_WRAP * width / (AXES_WIDTH + 4))))
    # The heading within the panels' width, beside the shared legend (at 10.5 pt about HEADING_CHARACTERS_PER_INCH characters an inch).
    heading = "\n".join(wrap(exp.heading, min(95 * columns, int(HEADING_CHARACTERS_PER_INCH * (width - shared_width)))))
    footer_in = 0.16 * (footer.count("\n") + 1) + 0.15
    title_in = 0.25 * (heading.count("\n") + 1) + 0.25
    body = max(sum(heights) + 0.75 * len(heights), extent(shared).height / fig.dpi + 0.3 if shared else 0.0)
    height = body + title_in + footer_in
    fig.set_size_inches(width, height)
    axes[0].get_gridspec().set_height_ratios(heights)
    axes[0].get_gridspec().set_width_ratios(column_widths)
    right = 1 - shared_width / width
    # The heading a fixed 0.1 in below the top edge and centred over the panels (not over the shared legend):
    # tight_layout leaves room for the heading's height as if it stood at the edge; at matplotlib's default
    # (2% of the height below it) a tall figure's heading overlapped its first panels' titles.
    title = fig.suptitle(heading, fontsize=10.5, x=right / 2, y=1 - 0.1 / height, va="top")
    fig.text(0.01, 0.006, footer, fontsize=7, color="0.35", va="bottom")
    # tight_layout counts the legends hanging off the axes' right edge: the data area keeps its width. It does not
    # count a 3-D axes' title: a titled 3-D first row (a sphere) gets that room below the heading.
    titled_3d = kinds[0].projection == "3d" and (exp.panels[0].get("title") or layout.letters)
    top = 1 - (0.1 + (0.3 if titled_3d else 0)) / height
    fig.tight_layout(rect=(0, footer_in / height, right, top))
    panels_centre = right / 2 * width      # inches from the left edge
    _widen_for_legends(fig, axes)
    title.set_x(panels_centre / fig.get_size_inches()[0])
    if shared:
        shared.set_bbox_to_anchor((right + 0.1 / width, top), transform=fig.transFigure)
    return fig


def _widen_for_legends(fig, axes) -> None:
    """Widen the figure by what the panels' legends stick out beyond its right edge (and a margin), every axes
    keeping its place and size in inches. tight_layout does not always leave a legend its room: beside a 3-D
    panel in the right column of a grid (Gay-Balmaz & Wu 2024 Figs 6, 8, 11) it stretched the 3-D axes over the room meant
    for the legend, which the PNG then cut off."""
    renderer = fig.canvas.get_renderer()
    ends = [ax.get_legend().get_window_extent(renderer).x1 for ax in axes if ax.get_legend()]
    margin = 0.1 * fig.dpi      # pixels between the rightmost legend and the edge
    overflow = max(ends, default=0.0) + margin - fig.bbox.x1
    if overflow <= 0:
        return
    width, height = fig.get_size_inches()
    wider = width + overflow / fig.dpi
    params = fig.subplotpars
    fig.set_size_inches(wider, height)
    # In fractions of the wider figure: the same inches from its left edge (wspace is relative to the axes: kept).
    fig.subplots_adjust(left=params.left * width / wider, right=params.right * width / wider)


def draw(exp, data: dict[str, RunData], table: list[dict], fidelity: str, path: Path) -> Path:
    """Draw the figure to ``path`` (PNG at ``PNG_DPI``), and beside it as PDF and SVG (vector, for print: a curve of
    more points than a print shows is drawn as an image inside them, ``RASTERIZE_POINTS``)."""
    fig = figure(exp, data, table, fidelity)
    path = Path(path)
    fig.savefig(path, dpi=PNG_DPI)
    for ax in fig.axes:
        for artist in [*ax.lines, *ax.collections]:
            if _points(artist) > RASTERIZE_POINTS:
                artist.set_rasterized(True)
    # Text as text in the SVG (a glyph's outline repeated for every character made it 2-3x the size).
    with plt.rc_context({"svg.fonttype": "none"}):
        for suffix in (".pdf", ".svg"):
            fig.savefig(path.with_suffix(suffix), dpi=DPI, metadata=_VECTOR_METADATA[suffix])   # DPI: their images
    plt.close(fig)
    return compact_png(path)


# No creation date in the vector files: the same figure gives the same bytes.
_VECTOR_METADATA = {".pdf": {"CreationDate": None}, ".svg": {"Date": None}}


def _points(artist) -> int:
    """How many vertices an artist draws (a line's points, a collection's paths' vertices)."""
    if hasattr(artist, "get_xydata"):
        return len(artist.get_xydata())
    return sum(len(p.vertices) for p in getattr(artist, "get_paths", lambda: [])())


def compact_png(path: Path) -> Path:
    """Rewrite a PNG with a 256-colour palette: line plots and their anti-aliasing lose nothing visible, and
    the file is about 5x smaller (the figures kept in the repository, gallery/paper, stay a few hundred kB)."""
    from PIL import Image

    with Image.open(path) as image:
        palette = image.convert("RGB").quantize(colors=256, method=Image.Quantize.FASTOCTREE)
    palette.save(path, "PNG", optimize=True)
    return path
