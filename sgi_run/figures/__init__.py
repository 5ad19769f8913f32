"""Paper figures: experiment files, the runs they name, plots, tables, acceptance checks, gallery.

The orchestration layer (docs/architecture.md): it uses config, runner and store; nothing imports it.
``sgi-figures`` (``sgi_run.figures.cli``) is its command line.
"""
