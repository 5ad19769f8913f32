"""Work-precision: each method's errors (its convergence study, on the same Brownian paths as the others')
against what it costs (``engine.cost``: every method timed in one series, in this process, on this device).

The timings are kept in ``<output_root>/work_precision/<key>/cost.h5``, ``key`` a digest of exactly what
they measure: the studies' config hashes, the paths and repeats timed, the device, the numerics code and
JAX's version. So a series is reused only for exactly that (on another machine, or after a change of the
code, it is measured again), and a series interrupted between rounds resumes from its last finished round.
The file holds, per cell (a method at a step size): ``method``, ``dt``, ``paths``, ``steps``,
``first_call_s`` (compilation and one run) and ``seconds`` (cells, rounds); its attributes say the device,
``repeats`` and whether the series is ``complete``.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable, Mapping
from pathlib import Path

import numpy as np

from sgi_run import store
from sgi_run.convergence_run import drift_cells
from sgi_run.engine import cost

FILE_NAME = "cost.h5"


@dataclasses.dataclass(frozen=True)
class MethodCost:
    """One method's timings at each of its study's step sizes (coarse to fine)."""
    dts: np.ndarray
    paths: int                   # paths of each timed ensemble
    steps: np.ndarray            # steps of each ensemble (T / dt)
    first_call_s: np.ndarray     # compilation and one run, per step size
    seconds: np.ndarray          # (step sizes, repeats): the timed runs
    device: str

    def at(self, dts) -> np.ndarray:
        """The indices of the step sizes ``dts`` (a study's, coarse to fine) among the timed ones."""
        return np.array([int(np.flatnonzero(np.isclose(self.dts, dt, rtol=1e-12))[0]) for dt in dts])

    @property
    def per_path_s(self) -> np.ndarray:
        """Median wall time per path at each step size."""
        return np.median(self.seconds, axis=1) / self.paths

    @property
    def per_path_range_s(self) -> tuple[np.ndarray, np.ndarray]:
        """The fastest and the slowest repeat, per path: the spread of the timings."""
        return self.seconds.min(axis=1) / self.paths, self.seconds.max(axis=1) / self.paths

    @property
    def path_steps_per_s(self) -> np.ndarray:
        return self.paths * self.steps / np.median(self.seconds, axis=1)


def series_key(study_hashes: Mapping[str, str], paths: int, repeats: int) -> str:
    """The digest a series of timings is kept under: everything its numbers depend on."""
    import jax

    from sgi_run.engine import device
    from sgi_run.provenance import code_digest

    what = {"studies": dict(study_hashes), "paths": paths, "repeats": repeats, "device": device.describe(),
            "numerics_code": code_digest(), "jax": jax.__version__}
    return hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()[:16]


def _write(path: Path, cells: list[cost.Cell], timings: cost.Timings, repeats: int, device: str) -> None:
    def fill(f):
        # Fixed-length bytes: a variable-length string cannot carry HDF5's checksum filter.
        store.create_checked_dataset(f, "method", np.array([c.method.encode() for c in cells]))
        store.create_checked_dataset(f, "dt", np.array([c.dt for c in cells]))
        store.create_checked_dataset(f, "paths", np.array([c.plan.paths for c in cells]))
        store.create_checked_dataset(f, "steps", np.array([c.plan.steps for c in cells]))
        store.create_checked_dataset(f, "first_call_s", timings.first_call_s, units="s",
                                     description="compilation and one run of the cell")
        store.create_checked_dataset(f, "seconds", timings.seconds, units="s",
                                     description="wall time of each timed run, (cells, rounds)")
        f.attrs.update({"device": device, "repeats": repeats, "complete": timings.seconds.shape[1] >= repeats})
    path.parent.mkdir(parents=True, exist_ok=True)
    store.replace_atomically(path, fill)


def _read(path: Path, cells: list[cost.Cell]) -> tuple[cost.Timings, bool] | None:
    """The series kept at ``path`` for exactly these cells (and whether it is complete); None if there is none
    or it does not read back whole."""
    try:
        data, attrs, _ = store.checked_read(path)
    except (FileNotFoundError, store.DamagedFile):
        return None
    methods = [m.decode() if isinstance(m, bytes) else str(m) for m in data["method"]]
    if methods != [c.method for c in cells] or not np.array_equal(data["dt"], [c.dt for c in cells]):
        return None
    return cost.Timings(np.asarray(data["first_call_s"], float), np.asarray(data["seconds"], float)), bool(attrs["complete"])


def measure(studies: Mapping[str, tuple], study_hashes: Mapping[str, str], paths: int, repeats: int, root,
            cache: str = "reuse", log: Callable[[str], None] = print) -> tuple[dict[str, MethodCost], Path, bool]:
    """Every study's cost per step size: ``studies`` maps a method (run id) to (system, integrator, its settled
    ConvergencePlan). Kept under ``root``; reused (``cache`` reuse or refresh_stale) when it is the same
    series. (costs by method, the file, whether it was reused whole)."""
    from sgi_run.engine import device

    path = Path(root) / "work_precision" / series_key(study_hashes, paths, repeats) / FILE_NAME
    cells = [c for method, (system, integrator, plan) in studies.items()
             for c in cost.cells_of(method, system, integrator, plan, paths)]
    kept = _read(path, cells) if cache != "off" else None
    reused = kept is not None and kept[1]
    if reused:
        timings = kept[0]
    else:
        log(f"timing {len(studies)} methods at {len(cells)} step sizes in all, {paths} paths, {repeats} repeats"
            + (f" (resuming after round {kept[0].seconds.shape[1]})" if kept else "") + f": {path}")
        where = device.describe()
        timings = cost.measure(cells, repeats, kept[0] if kept else None,
                               on_round=lambda t: _write(path, cells, t, repeats, where), log=log)
    return _by_method(cells, timings, device.describe()), path, reused


def _by_method(cells: list[cost.Cell], timings: cost.Timings, device: str) -> dict[str, MethodCost]:
    out = {}
    for method in dict.fromkeys(c.method for c in cells):
        rows = [i for i, c in enumerate(cells) if c.method == method]
        out[method] = MethodCost(np.array([cells[i].dt for i in rows]), cells[rows[0]].plan.paths,
                                 np.array([cells[i].plan.steps for i in rows]), timings.first_call_s[rows],
                                 timings.seconds[rows], device)
    return out


def cost_columns(method_cost: MethodCost, j: int) -> dict:
    """A table row's cost of one method at its ``j``-th timed step size: the median, fastest and slowest repeat per
    path, path-steps per second, the first call, and what was timed where."""
    low, high = method_cost.per_path_range_s
    return {"seconds_per_path": float(method_cost.per_path_s[j]), "seconds_per_path_low": float(low[j]),
            "seconds_per_path_high": float(high[j]), "path_steps_per_s": float(method_cost.path_steps_per_s[j]),
            "first_call_s": float(method_cost.first_call_s[j]), "timed_paths": method_cost.paths,
            "repeats": int(method_cost.seconds.shape[1]), "device": method_cost.device}


def rows(method: str, label: str, result, method_cost: MethodCost) -> list[dict]:
    """The work-precision table's rows of one method: per step size its error ± SE (the study's), its cost
    (``cost_columns``) and the largest drift of each declared invariant."""
    return [{"run": method, "label": label, "dt": float(dt), "error": float(result.error[i]), "se": float(result.se[i]),
             "resolvable": bool(result.resolvable[i])} | cost_columns(method_cost, j) | drift_cells(result, i)
            for i, (dt, j) in enumerate(zip(result.dts, method_cost.at(result.dts)))]


def cheapest(rows: list[dict]) -> list[dict]:
    """Which method reaches an error most cheaply: for the errors 1, 2 and 5 x 10^k between the smallest and the
    largest error measured, each method's wall time per path at that error, interpolated log-log between its
    two step sizes whose errors bracket it; a method already below the error at its coarsest step size costs at
    most that step size's time (``at_most``); one that never gets down to it is left out. The cheapest
    (``method``, ``seconds_per_path``, ``at_most``) and the next cheapest's cost as a ratio (``runner_up``,
    ``ratio``), where at least two methods reach the error and no method but the cheapest has only a bound.
    Only resolvable errors count."""
    curves = {}
    for row in rows:
        if row["resolvable"] and row["error"] > 0 and row["seconds_per_path"] > 0:
            curves.setdefault(row["label"], []).append((abs(row["error"]), row["seconds_per_path"]))
    curves = {m: sorted(points) for m, points in curves.items() if len(points) >= 2}
    if len(curves) < 2:
        return []
    low = min(p[0][0] for p in curves.values())
    high = max(p[-1][0] for p in curves.values())
    targets = [m * 10.0**k for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
               for m in (1, 2, 5) if low <= m * 10.0**k <= high]
    out = []
    for target in targets:
        costs = {}
        for method, points in curves.items():
            errors, seconds = np.log([e for e, _ in points]), np.log([s for _, s in points])
            if errors[0] <= math.log(target) <= errors[-1]:
                costs[method] = (float(np.exp(np.interp(math.log(target), errors, seconds))), False)
            elif math.log(target) > errors[-1]:          # below the target at its coarsest step already
                costs[method] = (float(np.exp(seconds[-1])), True)
        ranked = sorted(costs, key=lambda m: costs[m][0])
        # Another method's cost known only as a bound (it could be cheaper at a step size not run): undecided.
        if len(costs) >= 2 and not any(costs[m][1] for m in ranked[1:]):
            out.append({"error": target, "method": ranked[0], "seconds_per_path": costs[ranked[0]][0],
                        "at_most": costs[ranked[0]][1], "runner_up": ranked[1],
                        "ratio": costs[ranked[1]][0] / costs[ranked[0]][0]})
    return out
