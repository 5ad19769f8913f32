"""Compiled programs shared within a process by the value of what they compute with.

JAX traces and lowers a jitted function again for every new function object, even where its
compilation cache then finds the compiled program: a figure's runs that differ only in the step size
built a simulator each and traced the same steps again (a few tenths of a second per program, more
for an implicit method). ``shared`` hands out one jitted program per kind and per value of the
objects it closes over (a system's parameters, an integrator's tableau and solver settings), compared
by their pickled bytes: two runs of the same system and method get the same program object, which
JAX traces once per argument shape. Bytes that differ for equal values only miss the cache; an
object that cannot be pickled gets a program of its own. Never a program built for other values.
"""
from __future__ import annotations

import collections
import pickle
from collections.abc import Callable

# Programs kept per process, the least recently used dropped beyond this (a figures session builds a
# few hundred; each holds its traces and compiled executables).
KEPT_PROGRAMS = 512

_programs: collections.OrderedDict[tuple[str, bytes], Callable] = collections.OrderedDict()


def shared(kind: str, owners: tuple, build: Callable[[], Callable]) -> Callable:
    """The program of ``kind`` for ``owners`` (the objects ``build`` closes over, and every value its
    program depends on): built by ``build()`` the first time, the same object after that."""
    try:
        key = (kind, pickle.dumps(owners, protocol=pickle.HIGHEST_PROTOCOL))
    except (pickle.PicklingError, TypeError, AttributeError):
        return build()
    if key in _programs:
        _programs.move_to_end(key)
    else:
        _programs[key] = build()
        while len(_programs) > KEPT_PROGRAMS:
            _programs.popitem(last=False)
    return _programs[key]
