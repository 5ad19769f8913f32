"""The benchmark suite's definition (``conf/bench/suite.yaml``): the systems, each with how it is measured, and
the fidelity profiles. Which methods a system gets is not defined here: every integrator option that fits it
(``bench.cells``).

A system of one's own (``sgi-bench --system FILE``) is a suite of one entry: its system YAML (as in
``conf/system/``) measured with the defaults below unless the command line says otherwise.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

from sgi_run.bundled import CONF_DIR
from sgi_run.core.errors import ConfigError, require
from sgi_run.core.fields import integer, is_real, list_of, real, text

SUITE_FILE = CONF_DIR / "bench" / "suite.yaml"
REFERENCE_EXACT = "exact"
ENTRY_KEYS = ("overrides", "label", "T", "dts", "observable", "reference", "refine", "truncate", "paths")


@dataclasses.dataclass(frozen=True)
class SystemEntry:
    """One system of the suite and how its studies are made."""
    name: str
    overrides: tuple[str, ...]
    label: str
    T: float
    dts: tuple[float, ...]          # coarse to fine
    observable: str
    reference: str                  # exact, or the method computing the shared reference
    refine: int = 16
    truncate: str | float | None = None
    paths: float = 1.0              # a factor on the fidelity's paths, studied and timed

    def scaled_paths(self, paths: int, least: int = 1) -> int:
        """The fidelity's ``paths`` (a study's, or the timing series') for this system: a costly one runs fewer."""
        return max(least, round(paths * self.paths))

    @property
    def exact(self) -> bool:
        return self.reference == REFERENCE_EXACT

    def describe_reference(self) -> str:
        if self.exact:
            return "the exact solution"
        return f"{self.reference} at dt = {min(self.dts) / self.refine:g} on the same Brownian paths"


@dataclasses.dataclass(frozen=True)
class Fidelity:
    name: str
    paths: int
    levels: int                     # how many of each system's step sizes (the coarsest)
    cost_paths: int
    cost_repeats: int


@dataclasses.dataclass(frozen=True)
class Suite:
    systems: dict[str, SystemEntry]
    fidelities: dict[str, Fidelity]
    not_benchmarked: dict[str, str]
    source: str                     # the file it was read from

    def fidelity(self, name: str) -> Fidelity:
        if name not in self.fidelities:
            raise ConfigError("--fidelity", name, f"one of {list(self.fidelities)}")
        return self.fidelities[name]

    def only(self, names: Sequence[str] | None) -> Suite:
        """The suite restricted to ``names`` (its systems), in the suite's order."""
        if not names:
            return self
        for name in names:
            require("--systems", name, name in self.systems, f"systems of the suite: {list(self.systems)}")
        return dataclasses.replace(self, systems={k: v for k, v in self.systems.items() if k in names})


def read(path: str | Path = SUITE_FILE) -> Suite:
    """The suite in ``path``, every entry checked (one-line ``ConfigError`` naming ``<system>.<key>``)."""
    path = Path(path)
    with open(path) as f:
        node = yaml.safe_load(f) or {}
    defaults = dict(node.get("defaults") or {})
    systems = {name: entry_of(name, {**defaults, **(spec or {})}) for name, spec in (node.get("systems") or {}).items()}
    require("systems", None, bool(systems), f"at least one system in {path}")
    fidelities = {name: _fidelity(name, spec) for name, spec in (node.get("fidelity") or {}).items()}
    not_benchmarked = {str(k): text(f"not_benchmarked.{k}", v) for k, v in (node.get("not_benchmarked") or {}).items()}
    return Suite(systems, fidelities, not_benchmarked, str(path))


def entry_of(name: str, spec: Mapping) -> SystemEntry:
    """A system entry from its mapping (the suite file's, or the command line's for a system of one's own)."""
    for key in spec:
        require(f"{name}.{key}", spec[key], key in ENTRY_KEYS, f"one of the keys {list(ENTRY_KEYS)}")
    overrides = tuple(list_of(f"{name}.overrides", spec.get("overrides"), "a list of Hydra overrides (text)",
                              item=lambda o: isinstance(o, str) and "=" in o, at_least=1))
    T = real(f"{name}.T", spec.get("T"), "a number > 0", above=0)
    dts = list_of(f"{name}.dts", spec.get("dts"), "at least two step sizes > 0, coarse to fine",
                  item=lambda d: is_real(d) and d > 0, at_least=2)
    require(f"{name}.dts", dts, list(dts) == sorted(dts, reverse=True) and len(set(dts)) == len(dts),
            "distinct step sizes, coarse to fine")
    truncate = spec.get("truncate")
    require(f"{name}.truncate", truncate, truncate is None or truncate == "log_dt" or (is_real(truncate) and truncate > 0),
            "null, log_dt or a bound > 0")
    return SystemEntry(name, overrides, text(f"{name}.label", spec.get("label", name)), T,
                       tuple(float(d) for d in dts), text(f"{name}.observable", spec.get("observable")),
                       text(f"{name}.reference", spec.get("reference")),
                       integer(f"{name}.refine", spec.get("refine", 16), "an integer >= 2", at_least=2), truncate,
                       real(f"{name}.paths", spec.get("paths", 1.0), "a factor in (0, 1]", above=0, at_most=1))


def _fidelity(name: str, spec) -> Fidelity:
    require(f"fidelity.{name}", spec, isinstance(spec, Mapping) and isinstance(spec.get("cost"), Mapping),
            "a mapping with paths, levels and cost: {paths, repeats}")
    return Fidelity(name, integer(f"fidelity.{name}.paths", spec.get("paths"), "an integer >= 10", at_least=10),
                    integer(f"fidelity.{name}.levels", spec.get("levels"), "an integer >= 2", at_least=2),
                    integer(f"fidelity.{name}.cost.paths", spec["cost"].get("paths"), "an integer >= 1", at_least=1),
                    integer(f"fidelity.{name}.cost.repeats", spec["cost"].get("repeats"), "an integer >= 1",
                            at_least=1))
