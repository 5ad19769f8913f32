import h5py
import numpy as np
import pytest
from omegaconf import OmegaConf

import sgi_run
from sgi_run import store


def test_hdf5_round_trip(runs_root):
    cfg = sgi_run.compose(runs_root + ["plan.paths=40", "plan.T=2", "plan.keep_paths=3", "plan.seed=11"])
    result = sgi_run.run(cfg)
    ens = sgi_run.load(result.path)
    assert np.allclose(ens.t, np.arange(0, 2.5, 1.0))
    assert set(ens.observables["H"]) == {"mean", "var", "count"} and ens.observables["H"]["count"][-1] == 40
    assert ens.paths["q"].shape == (3, 3) and ens.paths["H"].shape == (3, 3)
    assert set(ens.diagnostics) >= {"nonfinite_paths", "newton_iterations", "newton_max_iterations"}
    assert ens.attrs["schema_version"] == 1 and ens.attrs["seed"] == 11
    assert ens.attrs["sgi_run_version"] == sgi_run.__version__
    assert OmegaConf.create(ens.attrs["config"]).plan.seed == 11
    assert np.allclose(ens.paths["H"], 0.5 * (ens.paths["q"] ** 2 + ens.paths["p"] ** 2))
    assert sgi_run.load(result.run_dir).attrs["config_hash"] == ens.attrs["config_hash"]


def test_snapshots_round_trip_and_survive_a_resume(runs_root):
    """Every path's final state goes to /snapshots; a run resumed from its shard checkpoints
    writes the same snapshot as an uninterrupted one."""
    overrides = runs_root + ["plan.paths=30", "plan.T=2", "plan.shards=3", "plan.snapshots=[2]"]
    whole = sgi_run.run(sgi_run.compose(overrides))
    ens = sgi_run.load(whole.path)
    assert ens.snapshots["t"].tolist() == [2.0] and ens.snapshots["q"].shape == (1, 30)
    assert ens.snapshot(None)["p"].shape == (30,) and ens.has_snapshot(2.0) and not ens.has_snapshot(1.0)
    with pytest.raises(LookupError, match=r"no snapshot at t=1.0: its snapshot times are \[2.0\]"):
        ens.snapshot(1.0)

    from sgi_run.config import build
    from sgi_run.engine.simulate import Simulator
    from sgi_run.runner import checkpoints
    setup = build(whole.ensemble.config)
    shards = checkpoints(whole.ensemble.config, whole.run_dir / "resumed", setup.plan)
    shards.save(Simulator(setup.system, setup.integrator, setup.plan).run_shard(1))
    resumed = sgi_run.run(whole.ensemble.config, run_dir=whole.run_dir / "resumed")
    assert resumed.shards_resumed == 1
    assert np.array_equal(resumed.ensemble.snapshots["q"], ens.snapshots["q"])


def test_time_averages_round_trip_and_survive_a_resume(runs_root):
    overrides = runs_root + ["plan.paths=30", "plan.T=4", "plan.shards=3", "plan.time_average=[2,4]",
                             "plan.observables=[H,q]"]
    whole = sgi_run.run(sgi_run.compose(overrides))
    ens = sgi_run.load(whole.path)
    assert set(ens.time_averages) == {"H", "q"} and ens.time_averages["H"].shape == (30,)
    assert list(ens.attrs["time_average"]) == [2, 4]
    assert np.isclose(np.mean(ens.time_averages["H"]), np.mean(ens.mean("H")[2:]), rtol=1e-12)

    from sgi_run.config import build
    from sgi_run.engine.simulate import Simulator
    from sgi_run.runner import checkpoints
    setup = build(whole.ensemble.config)
    checkpoints(whole.ensemble.config, whole.run_dir / "resumed", setup.plan).save(
        Simulator(setup.system, setup.integrator, setup.plan).run_shard(2))
    resumed = sgi_run.run(whole.ensemble.config, run_dir=whole.run_dir / "resumed")
    assert resumed.shards_resumed == 1
    assert np.array_equal(resumed.ensemble.time_averages["H"], ens.time_averages["H"])


def test_a_plan_without_time_average_keeps_its_old_config_hash():
    """Optional outputs added later are left out of the hash while unset: runs made before them
    keep their identity (and their cache)."""
    from sgi_run.config import config_hash
    cfg = sgi_run.compose([])
    assert cfg.plan.time_average is None
    plain = OmegaConf.to_container(cfg)
    del plain["plan"]["time_average"]
    assert config_hash(cfg) == config_hash(OmegaConf.create(plain))
    assert config_hash(sgi_run.compose(["plan.time_average=[50,100]"])) != config_hash(cfg)


def test_written_under_a_temporary_name(tmp_path, monkeypatch):
    ens = store.Ensemble(np.zeros(2), {"H": {"mean": np.zeros(2), "var": np.zeros(2), "count": np.ones(2)}},
                         {}, {"nonfinite_paths": np.zeros(2)}, {"seed": 0})

    def crash(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(h5py.File, "create_dataset", crash)
    with pytest.raises(OSError):
        store.write(tmp_path / "ensemble.h5", ens)
    assert not (tmp_path / "ensemble.h5").exists()


def test_other_schema_versions_are_refused(tmp_path):
    with h5py.File(tmp_path / "ensemble.h5", "w") as f:
        f.attrs["schema_version"] = 99
    with pytest.raises(ValueError, match="schema_version=99"):
        sgi_run.load(tmp_path)


# --- checksums, damage, netCDF readability ------------------------------------------------------------
@pytest.fixture
def written(runs_root):
    cfg = sgi_run.compose(runs_root + ["plan.paths=30", "plan.T=2", "plan.keep_paths=3", "plan.snapshots=[0,2]",
                                       "plan.time_average=[1,2]", "plan.observables=[q,H,p]"])
    return sgi_run.run(cfg).path


def test_every_dataset_carries_a_checksum_and_the_file_a_content_digest(written):
    with h5py.File(written, "r") as f:
        datasets = []
        f.visititems(lambda name, obj: datasets.append(obj) if isinstance(obj, h5py.Dataset) else None)
        assert all(d.fletcher32 for d in datasets if d.size > 1) and len(f.attrs["content_digest"]) == 64
    assert sgi_run.load(written).verified


def test_a_truncated_file_and_a_flipped_byte_are_damaged(written, tmp_path):
    data = written.read_bytes()
    (tmp_path / "half.h5").write_bytes(data[: len(data) // 2])
    with pytest.raises(store.DamagedFile, match="half.h5: cannot be read whole"):
        store.load(tmp_path / "half.h5")
    with h5py.File(written, "r") as f:
        offset = f["paths/q"].id.get_chunk_info(0).byte_offset
    flipped = bytearray(data)
    flipped[offset + 3] ^= 0x01
    (tmp_path / "flipped.h5").write_bytes(bytes(flipped))
    with pytest.raises(store.DamagedFile, match="flipped.h5: cannot be read whole") as err:
        store.load(tmp_path / "flipped.h5")
    assert "\n" not in str(err.value)


def test_a_value_rewritten_through_h5py_fails_the_content_digest(written):
    with h5py.File(written, "r+") as f:
        f["observables/H/mean"][0] = 1.0e3      # h5py recomputes this chunk's fletcher32
    with pytest.raises(store.DamagedFile, match="does not match the digest"):
        store.load(written)


def test_a_file_from_before_checksums_still_loads_unverified(written, tmp_path):
    old = tmp_path / "old.h5"
    with h5py.File(written, "r") as src, h5py.File(old, "w") as dst:
        for name in ("t", "observables", "paths", "diagnostics"):
            src.copy(src[name], dst, name=name)
        dst.attrs.update({k: v for k, v in src.attrs.items() if k not in ("content_digest", "observables")})
    ens = store.load(old)
    assert not ens.verified and set(ens.observables) == {"q", "H", "p"}


def test_observables_keep_the_plans_order(written):
    assert list(sgi_run.load(written).observables) == ["q", "H", "p"]


def test_netcdf_tools_see_real_dimensions(written):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    mean = xr.open_dataset(written, engine="h5netcdf", group="observables/H")
    assert mean["mean"].dims == ("t",) and mean["var"].attrs["description"].startswith("unbiased")
    paths = xr.open_dataset(written, engine="h5netcdf", group="paths")
    assert paths["q"].dims == ("kept_path", "t")
    snapshots = xr.open_dataset(written, engine="h5netcdf", group="snapshots")
    assert snapshots["q"].dims == ("t", "path") and snapshots["t"].values.tolist() == [0.0, 2.0]
    root = xr.open_dataset(written, engine="h5netcdf")
    assert root["t"].attrs["units"] == "time"
    assert not any(d.startswith("phony_dim") for ds in (mean, paths, snapshots, root) for d in ds.dims)


def test_to_xarray(written):
    pytest.importorskip("xarray")
    ens = sgi_run.load(written)
    ds = ens.to_xarray()
    assert ds["H_mean"].dims == ("t",) and np.array_equal(ds["H_mean"].values, ens.mean("H"))
    assert ds["path_q"].dims == ("kept_path", "t") and ds["snapshot_p"].dims == ("snapshot_t", "path")
    assert ds["time_average_H"].dims == ("path",) and ds.attrs["config_hash"] == ens.attrs["config_hash"]
    assert "n - 1" in ds["H_var"].attrs["description"]
