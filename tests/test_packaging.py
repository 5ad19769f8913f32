"""The wheel is the product: the sdist and the wheel built from it (as a release builds them, without network),
installed into a clean virtual environment outside the checkout, give a working ``sgi-run`` and ``sgi-figures``
in an empty directory, and write nothing into the installed package."""
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from sgi_run import __version__ as version
from tests.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]

# A formula system and a plan of the user's own, in a --config-dir beside nothing else (docs/tutorials/own-study.md).
USER_SYSTEM = """\
# A stochastic oscillator of my own: H in q, p and the parameters, one noise Hamiltonian.
name: custom
H: p**2/2 + omega**2*q**2/2
noise: [sigma*q]
omega: 1.5
sigma: 0.2
q0: 1.0
p0: 0.0
"""
USER_PLAN = """\
defaults:
  - default
  - _self_
paths: 200
dt: 0.05
T: 1.0
"""


def _tracked_tree(destination: Path) -> Path:
    """The checkout's files as a clone has them (git's tracked and untracked-not-ignored files): what a release
    builds from, never the checkout itself (a build writes beside its sources)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split("\0")
    for name in filter(None, listed):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(the environment's bin directory, the built sdist, the wheel): a venv holding the wheel alone, which borrows
    the test environment's installed dependencies (a .pth to its site-packages) so that no network is needed."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("builds from the checkout's tracked files: needs git and a checkout")
    work = tmp_path_factory.mktemp("wheel")
    source = _tracked_tree(work / "source")
    dist = work / "dist"
    # sdist first, then the wheel from the unpacked sdist: the wheel test covers both.
    subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", dist, source], check=True,
                   capture_output=True)
    [sdist], [wheel] = sorted(dist.glob("*.tar.gz")), sorted(dist.glob("*.whl"))
    env = work / "env"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", env], check=True)
    env_python = env / "bin" / "python"
    subprocess.run([sys.executable, "-m", "pip", "--python", env_python, "install", "--quiet", "--no-deps",
                    "--no-index", wheel], check=True, capture_output=True)
    site = Path(subprocess.run([env_python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                               capture_output=True, text=True, check=True).stdout.strip())
    borrowed = {sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}
    (site / "zz_test_dependencies.pth").write_text("".join(f"{path}\n" for path in sorted(borrowed)))
    return env / "bin", sdist, wheel, site


def _run(bin_dir: Path, cwd: Path, *command: str, timeout: float = 300) -> subprocess.CompletedProcess:
    environment = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    environment["PATH"] = f"{bin_dir}{os.pathsep}{environment.get('PATH', '')}"   # the installed tools first
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env=environment)
    assert done.returncode == 0, f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done


def _files(directory: Path) -> dict[str, int]:
    return {str(p.relative_to(directory)): p.stat().st_mtime_ns for p in directory.rglob("*") if p.is_file()
            and "__pycache__" not in p.parts}


def test_the_wheel_and_the_sdist_carry_the_configs_and_the_experiments(installed):
    _, sdist, wheel, _ = installed
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
    with tarfile.open(sdist) as archive:
        in_sdist = {name.partition("/")[2] for name in archive.getnames()}
    for shipped in ("conf", "experiments"):
        ours = {p.relative_to(ROOT).as_posix() for p in (ROOT / shipped).rglob("*.yaml")}
        assert ours and {f"sgi_run/{name}" for name in ours} <= in_wheel
        assert ours <= in_sdist
    assert not any(name.startswith(("tests/", "gallery/", "docs/")) for name in in_wheel | in_sdist)


def test_an_installed_sgi_run_runs_from_an_empty_directory_and_writes_only_there(installed, tmp_path):
    bin_dir, _, _, site = installed
    package = site / "sgi_run"
    before = _files(package)
    empty = tmp_path / "empty"
    empty.mkdir()
    python = bin_dir / "python"
    where = subprocess.run([python, "-c", "import sgi_run.bundled as b; print(b.CONF_DIR, b.in_checkout())"],
                           cwd=empty, capture_output=True, text=True, check=True).stdout.split()
    assert where == [str(package / "conf"), "False"]

    default = _run(bin_dir, empty, "sgi-run", "progress=off")
    assert "kubo / midpoint" in default.stdout
    assert list((empty / "outputs" / "runs").glob("kubo-midpoint/*/ensemble.h5"))

    headline = _run(bin_dir, empty, "sgi-run", "system=heavy_top", "integrator=tmk", "progress=off")
    assert "heavy_top / tmk" in headline.stdout and "largest" in headline.stdout
    drift = {row.split()[0]: float(row.split()[-1]) for row in headline.stdout.splitlines()
             if row.split()[:1] in (["C1"], ["C2"])}
    assert set(drift) == {"C1", "C2"} and max(drift.values()) < 1e-12, headline.stdout   # TMK keeps the Casimirs

    figure = _run(bin_dir, empty, "sgi-figures", "--fidelity", "smoke", "--only", "kraus_tyranowski_2021/fig4_1")
    assert (empty / "outputs" / "figures" / "kraus_tyranowski_2021" / "fig4_1.png").is_file(), figure.stdout
    record = json.loads((empty / "outputs" / "figures" / "kraus_tyranowski_2021" / "fig4_1.json").read_text())
    assert record["provenance"]["installed"] == version and record["provenance"]["commit"] is None

    mine = empty / "mine"
    (mine / "system").mkdir(parents=True)
    (mine / "plan").mkdir()
    (mine / "system" / "my_oscillator.yaml").write_text(USER_SYSTEM)
    (mine / "plan" / "quick.yaml").write_text(USER_PLAN)
    own = _run(bin_dir, empty, "sgi-run", "--config-dir", "mine", "system=my_oscillator", "plan=quick",
               "progress=off")
    assert "custom / midpoint" in own.stdout and "paths=200" in own.stdout

    assert _files(package) == before, "an installed sgi-run wrote into its own package"


def test_the_tutorial_runs_as_written_with_the_installed_wheel(installed, tmp_path):
    """docs/tutorials/own-study.md: its shell blocks, in order, from an empty directory."""
    bin_dir, _, _, _ = installed
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "docs" / "tutorials" / "own-study.md").read_text(), re.S)
    assert len(blocks) >= 4
    (tmp_path / "tutorial.sh").write_text("set -euo pipefail\n" + "\n".join(blocks))
    done = _run(bin_dir, tmp_path, "bash", str(tmp_path / "tutorial.sh"), timeout=600)
    study = tmp_path / "my-study"
    assert list((study / "outputs" / "runs").glob("custom-midpoint/*/ensemble.h5"))
    assert list((study / "outputs" / "runs").glob("custom-midpoint/*/convergence.h5"))
    figure = study / "outputs" / "figures" / "my_study"
    assert (figure / "work_precision.png").is_file() and (study / "outputs" / "figures" / "index.html").is_file()
    assert "checks of 1 figures: 3 PASS, 0 FAIL" in done.stdout, done.stdout
