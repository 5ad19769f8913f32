"""The rich console every command line prints through (``sgi-run``, its convergence studies,
``sgi-figures``): the no-wrap rule for output that is not a terminal lives here only."""
from __future__ import annotations

# Wide enough for any table at its natural width; rich only pads up to it what asks to expand.
UNWRAPPED_WIDTH = 10_000


def console():
    """A ``rich.console.Console`` on stdout. On a terminal it fits the terminal's width; into a pipe
    or a file (a log, ``| grep``) nothing is wrapped: each line printed stays one line, and a table
    keeps its natural width instead of rich's 80-column default."""
    from rich.console import Console

    terminal = Console()
    if terminal.is_terminal:
        return terminal
    return Console(soft_wrap=True, width=UNWRAPPED_WIDTH)
