"""Which numerics code computed a run: a digest of the sources of the layers that make the numbers.

The run cache is keyed by the config hash, so a run computed before a change to an integrator,
a system or the engine would otherwise be served as if the new code had made it. Each
``ensemble.h5`` (and each shard checkpoint) stores the digest of the code that computed it; a cached
run whose digest differs is reported as stale (``sgi_run.cache``; recomputed with ``cache=refresh_stale``).
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import os
import subprocess
import sys
from sgi_run import bundled
from sgi_run.version import __version__

PACKAGE = bundled.PACKAGE
# A copy of the repository shipped elsewhere (a remote GPU machine gets the working tree, and at most a .git of
# some other commit) names the commit it was copied from here: ``SGI_RUN_COMMIT=$(git rev-parse HEAD)`` in the
# command that ships it. Where set it wins over the copy's own git.
COMMIT_VARIABLE = "SGI_RUN_COMMIT"
# The layers whose code determines a run's numbers (docs/architecture.md: core, systems, integrators, engine).
NUMERICS_LAYERS = ("core", "systems", "integrators", "engine")


@functools.lru_cache(maxsize=1)
def code_digest() -> str:
    """sha256 over the numerics layers' Python sources (relative path and content), 12 hex digits."""
    h = hashlib.sha256()
    for layer in NUMERICS_LAYERS:
        for source in sorted((PACKAGE / layer).rglob("*.py")):
            h.update(source.relative_to(PACKAGE).as_posix().encode())
            h.update(source.read_bytes())
    return h.hexdigest()[:12]


def class_digest(cls: type) -> str:
    """12 hex digits of the code of a system class of one's own (``systems.register``), which ``code_digest``
    does not cover: the source of the module that defines it (its helpers too), else the class's own source (a
    notebook's cell), else its methods' compiled code (a class typed into a plain interpreter). A run of that
    class is reused from the cache only while this is the same."""
    for source in (lambda: inspect.getsource(sys.modules[cls.__module__]), lambda: inspect.getsource(cls)):
        try:
            return hashlib.sha256(source().encode()).hexdigest()[:12]
        except (OSError, TypeError, KeyError):
            continue
    codes = sorted((name, value.__code__.co_code, repr(value.__code__.co_consts)) for name, value in vars(cls).items()
                   if hasattr(value, "__code__"))
    return hashlib.sha256(repr(codes).encode()).hexdigest()[:12]


def source_commit() -> dict:
    """The sgi-run commit this code is: ``{"commit": sha or None, "uncommitted_changes": bool or None}``.
    From ``$SGI_RUN_COMMIT`` where set (changes then unknown: None); else from git where the package sits in a
    checkout. ``uncommitted_changes`` counts the package and its configs only (what makes and describes the
    numbers). An installed package has no commit of its own (its version names it): git is not asked, since the
    directory it is installed in may sit in some other repository, whose commit it would name."""
    if os.environ.get(COMMIT_VARIABLE):
        return {"commit": os.environ[COMMIT_VARIABLE], "uncommitted_changes": None}
    if not bundled.in_checkout():
        return {"commit": None, "uncommitted_changes": None, "installed": __version__}

    def git(*args):
        try:
            done = subprocess.run(["git", *args], cwd=PACKAGE.parent, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.SubprocessError):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "HEAD")
    changes = git("status", "--porcelain", "--", "sgi_run", "conf", "experiments") if commit else ""
    return {"commit": commit or None, "uncommitted_changes": bool(changes) if commit else None}


def commit_text(version: dict) -> str:
    """A ``source_commit()`` as a report names it: "sgi-run commit 0d021ed1c2a4 (with uncommitted changes)"."""
    if version.get("installed"):
        return f"sgi-run {version['installed']} (an installed package)"
    changes = {True: " (with uncommitted changes to sgi_run/, conf/ or experiments/)", False: "",
               None: " (a shipped copy: uncommitted changes unknown)"}[version.get("uncommitted_changes")]
    return f"sgi-run commit {(version.get('commit') or 'unknown')[:12]}{changes}"
