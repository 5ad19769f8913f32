import dataclasses
import importlib.util
import os
import stat
import subprocess
import sys

import h5py
import numpy as np
import pytest
from omegaconf import OmegaConf

import sgi_run
from sgi_run import store


@pytest.mark.slow
def test_hdf5_round_trip(runs_root):
    cfg = sgi_run.compose(runs_root + ["plan.paths=40", "plan.T=2", "plan.keep_paths=3", "plan.seed=11"])
    result = sgi_run.run(cfg)
    ens = sgi_run.load(result.path)
    assert np.allclose(ens.t, np.arange(0, 2.5, 1.0))
    assert set(ens.observables["H"]) == {"mean", "var", "count", "nonfinite"} and ens.observables["H"]["count"][-1] == 40
    assert ens.paths["q"].shape == (3, 3) and ens.paths["H"].shape == (3, 3)
    assert set(ens.diagnostics) >= {"nonfinite_paths", "newton_iterations", "newton_max_iterations"}
    assert ens.attrs["schema_version"] == store.SCHEMA_VERSION == 2 and ens.attrs["seed"] == 11
    assert ens.attrs["sgi_run_version"] == sgi_run.__version__
    assert OmegaConf.create(ens.attrs["config"]).plan.seed == 11
    assert np.allclose(ens.paths["H"], 0.5 * (ens.paths["q"] ** 2 + ens.paths["p"] ** 2))
    assert sgi_run.load(result.run_dir).attrs["config_hash"] == ens.attrs["config_hash"]


@pytest.mark.slow
def test_snapshots_round_trip_and_survive_a_resume(runs_root):
    """Every path's final state goes to /snapshots; a run resumed from its shard checkpoints
    writes the same snapshot as an uninterrupted one."""
    overrides = runs_root + ["plan.paths=30", "plan.T=2", "plan.shards=3", "plan.snapshots=[2]"]
    whole = sgi_run.run(sgi_run.compose(overrides))
    ens = sgi_run.load(whole.path)
    assert ens.snapshots["t_snapshot"].tolist() == [2.0] and ens.snapshots["q"].shape == (1, 30)
    assert ens.snapshot(None)["p"].shape == (30,) and ens.has_snapshot(2.0) and not ens.has_snapshot(1.0)
    with pytest.raises(KeyError, match=r"no snapshot at t=1.0: its snapshot times are \[2.0\]"):
        ens.snapshot(1.0)
    with pytest.raises(KeyError, match=r"no snapshot at t=2.0: it stored none \(plan.snapshots\)"):
        dataclasses.replace(ens, snapshots={}).snapshot(2.0)

    from sgi_run.config import build
    from sgi_run.engine.simulate import Simulator
    from sgi_run.runner import checkpoints
    setup = build(whole.ensemble.config)
    shards = checkpoints(whole.ensemble.config, whole.run_dir / "resumed", setup.plan)
    shards.save(Simulator(setup.system, setup.integrator, setup.plan).run_shard(1))
    resumed = sgi_run.run(whole.ensemble.config, run_dir=whole.run_dir / "resumed")
    assert resumed.shards_resumed == 1
    assert np.array_equal(resumed.ensemble.snapshots["q"], ens.snapshots["q"])


@pytest.mark.slow
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
    assert list(tmp_path.iterdir()) == []        # neither the file nor its temporary remains


def test_two_writers_never_share_a_temporary_file(tmp_path):
    """A second writer of the same file, started while the first is still writing, gets its own
    temporary file; both finish, and the file is whole (the last one renamed)."""
    target = tmp_path / "convergence.h5"

    def second(f):
        store.create_checked_dataset(f, "x", [2.0])

    def first(f):
        store.create_checked_dataset(f, "x", [1.0])
        store.replace_atomically(target, second)

    store.replace_atomically(target, first)
    datasets, _, verified = store.checked_read(target)
    assert verified and datasets["x"].tolist() == [1.0] and list(tmp_path.iterdir()) == [target]


def test_the_written_file_is_as_readable_as_any_other(tmp_path):
    """The temporary file's permissions follow the umask (a run directory is often shared)."""
    old = os.umask(0o022)
    try:
        path = store.write(tmp_path / "ensemble.h5", store.Ensemble(np.zeros(2), {}, {}, {}, {}))
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


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


@pytest.mark.slow
def test_every_dataset_carries_a_checksum_and_the_file_a_content_digest(written):
    with h5py.File(written, "r") as f:
        datasets = []
        f.visititems(lambda name, obj: datasets.append(obj) if isinstance(obj, h5py.Dataset) else None)
        assert all(d.fletcher32 for d in datasets if d.size > 1) and len(f.attrs["content_digest"]) == 64
    assert sgi_run.load(written).verified


@pytest.mark.slow
def test_a_truncated_file_and_a_flipped_byte_are_damaged(written, tmp_path):
    data = written.read_bytes()
    (tmp_path / "half.h5").write_bytes(data[: len(data) // 2])
    with pytest.raises(store.DamagedFile, match=rf"half.h5: truncated \({len(data) // 2} of its {len(data)} bytes"):
        store.load(tmp_path / "half.h5")
    with h5py.File(written, "r") as f:
        offset = f["paths/q"].id.get_chunk_info(0).byte_offset
    flipped = bytearray(data)
    flipped[offset + 3] ^= 0x01
    (tmp_path / "flipped.h5").write_bytes(bytes(flipped))
    with pytest.raises(store.DamagedFile, match="flipped.h5: checksum failure in dataset paths/q$") as err:
        store.load(tmp_path / "flipped.h5")
    assert "\n" not in str(err.value)


def test_not_an_hdf5_file_is_damaged_and_no_file_is_not(tmp_path):
    (tmp_path / "ensemble.h5").write_text("results\n")
    with pytest.raises(store.DamagedFile, match="ensemble.h5: not an HDF5 file$"):
        store.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        store.load(tmp_path / "none.h5")


@pytest.mark.slow
def test_no_flipped_byte_reaches_the_reader_as_other_numbers(written, tmp_path):
    """Byte by byte (a sample): either the very same contents or DamagedFile. HDF5's global heap
    (variable-length strings) is left out: it has no checksum, and a damaged one can make HDF5
    loop; its strings are still covered by the attributes digest."""
    data = written.read_bytes()
    heaps, at = [], data.find(b"GCOL")
    while at >= 0:
        heaps.append(range(at, at + int.from_bytes(data[at + 8:at + 16], "little")))
        at = data.find(b"GCOL", at + 1)
    whole, damaged = store.load(written), 0
    for i in range(0, len(data), 101):
        if any(i in heap for heap in heaps):
            continue
        flipped = bytearray(data)
        flipped[i] ^= 0x10
        (tmp_path / "f.h5").write_bytes(bytes(flipped))
        try:
            ens = store.load(tmp_path / "f.h5")
        except store.DamagedFile:
            damaged += 1
            continue
        assert same(ens, whole), i
    assert damaged > 50


def same(a: store.Ensemble, b: store.Ensemble) -> bool:
    def equal(x, y):
        if isinstance(x, dict):
            return list(x) == list(y) and all(equal(x[k], y[k]) for k in x)
        return np.array_equal(np.asarray(x), np.asarray(y), equal_nan=np.asarray(x).dtype.kind == "f")
    return all(equal(getattr(a, f), getattr(b, f)) for f in
               ("t", "observables", "paths", "diagnostics", "attrs", "snapshots", "time_averages"))


@pytest.mark.slow
def test_a_value_rewritten_through_h5py_fails_the_content_digest(written):
    with h5py.File(written, "r+") as f:
        f["observables/H/mean"][0] = 1.0e3      # h5py recomputes this chunk's fletcher32
    with pytest.raises(store.DamagedFile, match="content digest mismatch"):
        store.load(written)


@pytest.mark.slow
def test_an_attribute_rewritten_through_h5py_fails_the_attributes_digest(written):
    with h5py.File(written, "r+") as f:
        f.attrs["seed"] = 12
    with pytest.raises(store.DamagedFile, match="attributes digest mismatch"):
        store.load(written)


def old_file(written, path, leave_out=()):
    """``written`` as code from before checksums wrote it: no digests, no fletcher32, no order."""
    with h5py.File(written, "r") as src, h5py.File(path, "w") as dst:
        def copy(name, obj):
            if isinstance(obj, h5py.Dataset) and name not in leave_out:
                dst.create_dataset(name, data=obj[()])
        src.visititems(copy)
        dst.attrs.update({k: v for k, v in src.attrs.items()
                          if k not in ("content_digest", "attributes_digest", "observables")})
    return path


@pytest.mark.slow
def test_a_file_from_before_checksums_still_loads_unverified(written, tmp_path):
    ens = store.load(old_file(written, tmp_path / "old.h5"))
    assert not ens.verified and list(ens.observables) == ["H", "p", "q"]
    whole = store.load(written)
    assert all(np.array_equal(ens.observables[name]["var"], whole.observables[name]["var"]) for name in whole.observables)


@pytest.mark.slow
def test_a_missing_dataset_is_damage(written, tmp_path):
    with pytest.raises(store.DamagedFile, match="old.h5: missing dataset observables/H/var$"):
        store.load(old_file(written, tmp_path / "old.h5", leave_out=["observables/H/var"]))


def test_the_digests_hash_values_not_pointers():
    """Variable-length strings read back as object arrays, whose bytes are pointers."""
    strings = lambda: np.array([b"q", b"p"], dtype=object)
    assert store.content_digest({"s": strings()}) == store.content_digest({"s": strings()})
    assert store.attributes_digest({"a": strings()}) != store.attributes_digest({"a": np.array([b"q", b"q"], dtype=object)})


def test_a_scalar_dataset_is_covered_by_the_digest(tmp_path):
    """Scalars cannot carry fletcher32 (no chunks): a flipped byte in one is caught by the digest."""
    path = store.replace_atomically(tmp_path / "convergence.h5",
                                    lambda f: store.create_checked_dataset(f, "order", 1.5, units="1"))
    with h5py.File(path, "r") as f:
        assert not f["order"].fletcher32 and f["order"].attrs["units"] == "1"
        offset = f["order"].id.get_offset()
    data = bytearray(path.read_bytes())
    data[offset + 7] ^= 0x01
    path.write_bytes(bytes(data))
    with pytest.raises(store.DamagedFile, match="content digest mismatch"):
        store.checked_read(path)


@pytest.mark.slow
def test_observables_keep_the_plans_order(written):
    assert list(sgi_run.load(written).observables) == ["q", "H", "p"]


@pytest.mark.slow
def test_netcdf_tools_see_real_dimensions(written):
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    mean = xr.open_dataset(written, engine="h5netcdf", group="observables/H")
    assert mean["mean"].dims == ("t",) and mean["var"].attrs["description"].startswith("unbiased")
    paths = xr.open_dataset(written, engine="h5netcdf", group="paths")
    assert paths["q"].dims == ("kept_path", "t")
    snapshots = xr.open_dataset(written, engine="h5netcdf", group="snapshots")
    assert snapshots["q"].dims == ("t_snapshot", "path") and snapshots["t_snapshot"].values.tolist() == [0.0, 2.0]
    root = xr.open_dataset(written, engine="h5netcdf")
    assert root["t"].attrs["units"] == "time"
    assert not any(d.startswith("phony_dim") for ds in (mean, paths, snapshots, root) for d in ds.dims)


@pytest.mark.slow
def test_netcdf_readers_label_every_time_axis(written):
    """``xarray.open_dataset(group=...)`` reads a group's own variables only: each group that has a time
    axis holds its coordinate; snapshot times are a dimension of their own, so ``open_datatree`` aligns."""
    xr = pytest.importorskip("xarray")
    pytest.importorskip("h5netcdf")
    ens = sgi_run.load(written)
    for group in ("observables/H", "observables/q", "diagnostics", "paths"):
        ds = xr.open_dataset(written, engine="h5netcdf", group=group)
        assert "t" in ds.coords and np.array_equal(ds["t"].values, ens.t), group
    snapshots = xr.open_dataset(written, engine="h5netcdf", group="snapshots")
    assert snapshots["q"].dims == ("t_snapshot", "path")
    assert np.array_equal(snapshots["t_snapshot"].values, ens.snapshots["t_snapshot"])
    tree = xr.open_datatree(written, engine="h5netcdf")
    assert np.array_equal(tree["observables/H"]["t"].values, ens.t)
    assert np.array_equal(tree["observables/H"]["mean"].values, ens.mean("H"))
    assert np.array_equal(tree["paths"]["q"].values, ens.paths["q"]) and tree["paths"]["q"].dims == ("kept_path", "t")
    assert np.array_equal(tree["snapshots"]["t_snapshot"].values, ens.snapshots["t_snapshot"])
    assert np.array_equal(tree["time_averages"]["H"].values, ens.time_averages["H"])


def schema_1_file(written, path):
    """``written`` in schema 1's layout: snapshot times at snapshots/t, no time coordinate in groups."""
    with h5py.File(written, "r") as src, h5py.File(path, "w") as dst:
        def copy(name, obj):
            if isinstance(obj, h5py.Dataset) and not name.endswith("/t"):     # kubo: no entry axes either
                dst.create_dataset("snapshots/t" if name == "snapshots/t_snapshot" else name, data=obj[()])
        src.visititems(copy)
        dst.attrs.update({k: v for k, v in src.attrs.items() if k not in ("content_digest", "attributes_digest")})
        dst.attrs["schema_version"] = 1
    return path


@pytest.mark.slow
def test_a_schema_1_file_still_loads(written, tmp_path):
    """Run caches hold files written before snapshot times had their own dimension name."""
    old, new = store.load(schema_1_file(written, tmp_path / "old.h5")), store.load(written)
    assert np.array_equal(old.snapshots["t_snapshot"], new.snapshots["t_snapshot"])
    assert old.snapshots.keys() == new.snapshots.keys()
    assert old.paths.keys() == new.paths.keys() and old.diagnostics.keys() == new.diagnostics.keys()
    assert all(old.observables[name].keys() == new.observables[name].keys() == {"mean", "var", "count", "nonfinite"}
               for name in new.observables)


@pytest.mark.slow
def test_to_xarray(written):
    pytest.importorskip("xarray")
    ens = sgi_run.load(written)
    ds = ens.to_xarray()
    assert ds["H_mean"].dims == ("t",) and np.array_equal(ds["H_mean"].values, ens.mean("H"))
    assert ds["path_q"].dims == ("kept_path", "t") and ds["snapshot_p"].dims == ("t_snapshot", "path")
    assert ds["time_average_H"].dims == ("path",) and ds.attrs["config_hash"] == ens.attrs["config_hash"]
    assert "n - 1" in ds["H_var"].attrs["description"]


@pytest.mark.slow
def test_to_xarray_without_xarray_says_how_to_get_it(written, monkeypatch):
    monkeypatch.setitem(sys.modules, "xarray", None)      # import xarray raises ImportError
    with pytest.raises(ImportError, match=r"pip install 'sgi-run\[read\]' \(xarray and h5netcdf\)"):
        sgi_run.load(written).to_xarray()


# --- a full disk ------------------------------------------------------------------------------------------
@pytest.fixture
def tiny_disk(tmp_path):
    """A 64 KiB tmpfs (needs root, as on the project's machines and CI)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", mount], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here (not root)")
    yield mount
    subprocess.run(["umount", mount])


def test_a_full_disk_is_one_oserror_and_leaves_no_partial_file(tiny_disk):
    """A real full disk: HDF5 writing to it fails its flushes, cannot close the file, and crashes the
    process at exit (exit 139, dozens of lines of HDF5 errors). The writer raises one OSError(ENOSPC)
    instead, leaves nothing behind, and the process ends normally."""
    script = f"""
import numpy as np
from sgi_run import store
big = np.random.default_rng(0).random((10, 3000))
ens = store.Ensemble(np.arange(10.0), {{"H": {{"mean": big, "var": big, "count": big}}}}, {{}},
                     {{"nonfinite_paths": np.zeros(10)}}, {{"seed": 0}})
try:
    store.write({str(tiny_disk / 'ensemble.h5')!r}, ens)
except OSError as err:
    print("errno", err.errno)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert (out.returncode, out.stdout.strip(), out.stderr) == (0, "errno 28", "")
    assert list(tiny_disk.iterdir()) == []


def test_an_observable_named_like_an_entry_axis_reads_back(tmp_path):
    """The heavy top's body_axis1 is an observable, body_axis_axis0 the entry axis of the vector body_axis:
    the reader tells them apart by what the file says they are, never by their names."""
    t = np.arange(3.0)
    moments = {"mean": np.zeros(3), "var": np.zeros(3), "count": np.ones(3)}
    kept = {"body_axis": np.ones((2, 3, 3)), "body_axis1": np.full((2, 3), 0.5), "H_axis0": np.zeros((2, 3))}
    ens = store.Ensemble(t, {"H": moments}, kept, {"nonfinite_paths": np.zeros(3, np.int64)},
                         {"paths": 2, "config": "{}"})
    back = store.load(store.write(tmp_path / "ensemble.h5", ens))
    assert sorted(back.paths) == sorted(kept)
    assert all(np.array_equal(back.paths[name], data) for name, data in kept.items())


def test_the_invariants_drift_round_trips_over_t_and_a_file_without_it_loads(tmp_path):
    """/invariant_drift/<name> over t, read back as Ensemble.invariant_drift; a file written without it (every file
    before it, and any run of a system that declares no invariant) loads with none."""
    t = np.arange(3.0)
    moments = {"mean": np.zeros(3), "var": np.zeros(3), "count": np.ones(3)}
    drift = {"C1": np.array([0.0, 2e-16, 4e-16]), "C2": np.array([0.0, 1e-3, np.nan])}
    ens = store.Ensemble(t, {"H": moments}, {}, {"nonfinite_paths": np.zeros(3, np.int64)}, {"config": "{}"},
                         invariant_drift=drift)
    path = store.write(tmp_path / "ensemble.h5", ens)
    back = store.load(path)
    assert back.verified and list(back.invariant_drift) == ["C1", "C2"] and "t" not in back.invariant_drift
    for name, data in drift.items():
        np.testing.assert_array_equal(back.invariant_drift[name], data)
    with h5py.File(path, "r") as f:
        assert f["invariant_drift/C1"].dims[0][0].name == "/invariant_drift/t"   # the group's own t: netCDF's
        assert "largest |I(z_k) - I(z_0)|" in f["invariant_drift/C1"].attrs["description"]
    if importlib.util.find_spec("xarray"):
        ds = back.to_xarray()
        assert ds["invariant_drift_C2"].dims == ("t",) and "largest" in ds["invariant_drift_C2"].attrs["description"]
    without = store.load(store.write(tmp_path / "without.h5", dataclasses.replace(ens, invariant_drift={})))
    with h5py.File(tmp_path / "without.h5", "r") as f:
        assert "invariant_drift" not in f
    assert without.invariant_drift == {}


def test_an_observables_nonfinite_paths_are_read_or_told_by_its_count(tmp_path):
    """Issue 45: ensemble.h5 counts the paths where each observable is not finite; a file from before that has
    them as paths - count."""
    moments = {"mean": np.zeros(3), "var": np.zeros(3), "count": np.array([5, 4, 2])}
    for stored in ({}, {"nonfinite": np.array([0, 1, 3])}):
        ens = store.Ensemble(np.arange(3.0), {"H": moments | stored}, {}, {"nonfinite_paths": np.array([0, 0, 2])},
                             {"paths": 5})
        back = store.load(store.write(tmp_path / f"{len(stored)}.h5", ens))
        assert np.array_equal(back.nonfinite("H"), [0, 1, 3])
