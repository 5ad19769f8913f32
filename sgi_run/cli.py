"""``sgi-run``: Hydra command line. ``sgi-run system=kubo integrator=dirk plan.dt=0.5``,
``sgi-run -m integrator=midpoint,dirk,heun plan.dt=0.5,0.1``.

Every job of a command line (each combination of a multirun) is composed and validated before the
first one computes; a refusal is one line on stderr and exit status 2.
"""
from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

from sgi_run.config import CONF_DIR, compose, expand_sweeps, register_resolvers
from sgi_run.core.errors import ConfigError

_HYDRA_FLAGS_WITH_VALUE = {"-cn", "--config-name", "-cp", "--config-path", "-cd", "--config-dir",
                           "--info", "-i", "--experimental-rerun", "--package", "-p"}


def _overrides(argv: list[str]) -> list[str]:
    """The key=value overrides of a command line (Hydra's own flags skipped)."""
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg in _HYDRA_FLAGS_WITH_VALUE:
            skip = True
        elif not arg.startswith("-") and not arg.lstrip("+~").startswith("hydra"):
            out.append(arg)
    return out


@hydra.main(config_path=str(CONF_DIR), config_name="config", version_base=None)
def _job(cfg: DictConfig) -> None:
    from hydra.core.hydra_config import HydraConfig
    from rich.console import Console

    from sgi_run import summary
    from sgi_run.runner import run

    if cfg.plan.get("kind", "ensemble") == "convergence":
        from sgi_run.convergence_run import run_convergence, show
        show(run_convergence(cfg, run_dir=HydraConfig.get().runtime.output_dir), Console())
        return
    result = run(cfg, run_dir=HydraConfig.get().runtime.output_dir)
    console = Console()
    title = f"{cfg.system.name} / {cfg.integrator.name}  (dt={cfg.plan.dt}, paths={cfg.plan.paths}, T={cfg.plan.T})"
    console.print(summary.render(result.summary, title))
    nonfinite = result.summary[0]["nonfinite_paths"] if result.summary else 0
    if nonfinite:
        console.print(f"[yellow]{nonfinite} path(s) went non-finite; excluded from the statistics and counted in diagnostics/nonfinite_paths[/]")
    resumed = f" (resumed {result.shards_resumed} finished shard(s) of an interrupted run)" if result.shards_resumed else ""
    console.print(f"{'cached' if result.cached else 'wrote'} {result.path}{resumed}")


def main() -> None:
    argv = sys.argv[1:]
    if not any(a in ("--help", "-h", "--hydra-help", "--cfg", "-c", "--info", "-i") for a in argv):
        try:
            for job in expand_sweeps(_overrides(argv)):
                compose(job)
        except ConfigError as err:
            print(f"sgi-run: error: {err}", file=sys.stderr)
            sys.exit(2)
    register_resolvers()
    _job()


if __name__ == "__main__":
    main()
