"""The one writer of markdown tables: a run's summary.md and convergence.md, a figure's tables, the site's
pages and the gallery index all write theirs with ``table``."""
from __future__ import annotations

from collections.abc import Callable, Sequence


def escaped(text) -> str:
    """A table cell's text: a "|" of it ("SE/|E|") would end its cell."""
    return str(text).replace("|", "\\|")


def table(header: Sequence[str], cells: Sequence[Sequence[object]], cell: Callable[[object], str] = escaped) -> list[str]:
    """The lines of the markdown table of ``header`` and rows of ``cells``, each text written by ``cell`` (by
    default ``escaped``; the site passes its ``markdown_literal``, a caller with cells already written ``str``)."""
    def row(texts) -> str:
        return "| " + " | ".join(cell(t) for t in texts) + " |"
    return [row(header), "|" + "---|" * len(header)] + [row(c) for c in cells]
