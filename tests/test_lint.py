"""The repository passes ruff with the rules pyproject.toml selects ([tool.ruff]); pre-commit runs the same."""
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is not installed: pip install -e '.[test]'")
    # --no-fix: a test reports, it never edits the code it checks.
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-fix", "--output-format", "concise", "."],
                          cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, f"ruff check found (fix with `ruff check --fix`):\n{lint.stdout}{lint.stderr}"
