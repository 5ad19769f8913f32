"""Which numerics code computed a run: a digest of the sources of the layers that make the numbers.

The run cache is keyed by the config hash, so a run computed before a change to an integrator,
a system or the engine would otherwise be served as if the new code had made it. Each
``ensemble.h5`` stores the digest of the code that computed it; a cached run whose digest differs
is reported as stale (and recomputed with ``cache=refresh_stale``).
"""
from __future__ import annotations

import functools
import hashlib
import sys
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


def cache_decision(path: Path, stored_digest: str | None, policy: str) -> tuple[bool, bool]:
    """(reuse the finished run at ``path``?, was it computed by other numerics code?) under the
    ``cache`` policy: ``reuse`` always (warning on stderr when stale), ``refresh_stale`` when current,
    ``off`` never. A run without a digest predates this record: it counts as stale."""
    stale = stored_digest != code_digest()
    reuse = policy == "reuse" or (policy == "refresh_stale" and not stale)
    if reuse and stale:
        print(f"sgi-run: warning: {path} was computed by other numerics code (digest {stored_digest or 'unknown'}, "
              f"now {code_digest()}); cache=refresh_stale recomputes it", file=sys.stderr)
    return reuse, stale
