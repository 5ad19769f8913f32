"""Finished shards on disk, so an interrupted run keeps them and a re-run resumes.

One ``.npz`` per shard, written under a temporary name and renamed; the file name carries the
shard layout, so a re-run with another layout never mixes shards of two layouts.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from sgi_run.engine.moments import Moments
from sgi_run.engine.simulate import ShardResult


class ShardStore:
    def __init__(self, directory: Path, shard_count: int):
        self.directory, self.shard_count = Path(directory), shard_count

    def _path(self, shard: int) -> Path:
        return self.directory / f"shard-{shard:05d}-of-{self.shard_count:05d}.npz"

    def finished(self) -> list[int]:
        return [s for s in range(self.shard_count) if self._path(s).exists()]

    def save(self, r: ShardResult) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self._path(r.shard).with_suffix(".partial.npz")
        arrays = {"count": r.moments.count, "mean": r.moments.mean, "m2": r.moments.m2,
                  "nonfinite": r.nonfinite, "newton_iterations": r.newton_iterations,
                  "newton_max": r.newton_max, "meta": np.array([r.shard, r.first_path, r.paths]),
                  "wall_time": np.array(r.wall_time)}
        arrays.update({f"kept/{k}": v for k, v in r.kept.items()})
        if r.snapshots is not None:
            arrays["snapshots"] = r.snapshots
        if r.time_averages is not None:
            arrays["time_averages"] = r.time_averages
        np.savez(tmp, **arrays)
        os.replace(tmp, self._path(r.shard))

    def load(self, shard: int) -> ShardResult:
        with np.load(self._path(shard)) as f:
            shard_, first, paths = (int(x) for x in f["meta"])
            kept = {k.split("/", 1)[1]: f[k] for k in f.files if k.startswith("kept/")}
            return ShardResult(shard_, first, paths, Moments(f["count"], f["mean"], f["m2"]),
                               f["nonfinite"], f["newton_iterations"], f["newton_max"], kept,
                               float(f["wall_time"]), f["snapshots"] if "snapshots" in f.files else None,
                               f["time_averages"] if "time_averages" in f.files else None)

    def clear(self) -> None:
        for s in range(self.shard_count):
            self._path(s).unlink(missing_ok=True)
        if self.directory.exists() and not any(self.directory.iterdir()):
            self.directory.rmdir()
