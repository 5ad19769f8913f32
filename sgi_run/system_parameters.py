"""A system parameter's declared type: the config values it accepts, and what it converts them to.

A system class annotates each parameter with one of ``PARAMETER_TYPES``' keys; ``typed`` checks a config value
against it (before the system's own domain checks) and converts it, so that ``system.q0=2`` reaches the
system as the float 2.0. Each refusal is the one-line ``ConfigError`` of ``core.fields``.
"""
from __future__ import annotations

import dataclasses
import inspect

import numpy as np

from sgi_run.core.errors import ConfigError
from sgi_run.core.fields import is_integer, is_real


def _formula_text(v) -> bool:
    return isinstance(v, str) or is_real(v)


def _as_text(v) -> str:
    """A formula as text: a number as Python writes it (a numpy scalar as the Python number it holds)."""
    return v if isinstance(v, str) else repr(v.item() if isinstance(v, np.generic) else v)


def _initial_entry(v) -> bool:
    return isinstance(v, str) or is_real(v)


def _as_initial(v):
    """A number stays a number (float: a deterministic start, as before); a text is a formula."""
    return v if isinstance(v, str) else float(v)


def _formulas(v, depth: int) -> bool:
    """A non-empty list of formulas, or (depth 2) of formulas and lists of formulas."""
    inner = (lambda x: _formula_text(x) or _formulas(x, 1)) if depth == 2 else _formula_text
    return isinstance(v, (list, tuple)) and len(v) > 0 and all(inner(x) for x in v)


def _formula_or_list(v):
    if v is None:
        return None
    return _as_text(v) if _formula_text(v) else tuple(_as_text(x) for x in v)


# Parameter types a system may declare -> (accepts, converts, what is allowed). Integers become floats:
# `system.q0=2` arrives as an int, and an integer initial state is one jax.jacfwd (Newton) refuses.
PARAMETER_TYPES = {
    "float": (is_real, float, "a finite number"),
    "float | tuple[float, ...]": (
        lambda v: is_real(v) or (isinstance(v, (list, tuple)) and len(v) > 0 and all(is_real(x) for x in v)),
        lambda v: float(v) if is_real(v) else tuple(float(x) for x in v),
        "a finite number, or a list of finite numbers (one per coordinate)"),
    "tuple[tuple[float, ...], ...] | None": (
        lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0 and all(
            isinstance(row, (list, tuple)) and len(row) > 0 and all(is_real(x) for x in row) for row in v)),
        lambda v: None if v is None else tuple(tuple(float(x) for x in row) for row in v),
        "a matrix as a list of rows of finite numbers, or null"),
    "tuple[float, ...] | None": (
        lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0 and all(is_real(x) for x in v)),
        lambda v: None if v is None else tuple(float(x) for x in v), "a list of finite numbers, or null"),
    # A formula system's (systems.formula): a formula is text, or a number YAML read (F: 0) as its text.
    "Formula": (_formula_text, _as_text, "a formula (text)"),
    "tuple[Formula, ...]": (lambda v: _formulas(v, 1), lambda v: tuple(_as_text(x) for x in v),
                            "a list of formulas (texts)"),
    "Formula | tuple[Formula, ...] | None": (
        lambda v: v is None or _formula_text(v) or _formulas(v, 1), _formula_or_list,
        "a formula, a list of formulas (one per degree of freedom), or null"),
    "tuple[Formula | tuple[Formula, ...], ...] | None": (
        lambda v: v is None or _formulas(v, 2), lambda v: None if v is None else tuple(_formula_or_list(x) for x in v),
        "a list with a formula (or a list of formulas, one per degree of freedom) per noise, or null"),
    # A formula system's initial state (systems.formula): each entry a number, or a formula of the random variables
    # xi1.., u1.. and the parameters (its initial law).
    "float | Formula | tuple[float | Formula, ...]": (
        lambda v: _initial_entry(v) or (isinstance(v, (list, tuple)) and len(v) > 0 and all(map(_initial_entry, v))),
        lambda v: _as_initial(v) if _initial_entry(v) else tuple(map(_as_initial, v)),
        "a number or a formula (an initial law in xi1, xi2, .., u1, u2, ..), or a list of those (one per coordinate)"),
    "tuple[float | Formula, ...] | None": (
        lambda v: v is None or (isinstance(v, (list, tuple)) and len(v) > 0 and all(map(_initial_entry, v))),
        lambda v: None if v is None else tuple(map(_as_initial, v)),
        "a list of numbers or formulas (an initial law in xi1, xi2, .., u1, u2, ..), or null"),
    # Gathered by a formula system's gather_parameters (systems.formula), never typed in: numbers or lists of them.
    "tuple[tuple[str, float | tuple[float, ...]], ...]": (
        lambda v: isinstance(v, tuple) and all(isinstance(k, str) and (is_real(x) or (
            isinstance(x, tuple) and len(x) > 0 and all(is_real(y) for y in x))) for k, x in v),
        lambda v: v, "named finite numbers or lists of finite numbers"),
    "int": (is_integer, int, "an integer"),
    "bool": (lambda v: isinstance(v, bool), bool, "true or false"),
    "str": (lambda v: isinstance(v, str), str, "a string"),
}


def check_parameter_types(cls) -> dict[str, str]:
    """Each parameter's declared type, as its key in PARAMETER_TYPES; an annotation outside it is the system
    author's error, named as such (TypeError) before any value is typed."""
    declared = {f.name: f.type if isinstance(f.type, str) else inspect.formatannotation(f.type)
                for f in dataclasses.fields(cls)}
    for name, annotation in declared.items():
        if annotation not in PARAMETER_TYPES:
            raise TypeError(f"{cls.__name__}.{name} is annotated {annotation!r}: a system parameter's annotation is one "
                            f"of {sorted(PARAMETER_TYPES)} (the types a config value is checked and converted to)")
    return declared


def typed(key: str, value, declared: str):
    """A system parameter checked against its declared type (before the system's own domain checks)."""
    accepts, convert, allowed = PARAMETER_TYPES[declared]
    if not accepts(value):
        raise ConfigError(key, value, allowed)
    return convert(value)
