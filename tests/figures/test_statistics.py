"""Statistics shared by checks and plots: histogram densities and bin averages."""
import numpy as np

from sgi_run.figures.statistics import bin_averages, histogram_density


def test_histogram_density_counts_escaped_mass_as_a_deficit():
    edges, density = histogram_density(np.array([0.1, 0.2, 5.0, np.nan]), 2, 0.0, 1.0)
    assert np.allclose(density * np.diff(edges), [2 / 3, 0.0])
    assert np.allclose(bin_averages(lambda x: 2 * x, np.array([0.0, 0.5, 1.0])), [0.5, 1.5])
