"""The run cache: a run directory holds the finished result of exactly one config.

A finished file (``ensemble.h5``, ``convergence.h5``) is reused only when

- its config hash is the one asked for (a directory holding another config's result is refused,
  never shown as this config's numbers),
- it reads back whole, checksums verified (a damaged file is moved aside and recomputed), and
- the ``cache`` policy allows it: ``reuse`` (a run computed by other numerics code, with a warning),
  ``refresh_stale`` (only runs computed by this numerics code), ``off`` (never).

One process at a time computes in a run directory: ``locked`` holds a lock file there (gone when the
lock is released), and a second process asking for the same run waits, then finds the finished file. A
directory that cannot be written is refused before compute, unless it already holds the finished result,
which is then shown without writing anything.
"""
from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import os
import secrets
import sys
import time
from pathlib import Path
from typing import Any
from collections.abc import Callable

from sgi_run import store
from sgi_run.core.errors import ConfigError
from sgi_run.engine.checkpoint import DamagedCheckpoint, ShardStore

LOCK_NAME = ".lock"


def warn(message: str) -> None:
    print(f"sgi-run: warning: {message}", file=sys.stderr, flush=True)


@dataclasses.dataclass
class Cached:
    value: Any     # what the loader returned
    stale: bool    # computed by other numerics code (provenance.code_digest)


def set_aside(path: Path, reason: str, into: Path | None = None) -> None:
    """Move a damaged file out of the cache's way (kept for inspection, never read again), beside it
    or ``into`` another directory."""
    reason = reason.removeprefix(f"{path}: ")     # store.DamagedFile names the file itself
    # Unique: two files set aside within one second (by one process) never overwrite each other.
    aside = (path.parent if into is None else Path(into)) / \
        f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}-{secrets.token_hex(2)}"
    try:
        aside.parent.mkdir(exist_ok=True)
        os.replace(path, aside)
    except OSError as err:      # a read-only place: the file stays, and is still never shown
        warn(f"{path} is damaged ({reason}) and cannot be moved aside ({err.strerror})")
        return
    warn(f"{path} is damaged ({reason}); moved it aside to {aside.name if into is None else aside}; recomputing it")


def _identity(path: Path) -> dict:
    """The stored config hash and code digest; store.DamagedFile when the file's attributes do not read
    back whole (every file sgi-run writes has a config hash)."""
    attrs = store.read_attributes(path)
    if "config_hash" not in attrs:
        raise store.DamagedFile(f"{path}: it has no config_hash attribute")
    return {k: attrs.get(k) for k in ("config_hash", "code_digest")}


def check_identity(path: Path, wanted_hash: str, key: str = "run_dir", value=None) -> dict | None:
    """The stored identity of the finished file at ``path``; None when there is none or it cannot be
    read (a damaged file is set aside). Refuses (ConfigError naming ``key``, the directory and both
    hashes) a file computed for another config."""
    path = Path(path)
    if not path.exists():
        return None
    try:
        identity = _identity(path)     # attributes only: the policy is decided before any data is read
    except store.DamagedFile as err:   # not HDF5, truncated, metadata or attributes that fail their checksums
        set_aside(path, str(err))
        return None
    if identity["config_hash"] != wanted_hash:
        raise ConfigError(key, str(path.parent if value is None else value),
                          f"a directory for config {wanted_hash}: {path.parent} holds the result of config "
                          f"{identity['config_hash']} (choose another directory, or remove that result)")
    return identity


def check_checkpoints(run_dir: Path, wanted_hash: str, key: str = "run_dir", value=None) -> None:
    """Refuse (ConfigError naming ``key``) a run directory whose ``shards/`` holds a checkpoint of another
    config, in any shard layout: resuming would mix two configs' numbers, ``cache=off`` would delete
    it. Only identities are read: a checkpoint damaged elsewhere is the run's to set aside (``ShardStore.check``)."""
    for path in sorted(Path(run_dir, "shards").glob("*.npz")):
        try:
            found = ShardStore.identity_of(path)["config_hash"]
        except DamagedCheckpoint:
            continue
        if found != wanted_hash:
            raise ConfigError(key, str(run_dir if value is None else value),
                              f"a directory for config {wanted_hash}: its checkpoint {path.name} is of config "
                              f"{found or 'unknown'} (choose another directory, or remove its shards/)")


def lookup(path: Path, wanted_hash: str, policy: str, load: Callable[[Path], Any], code: str) -> Cached | None:
    """The finished result at ``path`` if the policy lets it be reused, else None (compute it). ``code``: the
    digest of the numerics code the run would be computed by now (``provenance.code_digest``).

    Raises ConfigError when ``path`` holds the result of another config. ``load`` raises
    ``store.DamagedFile`` for a file that does not read back whole (then it is set aside)."""
    identity = check_identity(path, wanted_hash)
    if identity is None:
        return None
    stale = identity["code_digest"] != code
    if policy == "off" or (policy == "refresh_stale" and stale):
        return None
    try:
        value = load(path)
    except store.DamagedFile as err:
        set_aside(path, str(err))
        return None
    if stale:
        warn(f"{path} was computed by other numerics code (digest {identity['code_digest'] or 'unknown'}, "
             f"now {code}); cache=refresh_stale recomputes it")
    return Cached(value, stale)


def check_writable(directory: Path, key: str, value) -> None:
    """Refuse (ConfigError naming ``key``) a directory that cannot be created or written."""
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise ConfigError(key, str(value), f"a directory sgi-run can write ({err.strerror}: {directory})") from None
    if not os.access(directory, os.W_OK):
        raise ConfigError(key, str(value), f"a directory sgi-run can write (not writable: {directory})")


def writable(directory: Path) -> bool:
    try:
        check_writable(directory, "", "")
        return True
    except ConfigError:
        return False


@contextlib.contextmanager
def locked(directory: Path):
    """Hold the run directory's lock; wait (saying so) while another process holds it. The lock file is there
    only while held: a run, finished or refused, leaves none behind."""
    path = Path(directory) / LOCK_NAME
    fd = _lock(path)
    try:
        yield
    finally:
        path.unlink(missing_ok=True)    # while still held: a process waiting on this file then takes a new one
        os.close(fd)


def _lock(path: Path) -> int:
    """A descriptor of the lock file ``path``, exclusively locked. A file its holder removed while this process
    waited on it locks nothing any more: the one at ``path`` now (created if none) is taken instead."""
    waiting = False
    while True:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except FileNotFoundError:       # its directory went meanwhile (a refused run's, left empty): again
            continue
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                if not waiting:
                    warn(f"another sgi-run is computing in {path.parent}; waiting for it to finish")
                    waiting = True
                fcntl.flock(fd, fcntl.LOCK_EX)
            if _is_at(fd, path):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)


def _is_at(fd: int, path: Path) -> bool:
    try:
        return os.path.samestat(os.fstat(fd), os.stat(path))
    except FileNotFoundError:
        return False
