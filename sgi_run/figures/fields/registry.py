"""What a figure may ask of a system's stored state beyond its observables (a field panel's map, a check's
spectrum), registered per system class: ``method_of(system, name)`` finds it for the class or its nearest
registered base."""
from __future__ import annotations

import functools
from collections.abc import Callable

# system class -> {method name: function(system, state, ...)}
FIELD_METHODS: dict[type, dict[str, Callable]] = {}


def field_method(system_class: type, name: str):
    """Register the decorated function ``(system, state, ...)`` as method ``name`` of ``system_class``'s states."""
    def register(fn: Callable) -> Callable:
        FIELD_METHODS.setdefault(system_class, {})[name] = fn
        return fn
    return register


def method_of(system, name: str) -> Callable | None:
    """Method ``name`` for this system's states, bound to the system (``method(state, ...)``); None where
    neither its class nor a base registers one."""
    for cls in type(system).__mro__:
        fn = FIELD_METHODS.get(cls, {}).get(name)
        if fn is not None:
            return functools.partial(fn, system)
    return None
