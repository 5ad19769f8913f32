"""Hydra's private API that sgi-run uses (sgi_run/hydra_private.py), against the installed Hydra: a release that
moves or changes one of these fails here, by name, before a user's command line does."""
from hydra.core.config_search_path import ConfigSearchPath
from hydra.types import RunMode

from sgi_run import hydra_private
from sgi_run.bundled import CONF_DIR


def test_the_parser_has_the_flags_sgi_run_reads():
    flags = {name for action in hydra_private.args_parser()._actions for name in action.option_strings}
    assert {"--config-name", "-cn", "--config-path", "-cp", "--config-dir", "-cd", "--multirun", "-m", "--cfg",
            "--resolve", "--package", "--info", "--run", "--shell-completion"} <= flags


def test_the_search_path_starts_at_the_primary_directory_and_the_loader_composes_with_a_hydra_node():
    path = hydra_private.search_path(str(CONF_DIR))
    assert isinstance(path, ConfigSearchPath)
    assert str(CONF_DIR) in [p.path.removeprefix("file://") for p in path.get_path()]   # beside Hydra's own
    loader = hydra_private.loader(path)
    assert isinstance(loader, hydra_private.ConfigLoader)
    assert "kubo" in loader.get_group_options("system")
    cfg = loader.load_configuration("config", overrides=["system=kubo"], run_mode=RunMode.RUN)
    assert cfg.system.name == "kubo" and "hydra" in cfg


def test_a_relative_config_path_resolves_beside_the_task_functions_module():
    def task(cfg):
        return cfg
    # This module is tests.test_hydra_private: Hydra names the directory in its package.
    assert hydra_private.config_path_dir(task, "conf_here") == "pkg://tests/conf_here"
