"""The checks several panel kinds share at load: a panel's keys, a kept path's index, texts, times, numbers."""
from __future__ import annotations

from sgi_run.core.errors import require
from sgi_run.core.fields import is_integer, is_number

__all__ = ["is_integer", "is_number", "is_times", "check_keys", "check_path_index"]


def is_times(at) -> bool:
    """A non-empty list of times >= 0."""
    return isinstance(at, list) and len(at) > 0 and all(is_number(t) and t >= 0 for t in at)


def check_keys(panel: dict, allowed: tuple, kind: str, k, where: str) -> None:
    """Every key of a panel is one its kind takes."""
    for key in panel:
        require(k(f"{where}.{key}"), panel[key], key in allowed, f"a key of a {kind} panel: {list(allowed)}")


def check_path_index(panel: dict, k, where: str) -> None:
    require(k(f"{where}.path"), panel.get("path"), is_integer(panel.get("path", 0)) and panel.get("path", 0) >= 0,
            "the index of a kept path (an integer >= 0)")

