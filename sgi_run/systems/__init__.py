"""Systems: pure JAX physics. ``SYSTEMS`` maps the config name (``system.name``) to its class."""
from sgi_run.systems.base import CanonicalSystem
from sgi_run.systems.kubo import Kubo

SYSTEMS: dict[str, type[CanonicalSystem]] = {
    "kubo": Kubo,
}

__all__ = ["SYSTEMS", "CanonicalSystem", "Kubo"]
