"""Finished shards on disk, so an interrupted run keeps them and a re-run resumes.

One ``.npz`` per finished shard, written under a unique temporary name and renamed; the file name
carries the shard layout, so a re-run with another layout never mixes shards of two layouts. A shard
still running may also leave its progress (``plan.checkpoint_every``: the state and the statistics
so far, every K output times), so that a single long path resumes mid-way too. Each file records the
identity of the run that computed it (config hash and numerics code digest), so a checkpoint is
resumed only by exactly that run, and a content digest (sha256 of every array, identity included):
``check`` reads a file whole (the zip format's CRC-32 of every array) and checks it against its digest
before a resume trusts it, so a file re-saved with other numbers (a valid ``.npz``) is damaged too.
"""
from __future__ import annotations

import dataclasses
import os
import tempfile
import zipfile
from pathlib import Path

import numpy as np

from sgi_run.engine.moments import Moments
from sgi_run.engine.simulate import ShardResult, SolverCounts
from sgi_run.store import content_digest

IDENTITY_KEYS = ("config_hash", "code_digest")
DIGEST_KEY = "content_digest"     # the member holding the sha256 of every other member


class DamagedCheckpoint(Exception):
    """A shard file that does not read back whole."""


class ShardStore:
    def __init__(self, directory: Path, shard_count: int, identity: dict[str, str] | None = None):
        self.directory, self.shard_count = Path(directory), shard_count
        self.identity = {k: str((identity or {}).get(k, "")) for k in IDENTITY_KEYS}

    def path(self, shard: int) -> Path:
        return self.directory / f"shard-{shard:05d}-of-{self.shard_count:05d}.npz"

    def progress_path(self, shard: int) -> Path:
        return self.directory / f"progress-{shard:05d}-of-{self.shard_count:05d}.npz"

    def finished(self) -> list[int]:
        return [s for s in range(self.shard_count) if self.path(s).exists()]

    def in_progress(self) -> list[int]:
        return [s for s in range(self.shard_count) if self.progress_path(s).exists()]

    def files(self) -> list[Path]:
        """Every checkpoint on disk: finished shards, then shards in progress."""
        return [self.path(s) for s in self.finished()] + [self.progress_path(s) for s in self.in_progress()]

    @staticmethod
    def check(path: Path) -> dict[str, str]:
        """The identity a checkpoint file was computed for, after reading every array of it and checking
        them against its content digest."""
        return _identity(_read(path))

    @staticmethod
    def identity_of(path: Path) -> dict[str, str]:
        """The identity a checkpoint file was computed for, reading its identity alone (the run that resumes
        it reads it whole with ``check``): enough to refuse another config's checkpoints, and cheap."""
        try:
            with np.load(path) as f:
                return _identity({k: f[k] for k in f.files if k.startswith("identity/")})
        except _NPZ_ERRORS as err:
            raise DamagedCheckpoint(f"{type(err).__name__}: {err}") from None

    def save(self, r: ShardResult) -> None:
        arrays = {"count": r.moments.count, "mean": r.moments.mean, "m2": r.moments.m2,
                  "nonfinite": r.nonfinite, "meta": np.array([r.shard, r.first_path, r.paths]),
                  "wall_time": np.array(r.wall_time), "device": np.array(r.device)}
        arrays.update({f"solver/{f.name}": getattr(r.solver, f.name) for f in dataclasses.fields(SolverCounts)})
        arrays.update({f"kept/{k}": v for k, v in r.kept.items()})
        arrays.update({f"snapshots/{k}": v for k, v in r.snapshots.items()})
        for name in ("time_averages", "invariant_drift"):
            if getattr(r, name) is not None:
                arrays[name] = getattr(r, name)
        self._write(self.path(r.shard), arrays)
        self.progress_path(r.shard).unlink(missing_ok=True)

    def save_progress(self, shard: int, arrays: dict[str, np.ndarray]) -> None:
        """A running shard's state and statistics so far (``Simulator.run_shard``'s ``on_progress``)."""
        self._write(self.progress_path(shard), arrays)

    def load_progress(self, shard: int) -> dict[str, np.ndarray] | None:
        if not self.progress_path(shard).exists():
            return None
        return {k: v for k, v in _read(self.progress_path(shard)).items() if not k.startswith("identity/")}

    def _write(self, path: Path, arrays: dict[str, np.ndarray]) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        arrays = arrays | {f"identity/{k}": np.array(v) for k, v in self.identity.items()}
        arrays[DIGEST_KEY] = np.array(content_digest(arrays))
        # A unique temporary name: a second process (or a leftover of a killed one) never shares it.
        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=path.name + ".", suffix=".partial")
        try:
            with os.fdopen(fd, "wb") as f:
                np.savez(f, **arrays)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def load(self, shard: int) -> ShardResult:
        f = _read(self.path(shard))
        shard_, first, paths = (int(x) for x in f["meta"])
        group = lambda prefix: {k.split("/", 1)[1]: v for k, v in f.items() if k.startswith(prefix + "/")}
        return ShardResult(shard_, first, paths, Moments(f["count"], f["mean"], f["m2"]),
                           f["nonfinite"], SolverCounts(**group("solver")), group("kept"),
                           float(f["wall_time"]), group("snapshots"), f.get("time_averages"),
                           str(f["device"]) if "device" in f else "", f.get("invariant_drift"))

    def clear(self) -> None:
        for s in range(self.shard_count):
            self.path(s).unlink(missing_ok=True)
            self.progress_path(s).unlink(missing_ok=True)
        if self.directory.exists() and not any(self.directory.iterdir()):
            self.directory.rmdir()


# What numpy raises for a file that is not a whole .npz of plain arrays.
_NPZ_ERRORS = (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile)


def _read(path: Path) -> dict[str, np.ndarray]:
    """Every array of a checkpoint file but its digest (reading each verifies its CRC-32), checked against
    the file's content digest; DamagedCheckpoint when the file does not read back whole or has changed."""
    try:
        with np.load(path) as f:
            arrays = {name: f[name] for name in f.files}
    except _NPZ_ERRORS as err:
        raise DamagedCheckpoint(f"{type(err).__name__}: {err}") from None
    stored = arrays.pop(DIGEST_KEY, None)
    if stored is None:
        raise DamagedCheckpoint("it has no content digest")
    if str(stored) != content_digest(arrays):
        raise DamagedCheckpoint("content digest mismatch (an array changed after the file was written)")
    return arrays


def _identity(arrays: dict[str, np.ndarray]) -> dict[str, str]:
    """A checkpoint's identity (IDENTITY_KEYS; "" where one is missing)."""
    return {k: str(arrays[f"identity/{k}"]) if f"identity/{k}" in arrays else "" for k in IDENTITY_KEYS}
