"""How a figure is laid out and how its curves are told apart, as an experiment file gives it (no matplotlib:
experiment files are validated before anything is drawn).

``layout: {columns: 2, legend: shared, letters: true}``: the panels fill a grid row by row, ``columns`` wide
(default 1: stacked, one above the other); ``legend: shared`` draws one legend for the whole figure, one entry
per distinct label, beside the grid (``panel``, the default: each panel's legend beside it); ``letters: true``
puts "(a)", "(b)", ... before the panels' titles, in reading order, as the papers letter their panels.

Curves: each run has a colour of the Okabe-Ito palette (told apart by the commonest colour-vision
deficiencies), a line style and a marker, chosen together so that runs sharing a panel differ in line style or
marker as well as colour, and stay apart when printed in grey. A run may name its colour (``runs.<id>.colour``)
where the paper's caption names one ("the stochastic equations (blue)").
"""
from __future__ import annotations

import dataclasses

from sgi_run.core.errors import require

# Okabe & Ito's palette for colour-vision deficiencies (Wong, Nature Methods 8, 441 (2011)), without its yellow,
# which vanishes on white; black is kept for reference lines and exact curves.
PALETTE = {"blue": "#0072B2", "vermillion": "#D55E00", "green": "#009E73", "purple": "#CC79A7",
           "orange": "#E69F00", "sky": "#56B4E9", "grey": "#6E6E6E"}
LINESTYLES = ("-", "-.", "--", ":")   # solid, dash-dotted, dashed: the order the papers name them in
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LEGENDS = ("panel", "shared")


@dataclasses.dataclass(frozen=True)
class CurveStyle:
    """One run's (or one series') look: colour, line style and marker."""
    colour: str
    linestyle: str
    marker: str

    def line(self, points: int, offset: int = 0, first: int = 0) -> dict:
        """matplotlib keywords for a curve of which ``points`` points are in view from index ``first`` on: about a
        dozen markers along the part in view (``offset`` shifts them, so that curves which lie on one another
        still show each one's markers)."""
        every = max(1, points // 12)
        return {"color": self.colour, "ls": self.linestyle, "marker": self.marker, "ms": 4.5,
                "markevery": (first + offset * max(1, every // 4) % every, every), "mfc": "white", "mew": 1.0}


def style(n: int, colour: str | None = None) -> CurveStyle:
    """The n-th style: colour, line style and marker all change from one to the next, and no two of the
    first ``len(MARKERS)`` share a marker (nor, among the first ``len(LINESTYLES)``, a line style)."""
    colours = list(PALETTE.values())
    return CurveStyle(PALETTE[colour] if colour else colours[n % len(colours)], LINESTYLES[n % len(LINESTYLES)],
                      MARKERS[n % len(MARKERS)])


@dataclasses.dataclass(frozen=True)
class Layout:
    columns: int = 1
    legend: str = "panel"
    letters: bool = False

    def grid(self, panels: int) -> tuple[int, int]:
        """(rows, columns) of a figure of that many panels."""
        columns = min(self.columns, panels)
        return -(-panels // columns), columns


def letter(i: int) -> str:
    """The i-th panel's letter: "(a)", "(b)", ..."""
    return f"({chr(ord('a') + i)})"


def parse_layout(value: dict | None, key: str, panels: int) -> Layout:
    """An experiment file's ``layout`` (its keys and values as the schema allows them, sgi_run.figures.schema), on
    a grid no wider than its panels."""
    layout = Layout(**(value or {}))
    require(f"{key}.columns", layout.columns, layout.columns <= panels,
            f"an integer from 1 to the number of panels ({panels})")
    return layout
