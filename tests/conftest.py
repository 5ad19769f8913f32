import pathlib
import subprocess

import pytest
import yaml

import sgi_run.core  # noqa: F401  (float64)

ROOT = pathlib.Path(__file__).resolve().parent.parent


def integrator_config(name: str) -> dict:
    return yaml.safe_load((ROOT / "conf" / "integrator" / f"{name}.yaml").read_text())


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
