import contextlib
import os
import pathlib
import subprocess

import pytest
import yaml

from sgi_run.engine import cores

# Under pytest-xdist (`make test` runs two workers), each worker is pinned to its own core before JAX
# starts: XLA sizes its CPU thread pool by the process's affinity, and two pools on the same two cores
# fight over them (the subprocesses a test starts inherit the pin).
SESSION_CORES = sorted(os.sched_getaffinity(0))   # the session's, before a worker is pinned to its share
if os.environ.get("PYTEST_XDIST_WORKER"):
    cores.pin(int(os.environ["PYTEST_XDIST_WORKER"].removeprefix("gw")), int(os.environ["PYTEST_XDIST_WORKER_COUNT"]))

import jax  # noqa: E402

from sgi_run.core import jax_setup  # noqa: E402

jax_setup.configure()   # float64, the compilation cache: as the commands set them
# The test processes themselves keep their compiled programs in memory only; the subprocesses the tests start
# (the commands) use the persistent cache as users' do. A test process compiles tens of thousands of programs,
# and writing or reading each to the cache crashed a worker in XLA's executable (de)serialization about once
# in three full runs (a segfault in put/get_executable_and_time, each time in a different test, none of which
# crashed alone); the xdist session then hung until CI's limit.
jax.config.update("jax_enable_compilation_cache", False)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def integrator_config(name: str) -> dict:
    """The node ``make_integrator`` builds a bundled method of: its YAML without the ``claims`` block, which
    ``config.build_integrator`` removes as the runs do (it describes the method, not how to build it)."""
    node = yaml.safe_load((ROOT / "conf" / "integrator" / f"{name}.yaml").read_text())
    node.pop("claims", None)
    return node


@pytest.fixture
def make_integrator():
    from sgi_run.integrators import make_integrator as build
    return lambda name, **changes: build({**integrator_config(name), **changes})


@pytest.fixture
def runs_root(tmp_path):
    """Overrides that keep a test's run directories in its tmp_path."""
    return [f"output_root={tmp_path / 'runs'}", "progress=off"]


@pytest.fixture
def read_only(tmp_path):
    """(source, mount): a read-only bind mount of source (needs root, as on the project's machines and CI)."""
    source, mount = tmp_path / "source", tmp_path / "mount"
    source.mkdir()
    mount.mkdir()
    if subprocess.run(["mount", "--bind", "-o", "ro", source, mount], capture_output=True).returncode:
        pytest.skip("cannot make a read-only bind mount here (not root)")
    yield source, mount
    subprocess.run(["umount", mount])


@pytest.fixture
def build_calls(monkeypatch):
    """The configs ``config.build`` is called with from here on, by the package's modules that call it."""
    import sys

    import sgi_run.runner  # noqa: F401  (imported here, so that its build is counted too)
    from sgi_run import config
    calls, build = [], config.build

    def counted(cfg):
        calls.append(cfg)
        return build(cfg)

    for module in [m for name, m in sys.modules.items() if name.startswith("sgi_run")]:
        if getattr(module, "build", None) is build:
            monkeypatch.setattr(module, "build", counted)
    return calls


@pytest.fixture(scope="session")
def session_cores():
    """A context manager giving the cores the test session has (``.cores``; an xdist worker is pinned to
    its share): inside it, this thread and the processes it starts run on all of them, for the tests of
    how processes share the cores."""
    @contextlib.contextmanager
    def widened():
        mine = os.sched_getaffinity(0)
        os.sched_setaffinity(0, SESSION_CORES)
        try:
            yield SESSION_CORES
        finally:
            os.sched_setaffinity(0, mine)
    widened.cores = SESSION_CORES
    return widened


def made_by_todays_code(run_code: dict) -> dict:
    """A kept record's ``run_code`` as if today's numerics code had computed each of its runs (a test's record
    made current: ``figures.records.code_changed``)."""
    from sgi_run.runner import code_digest_of

    return {run_id: {**entry, "code_digest": code_digest_of(entry["system"], entry["integrator_family"])}
            for run_id, entry in run_code.items()}
