"""Whole-state fields a figure draws or measures from a run's stored snapshots: Zeitlin's vorticity on a
latitude-longitude grid, its spectra and quflow coefficients.

A run never computes with these, so they live outside the numerics layers the code digest reads
(``provenance.NUMERICS_LAYERS``): changing how a figure renders a state leaves every cached run fresh.
A system's module here registers its functions by the name the figures ask for (``field_method``):
``render_field(state, n_lat, n_lon) -> (values (n_lat, n_lon), lat, lon)`` (field panels) and
``enstrophy_spectrum(state) -> (S_l, E_l)`` (the ``spectrum_fraction`` check).
"""
from sgi_run.figures.fields import zeitlin  # noqa: F401  (it registers Zeitlin's methods)
from sgi_run.figures.fields.registry import FIELD_METHODS, field_method, method_of

__all__ = ["FIELD_METHODS", "field_method", "method_of"]
