"""Every experiment file of the repository at smoke fidelity, and its paper profile's counts.

The smoke runs are short (T cut by 10 or more, a few hundred paths), so most acceptance criteria
about late times SKIP; none may FAIL. The Lenard-Bernstein figures 4.6-4.9 share one run cache.
"""
from pathlib import Path

import pytest

from sgi_run.figures.checks import FAIL, PASS
from sgi_run.figures.experiment import compose_runs, discover, make_figure

EXPERIMENTS = Path(__file__).resolve().parents[2] / "experiments"
ALL = discover(EXPERIMENTS)
SMOKE_DONE_ELSEWHERE = {"fig4_1"}   # tests/figures/test_pipeline.py runs it through the CLI


@pytest.fixture(scope="module")
def runs_root(tmp_path_factory):
    return str(tmp_path_factory.mktemp("runs"))


@pytest.mark.parametrize("exp", [e for e in ALL if e.figure not in SMOKE_DONE_ELSEWHERE], ids=lambda e: e.figure)
def test_smoke_profile_makes_the_figure_without_a_fail(exp, runs_root, tmp_path):
    outcome = make_figure(exp, "smoke", tmp_path, runs_root, log=lambda line: None)
    for key in ("png", "csv", "md", "checks", "json"):
        assert outcome.files[key].stat().st_size > 0
    failed = [c.line() for c in outcome.checks if c.verdict == FAIL]
    assert not failed, "\n".join(failed)
    assert any(c.verdict == PASS for c in outcome.checks)


PAPER_COUNTS = {   # figure: (paths, T) of every run at paper fidelity, from the paper's text
    "fig4_1": (50000, 5000), "fig4_2": (50000, 5000), "fig4_3": (10**6, 5000), "fig4_4": (10**6, 5000),
    "fig4_6": (10**7, None), "fig4_7": (10**7, None), "fig4_8": (10**7, None), "fig4_9": (10**7, None),
    "fig4_10": (1, 100000), "fig4_11": (10**6, 10000),
    "fig2_1": (400**2, 200), "fig2_2": (400**2, 200),    # Bou-Rabee & Owhadi: 400^2 realizations
}


@pytest.mark.parametrize("exp", [e for e in ALL if e.figure in PAPER_COUNTS], ids=lambda e: e.figure)
def test_paper_profile_has_the_papers_counts(exp, tmp_path):
    paths, T = PAPER_COUNTS[exp.figure]
    for run_id, cfg in compose_runs(exp, "paper", str(tmp_path)).items():
        assert cfg.plan.paths == paths, run_id
        if T is not None:
            assert cfg.plan.T == T, run_id
        else:   # T = 1000 in the paper; 999.9 = 6666 x 0.15, as 1000 is not a whole number of 0.15 steps
            assert cfg.plan.T in (999.9, 1000), run_id
