"""The benchmark suite (``sgi-bench``): every integrator on every system it fits.

``suite`` reads its definition (``conf/bench/suite.yaml``), ``cells`` decides which pairs fit and what a system's
noise class and quadratic invariants are, ``run`` runs each cell's convergence study and each system's timing
series, ``verdicts`` checks the methods' claims (``integrators.claims``), ``results`` writes the results files,
``plots`` the work-precision diagrams and ``pages`` the documentation site's pages; ``cli`` is the command.
"""
