"""The parts of Hydra's private API (``hydra._internal``) sgi-run uses, all here, each with why no public API does.

sgi-run validates a command line before ``hydra.main`` runs it, so it composes the same config Hydra will:
the same flags, the same search path, the same loader. Hydra 1.3 exposes none of these publicly
(``hydra.compose`` needs ``initialize`` and composes without ``--config-dir`` or a job's hydra node). Each name
below is tested against the installed Hydra (``tests/test_hydra_private.py``): a Hydra release that moves or
changes one fails that test by name, not a user's run.
"""
from __future__ import annotations

import argparse
from collections.abc import Callable

from hydra._internal import utils as _utils
from hydra._internal.config_loader_impl import ConfigLoaderImpl as ConfigLoader   # loads with a hydra node
from hydra.core.config_search_path import ConfigSearchPath


def args_parser() -> argparse.ArgumentParser:
    """The parser ``hydra.main`` reads the command line with: its flags and what each takes."""
    return _utils.get_args_parser()


def search_path(primary: str) -> ConfigSearchPath:
    """The config search path ``hydra.main`` builds for a primary config directory (plugins' paths included)."""
    return _utils.create_config_search_path(primary)


def config_path_dir(task_function: Callable, config_path: str) -> str:
    """Where ``hydra.main`` resolves a ``--config-path`` given relative to the task function's module."""
    return _utils.compute_search_path_dir(*_utils.detect_calling_file_or_module_from_task_function(task_function),
                                          config_path)


def loader(config_search_path: ConfigSearchPath) -> ConfigLoader:
    """Hydra's own config loader over ``config_search_path``: it composes a job's config with its hydra node."""
    return ConfigLoader(config_search_path=config_search_path)


__all__ = ["ConfigLoader", "args_parser", "config_path_dir", "loader", "search_path"]
