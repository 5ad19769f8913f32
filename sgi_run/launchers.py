"""A sweep's launcher (``hydra/launcher=joblib``, ``submitit_slurm``, conf/'s ``slurm_sweep``) set up as it sets
itself up when the sweep starts, short of starting a job: a value it refuses (joblib's ``n_jobs=0``, a SLURM
launcher on a machine without ``srun``) is one ConfigError line before the first job computes, not the
traceback it raises once Hydra has begun the sweep."""
from __future__ import annotations

import tempfile

from hydra.utils import get_class
from omegaconf import DictConfig, OmegaConf

from sgi_run.core.errors import ConfigError


def check_launcher(launcher: DictConfig, defaults: DictConfig, choice: str) -> None:
    """Refuse Hydra's ``hydra.launcher`` node as the command line set it where its set-up fails: the launcher
    (``choice``) when its ``defaults`` (the node without the command line's hydra.launcher.* keys) fail, else
    the first key the command line changed that fails on its own, else the changed keys together."""
    params, base = OmegaConf.to_container(launcher), OmegaConf.to_container(defaults)
    changed = {key: value for key, value in params.items() if base.get(key) != value}
    takes = f"a value {base['_target_'].rpartition('.')[2]} takes"
    trials = [("hydra/launcher", choice, base, "a launcher that can start on this machine"),
              *((f"hydra.launcher.{key}", value, {**base, key: value}, takes) for key, value in changed.items()),
              ("hydra.launcher", changed, params, f"{takes}, all together")]
    for key, value, options, allowed in trials:
        problem = _set_up_fails(options)
        if problem:
            raise ConfigError(key, value, f"{allowed} ({problem})")


def _set_up_fails(options: dict) -> str | None:
    """The first line of what the launcher of ``options`` raises as Hydra builds it and it readies its first
    job (its library's own checks), or None."""
    cls = get_class(options["_target_"])
    try:
        launcher = cls(**{key: value for key, value in options.items() if key != "_target_"})
        set_up = _SET_UPS.get(cls.__module__.rpartition(".")[0])
        if set_up is not None:
            set_up(launcher)
    except Exception as err:    # a launcher's library raises what it likes: each is a refusal
        return str(err).splitlines()[0] if str(err) else type(err).__name__
    return None


def _joblib(launcher) -> None:
    """hydra-joblib-launcher's launch() up to its Parallel(...), and the number of jobs that Parallel runs."""
    from hydra_plugins.hydra_joblib_launcher._core import process_joblib_cfg
    from joblib import Parallel, effective_n_jobs

    options = {**launcher.joblib, "backend": "loky"}     # as launch() has them
    process_joblib_cfg(options)
    effective_n_jobs(Parallel(**options).n_jobs)


def _submitit(launcher) -> None:
    """hydra-submitit-launcher's launch() up to submitting: its submitit executor, the parameters given to it
    (a scratch folder for the sweep's: nothing is written where the sweep goes)."""
    import submitit
    from hydra_plugins.hydra_submitit_launcher.config import BaseQueueConf

    cluster, params = launcher._EXECUTOR, launcher.params
    timeouts = {f"{cluster}_max_num_timeout": params["max_num_timeout"]} if "max_num_timeout" in params else {}
    with tempfile.TemporaryDirectory() as folder:
        executor = submitit.AutoExecutor(folder=folder, cluster=cluster, **timeouts)
        shared = set(OmegaConf.structured(BaseQueueConf).keys())
        executor.update_parameters(**{key if key in shared else f"{cluster}_{key}": value
                                      for key, value in params.items()
                                      if key not in ("submitit_folder", "max_num_timeout")})


# By the plugin package a launcher class comes from: what its launch() does before the first job.
_SET_UPS = {"hydra_plugins.hydra_joblib_launcher": _joblib, "hydra_plugins.hydra_submitit_launcher": _submitit}
