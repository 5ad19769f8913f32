"""Lowest layer: random variables, nonlinear solvers, float64 set-up. Pure JAX."""
import jax

# Every number in sgi-run is float64: set once, before any array is made.
jax.config.update("jax_enable_x64", True)
