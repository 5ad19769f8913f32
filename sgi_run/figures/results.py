"""Result types of the acceptance checks: one run's curves (``Series``, ``RunData``), one convergence
study's errors (``StudyData``), the accepted interval (``Band``), what a check kind measures
(``Measurement``) and the verdict (``CheckResult``: PASS, FAIL or SKIP)."""
from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING
from collections.abc import Callable, Mapping

import numpy as np

from sgi_run.core.errors import ConfigError

if TYPE_CHECKING:
    from sgi_run.engine.convergence import ConvergenceResult
    from sgi_run.work_precision import MethodCost

PASS, FAIL, SKIP = "PASS", "FAIL", "SKIP"
# What a run says of its implicit solves, over all its paths and steps.
SOLVER_STATISTICS = {"per_step": "solver iterations per path-step",
                     "max_iterations": "most solver iterations in one step of one path",
                     "unconverged_steps": "path-steps whose solve did not converge",
                     "unconverged_fraction": "fraction of path-steps whose solve did not converge"}


@dataclasses.dataclass(frozen=True)
class Series:
    """One run's E(observable)(t), its MC standard error, and the exact mean on the same times."""
    t: np.ndarray
    mean: np.ndarray
    sem: np.ndarray
    exact: np.ndarray | None = None
    # The numerical method's own exact E and its expected MC standard error at this path count
    # (engine.linear_oracle), for linear systems; None elsewhere.
    oracle_mean: np.ndarray | None = None
    oracle_sem: np.ndarray | None = None
    # Every path's time average over ``average_window`` (plan.time_average), NaN for a path that
    # went non-finite: exact SEs for window averages, and paired differences between runs.
    path_average: np.ndarray | None = None
    average_window: tuple[float, float] | None = None
    # The observable along each kept path (plan.keep_paths), (kept, t): single realisations.
    kept: np.ndarray | None = None

    def index_at(self, t: float | None) -> int | None:
        """Index of output time ``t`` (None: the final time); None when the run has no such time."""
        if t is None:
            return len(self.t) - 1
        hits = np.flatnonzero(np.isclose(self.t, t, rtol=1e-9, atol=1e-9))
        return int(hits[0]) if hits.size else None

    def require_oracle(self, kind: str) -> tuple[np.ndarray, np.ndarray]:
        if self.oracle_mean is None:
            raise ConfigError("checks.kind", kind, "a kind that needs no method oracle (set `oracle:` in the experiment)")
        return self.oracle_mean, self.oracle_sem

    def require_kept(self, kind: str, path: int = 0) -> np.ndarray:
        """The observable along kept path ``path`` (one realisation), over the output times."""
        if self.kept is None or len(self.kept) <= path:
            kept = 0 if self.kept is None else len(self.kept)
            raise ConfigError("checks.path" if self.kept is not None else "plan.keep_paths", kept,
                              f"a kept path for {kind} (path {path}; this run keeps {kept})")
        return np.asarray(self.kept[path], float)

    def require_exact(self, kind: str) -> np.ndarray:
        if self.exact is None:
            raise ConfigError("checks.kind", kind, "a kind that needs no exact reference (this system has none)")
        return self.exact


@dataclasses.dataclass(frozen=True)
class RunData:
    """Everything a check may look at for one run."""
    series: Mapping[str, Series]     # observable name -> its curve
    default: str                     # the experiment's observable
    system: object = None            # the run's system (reference values, exact densities)
    snapshot: Callable[[float | None], Mapping[str, np.ndarray] | None] = lambda t: None  # states at t (None: last)
    paths: int | None = None         # paths of the run
    nonfinite: np.ndarray | None = None  # paths whose state is not finite, per output time
    kept: Mapping[str, np.ndarray] = dataclasses.field(default_factory=dict)  # view -> (kept, t, *shape)
    dt: float | None = None          # the run's step size
    solver: Mapping[str, float] = dataclasses.field(default_factory=dict)  # SOLVER_STATISTICS of an implicit method
    snapshot_times: tuple[float, ...] = ()   # the times the run stored every path's state at (plan.snapshots)
    integrator: object = None        # the run's integrator (what a panel evaluates of its implicit solve)
    increment_bound: float | None = None   # the run's truncation bound on |dW| (plan.truncate; None: untruncated)
    # Quantities derived from the run that several checks and a panel share (e.g. Figure 14's solvability maps),
    # computed once: keyed by what they are of.
    memo: dict = dataclasses.field(default_factory=dict, compare=False, repr=False)

    def output_index(self, t: float | None) -> int | None:
        """Index of output time ``t`` (None: the final time) among the run's output times; None when it has none."""
        return next(iter(self.series.values())).index_at(t)

    def solver_statistic(self, name: str) -> float:
        """One of SOLVER_STATISTICS over the whole run; NaN for a method without a solver."""
        if name not in SOLVER_STATISTICS:
            raise ConfigError("statistic", name, f"one of {list(SOLVER_STATISTICS)}")
        return float(self.solver.get(name, math.nan))

    def curve(self, observable: str | None) -> Series:
        name = observable or self.default
        if name not in self.series:
            raise ConfigError("checks.observable", name, f"an observable the run records: {sorted(self.series)}")
        return self.series[name]

    def kept_view(self, name: str, path: int = 0) -> np.ndarray:
        """A state view (e.g. ``pi``, ``gamma``) along kept path ``path``: (t, *shape)."""
        if name not in self.kept:
            raise ConfigError("view", name, f"a view the run keeps along its paths: {sorted(self.kept)}")
        views = self.kept[name]
        if len(views) <= path:
            raise ConfigError("path", path, f"a kept path (this run keeps {len(views)}: plan.keep_paths)")
        return np.asarray(views[path])

    def reference(self, reference) -> float:
        """A number, or a reference value the system computes: ``"method"`` or ``"method:argument"``
        (e.g. ``ergodic_energy``, ``ergodic_mean:sin4pix``, ``initial_mean:v``)."""
        if reference is None or isinstance(reference, (int, float)):
            return 0.0 if reference is None else float(reference)
        method, _, argument = str(reference).partition(":")
        fn = getattr(self.system, method, None)
        value = None if fn is None else (fn(argument) if argument else fn())
        if value is None:
            raise ConfigError("checks.reference", reference,
                              f"a number or a reference value {type(self.system).__name__} defines here")
        return float(value)

    def diverged_at(self, series: Series, mean_above: float = 1e6) -> float:
        """The first output time where some path is non-finite or |E| (of ``series``, one of this
        run's curves) exceeds ``mean_above`` (the project's rule for Bou-Rabee & Owhadi's (2007) figures: the run is declared diverged
        there); infinity when it never is."""
        nonfinite = self.nonfinite if self.nonfinite is not None else np.zeros(len(series.t), int)
        with np.errstate(invalid="ignore"):
            flagged = (nonfinite > 0) | ~(np.abs(series.mean) <= mean_above)
        return float(series.t[np.argmax(flagged)]) if flagged.any() else math.inf

    def state(self, t: float | None, path: int = 0):
        """Path ``path``'s whole state at snapshot time ``t`` (None: the last snapshot), as the system's
        space holds it (``space.from_leaves``: one array for a bare space), or None when the run stored no
        snapshot at ``t``."""
        snap = self.snapshot(t)
        if snap is None:
            return None
        space = self.system.space
        missing = [leaf.name for leaf in space.leaves if leaf.name not in snap]
        if missing:
            raise ConfigError("snapshot", missing[0], f"a leaf of the state among the snapshot's views: {sorted(snap)}")
        count = len(snap[space.leaves[0].name])
        if not 0 <= path < count:
            raise ConfigError("path", path, f"a path of the run's snapshots (it stored {count})")
        return space.from_leaves({leaf.name: np.asarray(snap[leaf.name][path]) for leaf in space.leaves})

    def samples(self, coordinate: str, t: float | None) -> np.ndarray | None:
        snap = self.snapshot(t)
        if snap is not None and coordinate not in snap:
            raise ConfigError("checks.coordinate", coordinate, f"a state coordinate: {sorted(snap)}")
        return None if snap is None else snap[coordinate]


def as_run_data(x) -> RunData:
    return x if isinstance(x, RunData) else RunData({"": x}, "")


@dataclasses.dataclass(frozen=True)
class StudyData:
    """One convergence study (a run with ``plan=convergence``): its errors against the step size, their
    Monte Carlo SEs and the fitted order (``result``), and what the errors are of."""
    result: ConvergenceResult
    observable: str = "state"    # a weak study's observable; "state" for a strong one
    T: float = math.nan          # the time the errors are measured at
    cost: MethodCost | None = None   # its step sizes' timings, when a work-precision panel draws it

    @property
    def paths(self) -> int:
        return self.result.paths


@dataclasses.dataclass(frozen=True)
class Band:
    """The accepted interval; either end may be open (None)."""
    lo: float | None = None
    hi: float | None = None

    def contains(self, x: float) -> bool:
        # NaN (a mean over no finite paths) is never inside; +-inf can be, past an open end.
        return not math.isnan(x) and (self.lo is None or x >= self.lo) and (self.hi is None or x <= self.hi)

    def margin(self, x: float) -> float:
        """Signed distance to the nearest end: positive inside, negative outside."""
        ends = [x - self.lo] if self.lo is not None else []
        ends += [self.hi - x] if self.hi is not None else []
        return min(ends) if ends else math.inf

    def digits(self) -> int:
        """Significant digits the band (and the value judged by it) is shown with: 4, or as many as the ends were
        given with (up to 10), so that [1.41420, 1.41426] does not read "[1.414, 1.414]"; ends computed to more
        digits than that: as many as tell them apart."""
        ends = [x for x in (self.lo, self.hi) if x is not None and math.isfinite(x)]
        exact = next((d for d in range(4, 11) if all(float(f"{x:.{d}g}") == x for x in ends)), None)
        if exact is not None or len(ends) < 2:
            return exact or 4
        return next((d for d in range(4, 16) if f"{ends[0]:.{d}g}" != f"{ends[1]:.{d}g}"), 16)

    def __str__(self) -> str:
        d = self.digits()
        if self.lo is not None and self.hi is not None:
            return f"[{self.lo:.{d}g}, {self.hi:.{d}g}]"
        if self.lo is not None:
            return f">= {self.lo:.{d}g}"
        return f"<= {self.hi:.{d}g}" if self.hi is not None else "any"


@dataclasses.dataclass(frozen=True)
class Measurement:
    value: float
    se: float | None          # MC standard error of value; None when value is already in SE units
    t: float | None           # the output time the value refers to (None: all times)
    band: Band
    detail: str = ""
    skipped: str = ""         # why the check could not be evaluated on this run
    # What the value is ("p", "E/exact") and its unit ("SE", "paths"), where they depend on the check's
    # parameters; None: the kind's (``check_kind(quantity=..., unit=...)``).
    quantity: str | None = None
    unit: str | None = None


@dataclasses.dataclass(frozen=True)
class CheckResult:
    id: str
    kind: str
    run: str
    criterion: str
    verdict: str
    value: float
    se: float | None
    t: float | None
    band: str
    margin_se: float | None   # (distance inside the band) / se; None when se is absent or zero
    detail: str
    digits: int = 4           # significant digits the value is shown with: as many as tell the band's ends apart
    quantity: str = ""        # what the value is, shown before it: "p", "E/exact" (records before it: none)
    unit: str = ""            # its unit, shown after it: "SE", "paths"
    # Holds by how the run is set up (a path starts at its initial value; a path selected by a rule, then
    # checked against that rule): still judged (a FAIL is a bug), but counted apart from the other verdicts.
    by_construction: bool = False

    @classmethod
    def from_record(cls, check: dict) -> CheckResult:
        """A check as a figure's record keeps it (``as_dict``), its keys that are no field of this version left out."""
        return cls(**{k: v for k, v in check.items() if k in _CHECK_FIELDS})

    def __post_init__(self):
        # A record stores a non-finite value as null (strict JSON): read back, it is the NaN it stood for.
        if self.value is None:
            object.__setattr__(self, "value", math.nan)

    def measured(self) -> str:
        """What the value is, the value, its SE, its unit, the time and the band, as text (or why the check was
        skipped): "p = 0.9056 at t=0 (band >= 0.001)", "0.2759 SE at t=0 (band <= 4)"."""
        if self.verdict == SKIP:
            return self.detail
        value = (f"{self.quantity} = " if self.quantity else "") + f"{self.value:.{self.digits}g}"
        value += (f" ± {self.se:.2g}" if self.se is not None else "") + (f" {self.unit}" if self.unit else "")
        at = f" at t={self.t:g}" if self.t is not None else ""
        margin = f"; {self.margin_se:+.1f} SE from the band's edge" if self.margin_se is not None else ""
        extra = f"; {self.detail}" if self.detail else ""
        return f"{value}{at} (band {self.band}{margin}{extra})"

    def line(self) -> str:
        """One line for the verdict file: ``PASS  id [run]: value ± se at t=... (band ...)``."""
        return f"{self.verdict}  {self.id} [{self.run}]: {self.measured()}"

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


_CHECK_FIELDS = frozenset(f.name for f in dataclasses.fields(CheckResult))


BY_CONSTRUCTION = "by construction"


def verdict_counts(checks) -> dict[str, int]:
    """PASS, FAIL and SKIP counted over the checks that do not hold by construction, and how many do
    (``BY_CONSTRUCTION``) and how many of those FAILed (``"by construction FAIL"``). ``checks``: CheckResults or
    a record's check dicts (records written before the key have none by construction)."""
    as_dict = [c if isinstance(c, Mapping) else c.as_dict() for c in checks]
    apart = [c for c in as_dict if c.get("by_construction")]
    counts = {v: sum(c["verdict"] == v for c in as_dict if not c.get("by_construction")) for v in (PASS, FAIL, SKIP)}
    return {**counts, BY_CONSTRUCTION: len(apart), f"{BY_CONSTRUCTION} {FAIL}": sum(c["verdict"] == FAIL for c in apart)}


def counts_text(counts: Mapping[str, int]) -> str:
    """"12 PASS, 0 FAIL, 3 SKIP; 5 by construction" (with how many of those FAILed, when any did)."""
    text = ", ".join(f"{counts[v]} {v}" for v in (PASS, FAIL, SKIP))
    apart, failed = counts.get(BY_CONSTRUCTION, 0), counts.get(f"{BY_CONSTRUCTION} {FAIL}", 0)
    return text + (f"; {apart} {BY_CONSTRUCTION}" + (f" ({failed} FAIL)" if failed else "") if apart else "")
