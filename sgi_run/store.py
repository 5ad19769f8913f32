"""``ensemble.h5``, schema v1 (DESIGN.md "Outputs"), and its public reader ``load``.

Layout::

    /t                                   output times
    /observables/<name>/{mean,var,count} per output time (var unbiased; count = finite paths)
    /paths/<name>                        (kept paths, times) for state coordinates and observables
    /diagnostics/{nonfinite_paths,newton_iterations,newton_max_iterations}   per output time
    /snapshots/t, /snapshots/<coordinate>   (snapshot times, paths): every path's state at the
                                         plan's ``snapshots`` times (absent when there are none)
    /time_averages/<name>                (paths,): every path's average of an observable over the
                                         output times in attrs ``time_average`` = [start, end]
                                         (absent without ``plan.time_average``; NaN for a path
                                         that was non-finite at any of those times)
    attrs: schema_version, sgi_run_version, code_digest, seed, config (resolved YAML), config_hash,
           system, integrator, paths, wall_time_s, shards

The file is written under a temporary name and renamed when complete, so a file named
``ensemble.h5`` is always whole.
"""
from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import h5py
import numpy as np

SCHEMA_VERSION = 1


@dataclasses.dataclass
class Ensemble:
    t: np.ndarray
    observables: dict[str, dict[str, np.ndarray]]   # name -> {mean, var, count}
    paths: dict[str, np.ndarray]
    diagnostics: dict[str, np.ndarray]
    attrs: dict
    snapshots: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # "t" and coordinates
    time_averages: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # observable -> (paths,)

    def snapshot(self, t: float | None = None) -> dict[str, np.ndarray] | None:
        """Every path's coordinates at snapshot time ``t`` (None: the last snapshot), name -> (paths,);
        None when the run stored no snapshot at ``t``."""
        if not self.snapshots:
            return None
        times = self.snapshots["t"]
        hits = [len(times) - 1] if t is None else np.flatnonzero(np.isclose(times, t, rtol=1e-9, atol=1e-9))
        if not len(hits):
            return None
        return {k: v[hits[0]] for k, v in self.snapshots.items() if k != "t"}

    def mean(self, name: str) -> np.ndarray:
        return self.observables[name]["mean"]

    def sem(self, name: str) -> np.ndarray:
        """Monte Carlo standard error of the mean at each output time."""
        o = self.observables[name]
        return np.sqrt(o["var"] / np.maximum(o["count"], 1))

    @property
    def config(self):
        from omegaconf import OmegaConf
        return OmegaConf.create(self.attrs["config"])


def write(path: Path, ens: Ensemble) -> Path:
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    with h5py.File(tmp, "w") as f:
        f.attrs["schema_version"] = SCHEMA_VERSION
        for k, v in ens.attrs.items():
            f.attrs[k] = v
        f.create_dataset("t", data=ens.t)
        for name, fields in ens.observables.items():
            for field, data in fields.items():
                f.create_dataset(f"observables/{name}/{field}", data=data)
        for name, data in ens.paths.items():
            f.create_dataset(f"paths/{name}", data=data)
        for name, data in ens.diagnostics.items():
            f.create_dataset(f"diagnostics/{name}", data=data)
        for name, data in ens.snapshots.items():
            f.create_dataset(f"snapshots/{name}", data=data)
        for name, data in ens.time_averages.items():
            f.create_dataset(f"time_averages/{name}", data=data)
    os.replace(tmp, path)
    return path


def load(path) -> Ensemble:
    """Read an ``ensemble.h5`` (or the run directory holding one) into plain numpy arrays."""
    path = Path(path)
    if path.is_dir():
        path = path / "ensemble.h5"
    with h5py.File(path, "r") as f:
        version = int(f.attrs.get("schema_version", -1))
        if version != SCHEMA_VERSION:
            raise ValueError(f"{path}: schema_version={version} is not readable: this sgi-run reads {SCHEMA_VERSION}")
        attrs = {k: (v.item() if isinstance(v, np.generic) else v) for k, v in f.attrs.items()}
        group = lambda g: {k: f[g][k][()] for k in f[g]} if g in f else {}
        observables = {name: {k: f["observables"][name][k][()] for k in f["observables"][name]}
                       for name in f["observables"]}
        return Ensemble(f["t"][()], observables, group("paths"), group("diagnostics"), attrs, group("snapshots"),
                        group("time_averages"))
