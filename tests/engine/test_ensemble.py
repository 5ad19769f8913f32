"""executor=local with shards_at_once: shards computed from several threads of this process, to the
numbers of one shard at a time; an interrupted run keeps what it finished; programs that call LAPACK run
one shard at a time."""
import numpy as np
import pytest

import sgi_run
from sgi_run.config import build
from sgi_run.engine.simulate import Simulator
from tests.engine.test_executor import KUBO, assert_same_files


def _run(tmp_path, name, overrides, **kwargs):
    return sgi_run.run(sgi_run.compose(overrides + [f"output_root={tmp_path}/{name}", "progress=off"]), **kwargs)


def test_shards_at_once_keep_every_number_and_say_so(tmp_path):
    one = _run(tmp_path, "one", KUBO + ["executor.shards_at_once=1"])
    three = _run(tmp_path, "three", KUBO + ["executor.shards_at_once=3"])
    assert_same_files(one, three)
    assert one.ensemble.attrs["executor"] == "local (this process)"
    assert three.ensemble.attrs["executor"] == "local (this process, 3 shards at once)"


@pytest.mark.slow
def test_a_convergence_study_in_threads_equals_one_shard_at_a_time(tmp_path):
    study = ["system=rigid_body", "integrator=isomp", "plan=convergence", "plan.paths=300", "plan.shards=3",
             "plan.T=0.25", "plan.dts=[0.05,0.025]", "plan.reference_refine=2"]
    one = _run(tmp_path, "one", study + ["executor.shards_at_once=1"])
    three = _run(tmp_path, "three", study + ["executor.shards_at_once=3"])
    np.testing.assert_array_equal(one.result.error, three.result.error)
    np.testing.assert_array_equal(one.result.se, three.result.se)


def test_an_interrupted_run_in_threads_keeps_its_shards_and_resumes_to_the_same_numbers(tmp_path):
    finished = []

    def interrupt(shard):
        finished.append(shard.shard)
        raise KeyboardInterrupt

    overrides = KUBO + ["executor.shards_at_once=2"]
    with pytest.raises(KeyboardInterrupt):
        _run(tmp_path, "runs", overrides, on_shard_done=interrupt)
    kept = list((tmp_path / "runs").glob("*/*/shards/shard-*.npz"))
    assert len(finished) == 1 and len(kept) == 1 and not list((tmp_path / "runs").glob("*/*/ensemble.h5"))
    resumed = _run(tmp_path, "runs", overrides)
    assert resumed.shards_resumed == 1
    assert_same_files(_run(tmp_path, "whole", KUBO), resumed)


@pytest.mark.parametrize("overrides, library", [
    (["system=vlasov_lorentz", "integrator=srkw2"], True),     # 4 dimensions, 24 unknowns: LAPACK's solve
    (["integrator=srkw2"], False),                             # 12 unknowns: eliminated unrolled
    (["integrator=midpoint"], False),                          # 2 unknowns: Cramer's rule
])
def test_a_program_that_calls_lapack_runs_one_shard_at_a_time(tmp_path, overrides, library):
    """Two such programs at once deadlocked XLA's CPU runtime (Kubo SRKw2, jax 0.10.2)."""
    overrides += ["plan.paths=40", "plan.shards=2", "plan.T=0.1", "executor.shards_at_once=2"]
    setup = build(sgi_run.compose(overrides))
    assert Simulator(setup.system, setup.integrator, setup.plan).calls_libraries() == library
    ran = _run(tmp_path, "runs", overrides)
    assert ran.ensemble.attrs["executor"] == "local (this process" + (")" if library else ", 2 shards at once)")
