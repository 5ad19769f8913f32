"""The rich console every command line prints through (``sgi-run``, its convergence studies,
``sgi-figures``): the no-wrap rule for output that is not a terminal, and the ASCII a terminal without
Unicode gets, live here only."""
from __future__ import annotations

import codecs
import sys
import unicodedata

# Wide enough for any table at its natural width; rich only pads up to it what asks to expand.
UNWRAPPED_WIDTH = 10_000

# A symbol of the output in an encoding without it (an ASCII locale: LANG=C, PYTHONIOENCODING=ascii); any other
# character as its letter without accents or its digit (NFKD: ü -> u, ² -> 2), else '?'.
ASCII = {"±": "+/-", "×": "x", "≤": "<=", "≥": ">=", "−": "-", "–": "-", "—": "-", "→": "->", "≈": "~", "Δ": "d"}
IN_ASCII = "sgi-run-ascii"     # the codec error handler that writes them so


def _in_ascii(error: UnicodeEncodeError) -> tuple[str, int]:
    unaccented = lambda c: unicodedata.normalize("NFKD", c).encode("ascii", "ignore").decode() or "?"
    return "".join(ASCII.get(c) or unaccented(c) for c in error.object[error.start:error.end]), error.end


codecs.register_error(IN_ASCII, _in_ascii)


def encodable(text: str, encoding: str) -> str:
    """``text`` with what ``encoding`` lacks in ASCII (``ASCII``)."""
    return text.encode(encoding, IN_ASCII).decode(encoding)


def console():
    """A ``rich.console.Console`` on stdout. On a terminal it fits the terminal's width; into a pipe
    or a file (a log, ``| grep``) nothing is wrapped: each line printed stays one line, and a table
    keeps its natural width instead of rich's 80-column default.

    Where the output's encoding lacks a symbol (an ASCII locale), its text is printed in ASCII (± as +/-), before
    rich lays out a table, so its columns stay aligned; stdout and stderr write anything else so too, never raising
    UnicodeEncodeError: a run's summary is printed after its results are saved, and must not fail there."""
    from rich.console import Console

    class InItsEncoding(Console):
        def render_str(self, text, **kwargs):
            return super().render_str(encodable(text, self.encoding), **kwargs)

    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors=IN_ASCII)
    terminal = InItsEncoding()
    if terminal.is_terminal:
        return terminal
    return InItsEncoding(soft_wrap=True, width=UNWRAPPED_WIDTH)
