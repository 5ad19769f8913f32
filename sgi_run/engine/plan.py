"""The sampling plan as the engine sees it: validated numbers, the output grid, the shard layout."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import ClassVar

import numpy as np

from sgi_run.core import noise
from sgi_run.core.errors import ConfigError, require
from sgi_run.core.fields import auto_or, integer, is_integer, is_real, list_of, real

# A ratio within this relative distance of an integer counts as that integer (round-off of dt).
_GRID_RTOL = 1e-9
# Random numbers are addressed by 32-bit path and fine-step indices (jax.random.fold_in): beyond
# these, two paths or two steps would share their random numbers.
MAX_INDEX = 2**32


def _ratio(num: float, den: float) -> float:
    """num / den, inf where it overflows (dt = 1e-320): a step count to compare, never an error."""
    with np.errstate(over="ignore", divide="ignore"):
        return float(np.float64(num) / np.float64(den))


def _whole_ratio(num: float, den: float) -> int | None:
    ratio = _ratio(num, den)
    if not math.isfinite(ratio):
        return None
    n = round(ratio)
    return n if n >= 1 and abs(ratio - n) <= _GRID_RTOL * max(1.0, ratio) else None


# Defaults that adapt to the values a user typed (``auto`` in conf/plan/default.yaml), so that a default
# never contradicts them: ``plan.paths=5`` keeps 5 paths, ``plan.T=0.5`` records at 0 and 0.5.
DEFAULT_KEEP_PATHS = 10
DEFAULT_OUTPUT_DT = 1.0


def check_sharding(plan) -> None:
    """``plan.shards`` and ``plan.shard_size``, checked alike for an ensemble and a convergence study."""
    auto_or(integer, "plan.shards", plan.shards, f"'auto' or an integer in [1, paths = {plan.paths}]",
            at_least=1, at_most=plan.paths)
    auto_or(integer, "plan.shard_size", plan.shard_size,
            "'auto' (chosen for the device: engine.device) or an integer >= 1", at_least=1)


def check_truncate(truncate, allowed: str, rule_allowed: bool = True) -> None:
    """``plan.truncate``: null, a bound on |dW| (a number > 0) or a rule's name (where ``rule_allowed``)."""
    if truncate is None or (rule_allowed and truncate in noise.TRUNCATION_RULES):
        return
    real("plan.truncate", truncate, allowed, above=0)


def auto_keep_paths(paths):
    """``keep_paths: auto``: DEFAULT_KEEP_PATHS paths, or all of them when there are fewer ('auto' while
    paths is not a number: the paths check refuses that)."""
    return min(DEFAULT_KEEP_PATHS, paths) if is_integer(paths) else "auto"


def auto_output_dt(dt, T):
    """``output_dt: auto``: DEFAULT_OUTPUT_DT where it is on the grid (a whole multiple of dt dividing T),
    else the largest whole number of steps not above it that divides T's steps ('auto' while dt and T are
    not a grid: their own checks refuse that)."""
    steps = _whole_ratio(T, dt) if is_real(dt) and is_real(T) and dt > 0 and T > 0 else None
    if steps is None or steps >= MAX_INDEX:
        return "auto"
    if _whole_ratio(DEFAULT_OUTPUT_DT, dt) is not None and _whole_ratio(T, DEFAULT_OUTPUT_DT) is not None:
        return DEFAULT_OUTPUT_DT
    most = max(1, round(_ratio(DEFAULT_OUTPUT_DT, dt))) if _ratio(DEFAULT_OUTPUT_DT, dt) < MAX_INDEX else steps
    divisors = {d for i in range(1, math.isqrt(steps) + 1) if steps % i == 0 for d in (i, steps // i)}
    return max(d for d in divisors if d <= most) * float(dt)


def resolve_auto_keys(plan: dict) -> dict:
    """An ensemble plan's mapping with its ``auto`` keep_paths and output_dt settled (the config hash
    hashes these numbers, so runs made when the plan file spelled 10 and 1.0 keep their hash)."""
    settled = dict(plan)
    if settled.get("keep_paths") == "auto":
        settled["keep_paths"] = auto_keep_paths(settled.get("paths"))
    if settled.get("output_dt") == "auto":
        settled["output_dt"] = auto_output_dt(settled.get("dt"), settled.get("T"))
    return settled


@dataclasses.dataclass(frozen=True)
class Plan:
    paths: int
    dt: float
    T: float
    output_dt: float | str                 # "auto": settled on the grid (auto_output_dt)
    observables: tuple[str, ...] = ("H",)
    keep_paths: int | str = 0              # "auto": settled to min(DEFAULT_KEEP_PATHS, paths)
    seed: int = 0
    shards: int | str = "auto"
    shard_size: int | str = 10000    # "auto": settled for the device (budget.fit_to_memory)
    brownian_refine: int = 1
    truncate: float | str | None = None      # null, a bound on |dW|, or a rule (core.noise: log_dt)
    snapshots: tuple[float, ...] = ()   # output times at which every path's whole state is stored
    # [start, end]: every path's average of each observable over the output times in that window
    # (per-path time averages: exact standard errors of a plateau, paired differences between runs).
    time_average: tuple[float, float] | None = None
    # A shard saves its progress every this many output times (0: only when it finishes), so that a
    # long path resumes mid-way after an interruption.
    checkpoint_every: int = 0

    def __post_init__(self):
        for key, optional in (("observables", False), ("snapshots", True), ("time_average", True)):
            value = getattr(self, key)
            if not isinstance(value, (list, tuple)) and not (optional and value is None):
                raise ConfigError(f"plan.{key}", value, "a list" + (" or null" if optional else ""))
        object.__setattr__(self, "observables", tuple(self.observables))
        object.__setattr__(self, "snapshots", tuple(self.snapshots or ()))
        if self.time_average is not None:
            object.__setattr__(self, "time_average", tuple(self.time_average))
        for key, value in resolve_auto_keys({"keep_paths": self.keep_paths, "paths": self.paths,
                                           "output_dt": self.output_dt, "dt": self.dt, "T": self.T}).items():
            object.__setattr__(self, key, value)
        self.check()

    def check(self) -> None:
        integer("plan.paths", self.paths, "an integer in [1, 2^32) (paths are addressed by 32-bit indices)",
                at_least=1, below=MAX_INDEX)
        real("plan.dt", self.dt, "a number > 0", above=0)
        real("plan.T", self.T, "a number > 0", above=0)
        integer("plan.brownian_refine", self.brownian_refine, "an integer >= 1", at_least=1)
        steps = _ratio(self.T, self.dt)
        require("plan.dt", self.dt, steps * self.brownian_refine < MAX_INDEX,
                f"at least plan.T / 2^32 = {self.T / (MAX_INDEX / self.brownian_refine):.3g}, or a smaller plan.T or "
                f"plan.brownian_refine (steps "
                f"are addressed by 32-bit indices; T / dt = {steps:.3g} steps"
                f"{' of ' + str(self.brownian_refine) + ' fine steps' if self.brownian_refine > 1 else ''})")
        require("plan.T", self.T, _whole_ratio(self.T, self.dt) is not None,
                f"a whole multiple of plan.dt = {self.dt} (or a plan.dt that divides it)")
        require("plan.output_dt", self.output_dt, is_real(self.output_dt) and self.output_dt > 0
                and _whole_ratio(self.output_dt, self.dt) is not None, f"a whole multiple of plan.dt = {self.dt}")
        require("plan.output_dt", self.output_dt, _whole_ratio(self.T, self.output_dt) is not None,
                f"a divisor of plan.T = {self.T} (T must be a whole number of output intervals)")
        list_of("plan.observables", self.observables,
                "a non-empty list of distinct observable names (each is one dataset of the run's file)",
                item=lambda name: isinstance(name, str), at_least=1, distinct=True)
        integer("plan.keep_paths", self.keep_paths, f"an integer in [0, paths = {self.paths}]",
                at_least=0, at_most=self.paths)
        integer("plan.seed", self.seed, "an integer in [0, 2^32)", at_least=0, below=2**32)
        check_sharding(self)
        check_truncate(self.truncate, "null (untruncated), a number > 0 (the bound on |dW|) or a rule: "
                       f"{list(noise.TRUNCATION_RULES)}")
        require("plan.truncate", self.truncate, not isinstance(self.truncate, str) or self.dt < 1,
                "a rule with dt < 1 (log_dt bounds |dW| by sqrt(4 |ln dt| dt), 0 at dt = 1), or null or a number")
        integer("plan.checkpoint_every", self.checkpoint_every,
                "an integer >= 0 (output times between a shard's progress checkpoints; 0: none)", at_least=0)
        require("plan.snapshots", self.snapshots,
                all(is_real(t) for t in self.snapshots) and len(set(self.snapshots)) == len(self.snapshots)
                and all(self.output_index(t) is not None for t in self.snapshots),
                f"a list of distinct output times (multiples of output_dt = {self.output_dt} in [0, T = {self.T}])")
        require("plan.time_average", self.time_average, self.time_average is None or (
                len(self.time_average) == 2
                and all(is_real(t) and self.output_index(t) is not None for t in self.time_average)
                and self.time_average[0] <= self.time_average[1]),
                f"null or [start, end]: output times (multiples of output_dt = {self.output_dt} in [0, T = {self.T}]), "
                "start <= end")

    # --- derived grid ------------------------------------------------------------------------
    @property
    def steps(self) -> int:
        return _whole_ratio(self.T, self.dt)

    @property
    def steps_per_output(self) -> int:
        return _whole_ratio(self.output_dt, self.dt)

    @property
    def outputs(self) -> int:
        """Number of output intervals (the grid has outputs + 1 times, t = 0 included)."""
        return self.steps // self.steps_per_output

    @property
    def times(self) -> np.ndarray:
        return np.arange(self.outputs + 1) * self.steps_per_output * self.dt

    def output_index(self, t: float) -> int | None:
        """Index of output time ``t`` on the grid, or None when ``t`` is not one."""
        if t == 0:
            return 0
        i = _whole_ratio(t, self.output_dt) if t > 0 else None
        return i if i is not None and i <= self.outputs else None

    @property
    def snapshot_indices(self) -> list[int]:
        return sorted(self.output_index(t) for t in self.snapshots)

    @property
    def time_average_indices(self) -> range:
        """The output indices averaged per path (empty without ``time_average``)."""
        if self.time_average is None:
            return range(0)
        return range(self.output_index(self.time_average[0]), self.output_index(self.time_average[1]) + 1)

    # --- shard layout: contiguous blocks of path indices --------------------------------------
    @property
    def shard_count(self) -> int:
        if self.shards == "auto" and self.shard_size == "auto":
            raise ValueError("plan.shard_size is 'auto': settle it for the device first (budget.fit_to_memory)")
        return math.ceil(self.paths / self.shard_size) if self.shards == "auto" else int(self.shards)

    @property
    def paths_per_shard(self) -> int:
        return math.ceil(self.paths / self.shard_count)

    def shard_paths(self, shard: int) -> tuple[int, int]:
        """(first path index, number of paths) of a shard."""
        first = shard * self.paths_per_shard
        return first, max(0, min(self.paths_per_shard, self.paths - first))

    # Its name in a refusal, and the bundled plan option (conf/plan/) a plan file of one's own takes its keys from.
    DESCRIBED_AS: ClassVar[str] = "ensemble plan"
    BUNDLED_OPTION: ClassVar[str] = "default"

    @classmethod
    def from_mapping(cls, cfg) -> Plan:
        return read_plan(cls, cfg)


def read_plan(cls, cfg):
    """The plan ``cls`` (``Plan`` or ``ConvergencePlan``) of its config node; a key it does not have is refused, and
    so are keys it needs that are missing (a plan file of one's own that sets only ``paths``), naming the bundled
    option (``cls.BUNDLED_OPTION``) it can take them from."""
    what, bundled = cls.DESCRIBED_AS, cls.BUNDLED_OPTION
    cfg, fields = dict(cfg), dataclasses.fields(cls)
    known = [f.name for f in fields]
    for key, value in cfg.items():
        if key not in known:
            raise ConfigError(f"plan.{key}", value, f"a key of the {what}: {known}")
    missing = [f.name for f in fields if f.name not in cfg and f.default is dataclasses.MISSING]
    if missing:
        raise ConfigError(f"plan.{missing[0]}", None, f"a plan that sets {', '.join(missing)} (keys of the {what} "
                          f"with no default; a plan file takes the keys it does not set from plan={bundled} where it "
                          f"starts with 'defaults: [{bundled}, _self_]')")
    return cls(**{k: (list(v) if isinstance(v, Sequence) and not isinstance(v, str) else v) for k, v in cfg.items()})
