"""Lowest layer: random variables, nonlinear solvers, JAX's settings (``jax_setup``). Pure JAX.

Importing it sets nothing: ``jax_setup.configure()`` (a process sgi-run owns) and ``jax_setup.scope()``
(one call in a caller's process) turn float64 on."""
