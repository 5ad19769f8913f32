"""engine.device: what a run names as its device, and plan.shard_size: auto settled for it."""
import pytest

import sgi_run
from sgi_run.config import build
from sgi_run.core.errors import ConfigError
from sgi_run.engine import device
from sgi_run.engine.plan import Plan
from sgi_run.runner import SimulatorBuilder


def test_this_machine_is_a_cpu_named_by_its_processor():
    assert device.platform() == "cpu" and not device.on_accelerator()
    assert device.describe().startswith("cpu (") and device.free_bytes() is None


def test_on_a_cpu_auto_is_the_cache_sized_shard():
    assert device.auto_shard_size(bytes_per_path=136, paths=10**7) == device.CPU_SHARD_SIZE


def test_on_a_cpu_auto_fits_the_host_memory():
    """A Zeitlin N = 128 path holds ~2.6 MB: 10^4 of them do not fit a laptop, so auto takes fewer."""
    assert device.auto_shard_size(bytes_per_path=2**20, paths=10**7, host_bytes=2**30) == 2**9   # half of 1 GiB
    assert device.auto_shard_size(bytes_per_path=136, paths=10**7, host_bytes=2**30) == device.CPU_SHARD_SIZE
    assert device.auto_shard_size(bytes_per_path=2**40, paths=10**7, host_bytes=2**30) == 1      # the check refuses it


@pytest.fixture
def gpu_with(monkeypatch):
    """Pretend JAX's device is an accelerator with ``free`` bytes free."""
    def pretend(free):
        monkeypatch.setattr(device, "on_accelerator", lambda: True)
        monkeypatch.setattr(device, "free_bytes", lambda: free)
    return pretend


def test_on_an_accelerator_auto_fills_half_the_free_memory_up_to_the_cap(gpu_with):
    gpu_with(2**30)
    assert device.auto_shard_size(bytes_per_path=1024, paths=10**7) == 2**19      # half of 1 GiB / 1 KiB
    assert device.auto_shard_size(bytes_per_path=1024, paths=1000) == 1000        # never more than the paths
    gpu_with(2**40)
    assert device.auto_shard_size(bytes_per_path=8, paths=10**9) == device.ACCELERATOR_SHARD_MAX
    gpu_with(None)                                                                  # a backend that does not say
    assert device.auto_shard_size(bytes_per_path=8, paths=10**9) == device.ACCELERATOR_SHARD_MAX


def test_the_default_plan_settles_auto_and_a_number_is_kept(gpu_with):
    cfg = sgi_run.compose(["plan.paths=100000"])
    assert cfg.plan.shard_size == "auto"
    assert build(cfg).plan.shard_size == device.CPU_SHARD_SIZE
    assert build(sgi_run.compose(["plan.paths=100000", "plan.shard_size=777"])).plan.shard_size == 777
    gpu_with(2**30)
    on_gpu = build(cfg).plan
    assert on_gpu.shard_count == 1 and on_gpu.paths_per_shard == 100000
    study = build(sgi_run.compose(["plan=convergence", "plan.paths=3000"])).plan
    assert isinstance(study.shard_size, int) and study.shard_size >= 3000


def test_a_shard_larger_than_the_device_is_refused_before_compute(gpu_with):
    gpu_with(10**6)
    with pytest.raises(ConfigError) as err:
        build(sgi_run.compose(["plan.paths=1000000", "plan.shard_size=1000000"]))
    message = str(err.value)
    assert message.startswith("plan.shard_size=1000000") and "fits on the device" in message and "\n" not in message


def test_an_unsettled_auto_is_never_used_and_a_bad_size_is_refused():
    with pytest.raises(ValueError, match="settle it"):
        Plan(paths=10, dt=0.1, T=1.0, output_dt=1.0, shard_size="auto").shard_count  # noqa: B018  (reading it raises)
    with pytest.raises(ConfigError) as err:
        build(sgi_run.compose(["plan.shard_size=big"]))
    assert str(err.value).startswith("plan.shard_size='big'") and "'auto'" in str(err.value)


def test_a_dask_worker_gets_the_shard_size_this_process_settled(gpu_with):
    cfg = sgi_run.compose(["plan.paths=100000"])
    gpu_with(2**30)
    plan = build(cfg).plan
    builder = SimulatorBuilder.of(cfg, plan)
    assert f"shard_size: {plan.paths_per_shard}" in builder.config
