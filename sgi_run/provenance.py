"""Which numerics code computed a run: a digest of the sources of the layers that make the numbers.

The run cache is keyed by the config hash, so a run computed before a change to an integrator,
a system or the engine would otherwise be served as if the new code had made it. Each
``ensemble.h5`` (and each shard checkpoint) stores the digest of the code that computed it; a cached
run whose digest differs is reported as stale (``sgi_run.cache``; recomputed with ``cache=refresh_stale``).
"""
from __future__ import annotations

import functools
import hashlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# The layers whose code determines a run's numbers (DESIGN.md: core, systems, integrators, engine).
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
