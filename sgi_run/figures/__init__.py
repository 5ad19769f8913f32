"""Paper figures: experiment files, the runs they name, plots, tables, acceptance checks, gallery.

The orchestration layer (DESIGN.md "Figures"): it uses config, runner and store; nothing imports it.
``sgi-figures`` (``sgi_run.figures.cli``) is its command line.
"""
