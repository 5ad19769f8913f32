"""Typed field validators: one config value checked, and returned as its type, or refused.

Every config reader (the plans, the executor, the solver, the integrator's parameters and tableau, a
system's parameters) checks its fields with these, so "a finite number" means one thing everywhere: an
int or a float (numpy's included), never a bool, never inf or nan. A refusal is the one-line
``ConfigError(key, value, allowed)``; ``allowed`` is the reader's own words for what the field takes.
The ``is_*`` predicates are the same tests, for a field whose rule combines them (null, or a number > 0,
or a rule's name).
"""
from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any, TypeVar

import numpy as np

from sgi_run.core.errors import ConfigError

T = TypeVar("T")
AUTO = "auto"


def is_number(value) -> bool:
    """An int or a float (numpy's included), finite or not; a bool is no number (YAML's true is not 1)."""
    return isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool)


def is_real(value) -> bool:
    """A finite number."""
    return is_number(value) and math.isfinite(value)


def is_integer(value) -> bool:
    """An int (numpy's included), never a bool."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _within(value, above, at_least, below, at_most) -> bool:
    return ((above is None or value > above) and (at_least is None or value >= at_least)
            and (below is None or value < below) and (at_most is None or value <= at_most))


def real(key: str, value, allowed: str = "a finite number", *, above=None, at_least=None, below=None,
         at_most=None) -> float:
    """A finite number within the bounds given (``above``/``below`` open, ``at_least``/``at_most`` closed),
    as a float."""
    if not (is_real(value) and _within(value, above, at_least, below, at_most)):
        raise ConfigError(key, value, allowed)
    return float(value)


def integer(key: str, value, allowed: str = "an integer", *, at_least=None, below=None, at_most=None) -> int:
    """An integer within the bounds given (``below`` open, ``at_least``/``at_most`` closed), as an int."""
    if not (is_integer(value) and _within(value, None, at_least, below, at_most)):
        raise ConfigError(key, value, allowed)
    return int(value)


def probability(key: str, value, allowed: str = "a probability: a number in [0, 1]") -> float:
    return real(key, value, allowed, at_least=0, at_most=1)


def boolean(key: str, value, allowed: str = "true or false") -> bool:
    if not isinstance(value, (bool, np.bool_)):
        raise ConfigError(key, value, allowed)
    return bool(value)


def text(key: str, value, allowed: str = "a non-empty text") -> str:
    """A string with more than blanks in it."""
    if not (isinstance(value, str) and value.strip()):
        raise ConfigError(key, value, allowed)
    return value


def choice(key: str, value, options: Collection, allowed: str | None = None):
    """One of ``options`` (refused naming them, unless ``allowed`` says it otherwise)."""
    try:
        known = value in options
    except (TypeError, ValueError):     # a list or a mapping where a name belongs: unhashable, or no truth value
        known = False
    if not known:
        raise ConfigError(key, value, f"one of {list(options)}" if allowed is None else allowed)
    return value


def auto_or(check: Callable[..., T], key: str, value, allowed: str, **bounds) -> T | str:
    """``'auto'`` (settled later) or a value ``check`` accepts: ``auto_or(integer, key, v, allowed, at_least=1)``."""
    return value if isinstance(value, str) and value == AUTO else check(key, value, allowed, **bounds)


def list_of(key: str, value, allowed: str, *, item: Callable[[Any], bool] | None = None, at_least: int = 0,
            distinct: bool = False) -> tuple:
    """A list (or tuple) of at least ``at_least`` entries, each one ``item`` accepts (any, without ``item``;
    all different where ``distinct``), as a tuple."""
    ok = (isinstance(value, (list, tuple)) and len(value) >= at_least and (item is None or all(map(item, value)))
          and (not distinct or len(set(value)) == len(value)))
    if not ok:
        raise ConfigError(key, value, allowed)
    return tuple(value)
