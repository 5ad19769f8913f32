"""``ensemble.h5``, schema v2 (docs/architecture.md "Outputs"), and its public reader ``load``.

Layout::

    /t                                   output times (a dimension scale)
    /<group>/t                           the same output times in every group with a time axis (its
                                         dimension scale there: netCDF readers label a group's axes
                                         only with the group's own coordinate variables)
    /<group>/<name>_axis<i>              the i-th entry axis of a vector observable or array view
                                         (a netCDF dimension without a variable)
    /observables/<name>/{mean,var,count,nonfinite}   (t, *shape) per output time and entry of the observable
                                         (var unbiased: divided by n - 1; count: paths where its value is
                                         finite; nonfinite: the others, left out of mean and var; absent
                                         in files from before it, where it is paths - count)
    /paths/<name>                        (kept_path, t, *shape): the state space's views (canonical
                                         coordinates, or each leaf of the state, complex included) and
                                         the observables along the first kept paths
    /diagnostics/nonfinite_paths         per output time
    /diagnostics/<solver>_{iterations,max_iterations,unconverged_steps,stagnated_steps}   per output
                                         interval, for the integrator's solver (attrs ``solver``: newton,
                                         chord, fixed_point, shake; none for an explicit method)
    /snapshots/t_snapshot, /snapshots/<view>   (t_snapshot, path, *shape): every path's state at the
                                         plan's ``snapshots`` times (absent when there are none)
    /time_averages/<name>                (path, *shape): every path's average of an observable over the
                                         output times in attrs ``time_average`` = [start, end]
                                         (absent without ``plan.time_average``; NaN for a path
                                         that was non-finite at any of those times)
    /invariant_drift/<name>              per output time, for each invariant the system declares (a Lie-Poisson
                                         system's Casimirs; absent when it declares none): the largest drift
                                         |I(z_k) - I(z_0)| over the paths finite at that time and every step
                                         up to it; the last is the run's (NaN where no path is finite)
    /path, /kept_path                    path indices: the scales of the path axes
    attrs: schema_version, sgi_run_version, code_digest, seed, config (resolved YAML), config_hash,
           system, integrator, paths, wall_time_s, executor (where the shards ran), shards, observables
           (their order), content_digest, attributes_digest

Every dataset carries HDF5's fletcher32 checksum, and ``content_digest`` (sha256 over every dataset)
also catches a value rewritten through h5py, which recomputes fletcher32; ``attributes_digest`` does
the same for the file's attributes (their strings live in HDF5's global heap, which has no checksum).
The file is in HDF5's 1.8 format, whose object headers carry checksums too. ``load`` verifies all of
them and raises ``DamagedFile``; a file from before the digests loads, marked not ``verified``.
Dimension scales on every axis and ``units``/``description`` attributes make the file readable by
netCDF tools: ``xarray.open_dataset(path, engine="h5netcdf", group="observables/H")`` has ``t`` as
its coordinate, and ``xarray.open_datatree(path, engine="h5netcdf")`` opens the whole run.
Schema v1 (before v2's group coordinates; snapshot times at /snapshots/t) still loads, and so does a file
from before ``invariant_drift`` (an optional group, which readers of either schema pass over).
The file is written under a unique temporary name and renamed when complete, so a file named
``ensemble.h5`` is always whole.
"""
from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import secrets
from pathlib import Path

import h5py
import numpy as np

SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)
# netCDF's NAME of a dimension scale that is a dimension only, not a variable (netCDF-C, h5netcdf).
_DIMENSION_ONLY = "This is a netCDF dimension but not a netCDF variable."
# units / description attributes of what every run stores (observables' own units are the system's).
_DESCRIBED = {
    "t": ("time", "output times"),
    "mean": (None, "Monte Carlo mean over the paths where the value is finite at each output time"),
    "var": (None, "unbiased sample variance over the finite paths (divided by n - 1; NaN for n < 2)"),
    "count": ("paths", "number of paths where the value is finite at each output time"),
    "nonfinite": ("paths", "number of paths where the value is not finite at each output time (left out of mean "
                           "and var: a non-finite state, or a finite one where the observable overflows)"),
    "nonfinite_paths": ("paths", "paths whose state is not finite at each output time"),
    "_iterations": ("iterations", "solver iterations summed over the paths and steps of the output interval"),
    "_max_iterations": ("iterations", "most solver iterations one path took in one step of the output interval"),
    "_unconverged_steps": ("steps", "steps of the output interval whose solve failed to converge, over the paths"),
    "_stagnated_steps": ("steps", "steps of the output interval whose fixed-point solve stopped at its round-off "
                                  "floor (the update stopped decreasing), over the paths"),
    "invariant_drift": (None, "largest |I(z_k) - I(z_0)| of the invariant over the paths finite at the output time "
                              "and every step up to it"),
}


def _described(name: str) -> tuple[str | None, str]:
    """units and description of a stored series, by its name or (solver diagnostics) its suffix."""
    if name in _DESCRIBED:
        return _DESCRIBED[name]
    suffix = max((k for k in _DESCRIBED if k.startswith("_") and name.endswith(k)), key=len, default=None)
    return _DESCRIBED[suffix] if suffix else (None, name)


class DamagedFile(Exception):
    """A result file that does not read back whole: truncated, not HDF5, a checksum or the content
    digest that fails, a dataset missing. ``str`` is one line naming the file and what is wrong."""


@dataclasses.dataclass
class Ensemble:
    """A run's results as numpy arrays (what ``load`` returns): its output times ``t``; per observable
    the Monte Carlo ``mean``, ``var`` and ``sem`` at each of them (``observables[name]`` holds ``mean``,
    ``var``, ``count``: paths where it is finite, ``nonfinite``: paths where it is not); the first
    ``plan.keep_paths`` paths in ``paths`` (``(kept_path, t, *shape)`` per view and observable); every
    path's state at ``plan.snapshots`` (``snapshot``); per-path ``time_averages``; ``diagnostics``
    (non-finite paths, solver iterations and failures per output interval); ``invariant_drift`` (per
    invariant the system declares, its largest drift :math:`|I(z_k) - I(z_0)|` over the finite paths and
    every step up to each output time; empty when it declares none); the file's ``attrs`` and its ``config``.

    Example:

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> ens.t, list(ens.observables)
        (array([0., 1., 2.]), ['H'])
        >>> ens.observables["H"]["count"]
        array([100, 100, 100])
    """
    t: np.ndarray
    observables: dict[str, dict[str, np.ndarray]]   # name -> {mean, var, count, nonfinite}, in the plan's order
    paths: dict[str, np.ndarray]
    diagnostics: dict[str, np.ndarray]
    attrs: dict
    snapshots: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # "t_snapshot" and coordinates
    time_averages: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # observable -> (paths,)
    verified: bool = False     # read from a file whose checksums and content digest were checked
    invariant_drift: dict[str, np.ndarray] = dataclasses.field(default_factory=dict)  # invariant -> (t,)

    def has_snapshot(self, t: float | None = None) -> bool:
        """Whether the run stored every path's state at time ``t`` (None: any snapshot at all).

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> ens.has_snapshot(2.0), ens.has_snapshot(1.0)
        (True, False)
        """
        return self._snapshot_index(t) is not None

    def _snapshot_index(self, t):
        if not self.snapshots:
            return None
        times = self.snapshots["t_snapshot"]
        hits = [len(times) - 1] if t is None else np.flatnonzero(np.isclose(times, t, rtol=1e-9, atol=1e-9))
        return hits[0] if len(hits) else None

    def snapshot(self, t: float | None = None) -> dict[str, np.ndarray]:
        """Every path's coordinates at snapshot time ``t`` (None: the last snapshot), name -> (paths,);
        KeyError naming the stored times when there is none at ``t``.

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> {name: values.shape for name, values in ens.snapshot(2.0).items()}
        {'p': (100,), 'q': (100,)}
        """
        i = self._snapshot_index(t)
        if i is None:
            stored = (f"its snapshot times are {[float(x) for x in self.snapshots['t_snapshot']]}" if self.snapshots
                      else "it stored none (plan.snapshots)")
            raise KeyError(f"the run has no snapshot at t={t}: {stored}")
        return {k: v[i] for k, v in self.snapshots.items() if k != "t_snapshot"}

    def mean(self, name: str) -> np.ndarray:
        """Monte Carlo mean of observable ``name`` over the finite paths at each output time.

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> ens.mean("H").shape
        (3,)
        """
        return self.observables[name]["mean"]

    def var(self, name: str) -> np.ndarray:
        """Unbiased sample variance (divided by n - 1) of observable ``name`` at each output time.

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> bool((ens.var("H") >= 0).all())
        True
        """
        return self.observables[name]["var"]

    def sem(self, name: str) -> np.ndarray:
        """Monte Carlo standard error of the mean at each output time (NaN with fewer than two paths:
        one path has no spread to measure, whatever variance was stored for it).

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> import numpy as np
        >>> bool(np.allclose(ens.sem("H"), np.sqrt(ens.var("H") / 100)))
        True
        """
        o = self.observables[name]
        return np.sqrt(o["var"] / np.where(o["count"] > 1, o["count"], np.nan))

    def nonfinite(self, name: str) -> np.ndarray:
        """Paths where observable ``name`` is not finite at each output time, left out of its mean and
        variance: a state that is not finite, or an observable that overflows on a finite one (paths - count
        in a file from before it was stored).

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> ens.nonfinite("H")
        array([0, 0, 0])
        """
        o = self.observables[name]
        return o["nonfinite"] if "nonfinite" in o else int(self.attrs["paths"]) - o["count"]

    @property
    def config(self):
        """The run's resolved config (an OmegaConf ``DictConfig``): ``sgi_run.run(ens.config)`` runs it again.

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> ens.config.plan.paths, ens.config.integrator.name
        (100, 'midpoint')
        """
        from omegaconf import OmegaConf
        return OmegaConf.create(self.attrs["config"])

    def to_xarray(self):
        """The run as an ``xarray.Dataset``: ``<obs>_mean/_var/_count``, diagnostics and
        ``invariant_drift_<invariant>`` over ``t``, kept
        paths ``path_<name>`` over (``kept_path``, ``t``), snapshots ``snapshot_<coordinate>`` over
        (``t_snapshot``, ``path``), time averages ``time_average_<obs>`` over ``path``. Needs the ``read``
        extra (``pip install 'sgi-run[read]'``).

        >>> import sgi_run
        >>> ens = sgi_run.load(sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"])).path)
        >>> ds = ens.to_xarray()
        >>> ds["H_mean"].dims, ds["snapshot_q"].dims
        (('t',), ('t_snapshot', 'path'))
        """
        try:
            import xarray as xr
        except ImportError:
            raise ImportError("Ensemble.to_xarray needs xarray: pip install 'sgi-run[read]' (xarray and h5netcdf)") from None
        def dims(axes, name, data):
            """Named axes, then one per entry axis of a vector observable or an array view."""
            return tuple(axes) + tuple(f"{name}_axis{i}" for i in range(data.ndim - len(axes))), data

        variables = {f"{name}_{field}": dims(["t"], name, data) for name, fields in self.observables.items()
                     for field, data in fields.items()}
        variables |= {name: ("t", data) for name, data in self.diagnostics.items()}
        variables |= {f"invariant_drift_{name}": ("t", data, {"description": _DESCRIBED["invariant_drift"][1]})
                      for name, data in self.invariant_drift.items()}
        variables |= {f"path_{name}": dims(["kept_path", "t"], name, data) for name, data in self.paths.items()}
        variables |= {f"snapshot_{name}": dims(["t_snapshot", "path"], name, data)
                      for name, data in self.snapshots.items() if name != "t_snapshot"}
        variables |= {f"time_average_{name}": dims(["path"], name, data) for name, data in self.time_averages.items()}
        coords = {"t": self.t} | ({"t_snapshot": self.snapshots["t_snapshot"]} if self.snapshots else {})
        ds = xr.Dataset(variables, coords=coords, attrs={k: v for k, v in self.attrs.items()
                                                         if isinstance(v, (str, int, float, bool))})
        for name in ds.variables:
            field = name.rsplit("_", 1)[-1] if name not in _DESCRIBED and name not in self.diagnostics else name
            units, description = _described(field)
            if description != field:
                ds[name].attrs.update({"description": description} | ({"units": units} if units else {}))
        return ds


# --- checked datasets (also used for convergence.h5) ---------------------------------------------------
def create_checked_dataset(group: h5py.Group, name: str, data, **attrs) -> h5py.Dataset:
    """A dataset with HDF5's fletcher32 checksum (it needs chunks, so not for scalars or empty arrays)."""
    data = np.asarray(data)
    filtered = data.ndim > 0 and data.size > 0
    dataset = group.create_dataset(name, data=data, fletcher32=filtered, chunks=True if filtered else None)
    dataset.attrs.update(attrs)
    return dataset


_DIGESTS = ("content_digest", "attributes_digest")     # file attributes that are not content


def content_digest(datasets: dict[str, np.ndarray]) -> str:
    """sha256 over every dataset's name, dtype, shape and values."""
    return _sha256(datasets)


def attributes_digest(attrs: dict) -> str:
    """sha256 over the file's attributes but the digests: variable-length strings (``config``) live in
    HDF5's global heap, which has no checksum of its own."""
    return _sha256({k: v for k, v in attrs.items() if k not in _DIGESTS})


def _sha256(named: dict) -> str:
    h = hashlib.sha256()
    for name in sorted(named):
        data = np.ascontiguousarray(named[name])
        h.update(f"{name}|{data.dtype.str}|{data.shape}|".encode())
        # An object array's bytes are pointers (variable-length strings): hash its values instead.
        h.update(repr(data.tolist()).encode() if data.dtype.hasobject else data.tobytes())
    return h.hexdigest()


# What a damaged file makes HDF5 raise while it is read: its errors (OSError, or KeyError for a link
# it cannot follow), and the decoding errors of metadata that no longer makes sense.
READ_ERRORS = (OSError, KeyError, ValueError, RuntimeError, TypeError)


def _first_line(err: BaseException) -> str:
    return (str(err).splitlines() or [type(err).__name__])[0]


def unopenable(err: OSError) -> str:
    """What is wrong with a file HDF5 cannot open, in words."""
    message = str(err)
    truncated = re.search(r"truncated file: eof = (\d+).*stored_eof = (\d+)", message)
    if truncated:
        return f"truncated ({truncated[1]} of its {truncated[2]} bytes are there)"
    if "file signature not found" in message:
        return "not an HDF5 file"
    return f"cannot be opened ({_first_line(err)})"


def checked_read(path: Path) -> tuple[dict[str, np.ndarray], dict, bool]:
    """(datasets by path, file attributes, verified) of a result file; DamagedFile when it does not
    read back whole, FileNotFoundError when there is none. A file written before checksums existed
    has no content digest: read, but not verified."""
    with _open(path) as f:
        datasets, attrs = _read_whole(f, path)
    stored = attrs.pop("content_digest", None)
    if stored is not None and stored != content_digest(datasets):
        raise DamagedFile(f"{path}: content digest mismatch (a dataset changed after the file was written)")
    _check_attributes(attrs, path)
    return datasets, attrs, stored is not None


def read_attributes(path: Path) -> dict:
    """A result file's attributes alone (its digests left out), checked against its attributes digest;
    DamagedFile when they do not read back whole, FileNotFoundError when there is no file."""
    with _open(path) as f:
        attrs = _attributes(f, path)
    attrs.pop("content_digest", None)
    _check_attributes(attrs, path)
    return attrs


def _open(path: Path) -> h5py.File:
    try:
        return h5py.File(path, "r")
    except FileNotFoundError:
        raise
    except OSError as err:
        raise DamagedFile(f"{path}: {unopenable(err)}") from None
    except READ_ERRORS as err:
        raise DamagedFile(f"{path}: its metadata cannot be read ({_first_line(err)})") from None


def _check_attributes(attrs: dict, path) -> None:
    """Pop the attributes digest from ``attrs`` and check the rest against it."""
    stored = attrs.pop("attributes_digest", None)
    if stored is not None and stored != attributes_digest(attrs):
        raise DamagedFile(f"{path}: attributes digest mismatch (an attribute changed after the file was written)")


def _attributes(f: h5py.File, path) -> dict:
    try:
        return {k: (v.item() if isinstance(v, np.generic) else v) for k, v in f.attrs.items()}
    except READ_ERRORS as err:     # the root object header fails its checksum: h5py raises KeyError
        raise DamagedFile(f"{path}: its metadata cannot be read ({_first_line(err)})") from None


def _read_whole(f: h5py.File, path) -> tuple[dict[str, np.ndarray], dict]:
    """Every dataset holding data (not the entry axes that only name a dimension for netCDF readers) and
    file attribute; DamagedFile naming the part that does not read."""
    attrs = _attributes(f, path)
    try:
        names = []
        f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset)
                     and not _dimension_only(obj) else None)
    except READ_ERRORS as err:
        raise DamagedFile(f"{path}: its metadata cannot be read ({_first_line(err)})") from None
    datasets = {}
    for name in names:
        try:
            datasets[name] = f[name][()]
        except READ_ERRORS as err:     # fletcher32 failures are OSErrors from the filter pipeline
            what = "checksum failure" if "filter returned failure" in str(err) else f"cannot be read ({_first_line(err)})"
            raise DamagedFile(f"{path}: {what} in dataset {name}") from None
    return datasets, attrs


def replace_atomically(path: Path, write) -> Path:
    """``write(h5py.File)`` into a file built in memory, then its bytes to ``path`` (``write_bytes_atomically``)."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    # HDF5 itself never writes to disk (the core driver without a backing store): a disk that fills
    # under HDF5 fails its flushes, leaves a file it cannot close, and crashes the process at exit.
    # The 1.8 file format (not HDF5's oldest) checksums object headers too, so a damaged header or
    # small attribute is an error.
    with h5py.File(tmp, "w", driver="core", backing_store=False, libver=("v108", "latest")) as f:
        write(f)
        datasets, attrs = _read_whole(f, tmp)   # the digests are of what the file holds
        f.attrs["content_digest"] = content_digest(datasets)
        f.attrs["attributes_digest"] = attributes_digest(attrs)
        f.flush()
        image = f.id.get_file_image()
    return write_bytes_atomically(path, image)


def write_bytes_atomically(path: Path, data: bytes) -> Path:
    """``data`` into a temporary file beside ``path``, renamed to ``path``: a file under the final name is
    always whole, two writers never share a temporary name, and a write that fails (a full disk) is one
    OSError that leaves nothing behind (result files, and the tables and plots that summarize them)."""
    path = Path(path)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.{secrets.token_hex(4)}.partial")
    try:
        with open(tmp, "xb") as out:            # exclusive creation, with the process's umask
            out.write(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


# --- ensemble.h5 --------------------------------------------------------------------------------------
def write_text_atomically(path: Path, text: str) -> Path:
    """``text``, UTF-8, as the file ``path``, written whole (``write_bytes_atomically``)."""
    return write_bytes_atomically(path, text.encode())


def _scale(f: h5py.Group, name: str, data, units: str | None, description: str) -> h5py.Dataset:
    scale = create_checked_dataset(f, name, data, description=description, **({"units": units} if units else {}))
    scale.make_scale(name.rsplit("/", 1)[-1])
    return scale


def create_series(f: h5py.File, name: str, data, *axes, entry: str | None = None, **attrs) -> h5py.Dataset:
    """A checked dataset with a dimension scale on every axis, which netCDF readers need to name them:
    ``axes`` for the leading axes (scales, or "t": the file's output times, copied into the dataset's
    group on first use), then ``<entry>_axis<i>`` (``entry``: the dataset's name) for the entries of a
    vector observable or an array view."""
    dataset = create_checked_dataset(f, name, data, **attrs)
    group, entry = dataset.parent, entry or name.rsplit("/", 1)[-1]
    for i in range(dataset.ndim):
        if i >= len(axes):
            axis = _entry_axis(group, f"{entry}_axis{i - len(axes)}", dataset.shape[i])
        elif isinstance(axes[i], str):
            axis = group[axes[i]] if axes[i] in group else _scale(group, axes[i], f[axes[i]][()], *_DESCRIBED["t"])
        else:
            axis = axes[i]
        dataset.dims[i].attach_scale(axis)
    return dataset


def _dimension_only(dataset: h5py.Dataset) -> bool:
    """An entry axis (``_entry_axis``): it names a dimension and holds no data. Told by its scale name, never
    by its own name (``body_axis1`` is an observable, ``body_axis_axis0`` the entry axis of ``body_axis``)."""
    name = dataset.attrs.get("NAME", b"")
    return (name.decode() if isinstance(name, bytes) else str(name)).startswith(_DIMENSION_ONLY)


def _entry_axis(group: h5py.Group, name: str, length: int) -> h5py.Dataset:
    if name not in group:
        create_checked_dataset(group, name, np.zeros(length, "f4")).make_scale(f"{_DIMENSION_ONLY}{length:10}")
    return group[name]


def write(path: Path, ens: Ensemble, extra=None) -> Path:
    """``ens`` as an ensemble.h5; ``extra(h5py.File)`` adds what a kind of run stores besides (a
    convergence study's errors and fitted order), inside the same checksums and digests."""
    def fill(f: h5py.File) -> None:
        f.attrs["schema_version"] = SCHEMA_VERSION
        for k, v in ens.attrs.items():
            f.attrs[k] = v
        f.attrs["observables"] = list(ens.observables)
        _scale(f, "t", ens.t, *_DESCRIBED["t"])
        kept = len(next(iter(ens.paths.values()))) if ens.paths else 0
        paths = len(next(iter(ens.time_averages.values()))) if ens.time_averages else \
            ens.snapshots[next(k for k in ens.snapshots if k != "t_snapshot")].shape[1] if len(ens.snapshots) > 1 else 0
        kept_path = _scale(f, "kept_path", np.arange(kept), None, "index of a kept path") if ens.paths else None
        path_scale = _scale(f, "path", np.arange(paths), None, "path index") if paths else None

        for name, fields in ens.observables.items():
            for field, data in fields.items():
                units, description = _DESCRIBED[field]
                create_series(f, f"observables/{name}/{field}", data, "t", entry=name, description=description,
                              **({"units": units} if units else {}))
        for name, data in ens.paths.items():
            create_series(f, f"paths/{name}", data, kept_path, "t", description=f"{name} along each kept path")
        for name, data in ens.diagnostics.items():
            units, description = _described(name)
            create_series(f, f"diagnostics/{name}", data, "t", description=description,
                          **({"units": units} if units else {}))
        if ens.snapshots:
            # Not named t: a netCDF dimension is one length in a group and the groups below it.
            t_snapshot = _scale(f, "snapshots/t_snapshot", ens.snapshots["t_snapshot"], "time", "snapshot times")
            for name, data in ens.snapshots.items():
                if name != "t_snapshot":
                    create_series(f, f"snapshots/{name}", data, t_snapshot, path_scale,
                                  description=f"every path's {name}")
        for name, data in ens.time_averages.items():
            create_series(f, f"time_averages/{name}", data, path_scale,
                          description=f"every path's time average of {name} over attrs time_average")
        for name, data in ens.invariant_drift.items():
            create_series(f, f"invariant_drift/{name}", data, "t", description=_DESCRIBED["invariant_drift"][1])
        if extra is not None:
            extra(f)

    return replace_atomically(path, fill)


def load(path) -> Ensemble:
    """Read an ``ensemble.h5`` (or the run directory holding one) into plain numpy arrays; raises
    ``DamagedFile`` for a file that does not read back whole.

    Example:

        >>> import sgi_run
        >>> result = sgi_run.run(sgi_run.compose(["plan.paths=100", "plan.T=2", "plan.snapshots=[2]"]))
        >>> ens = sgi_run.load(result.run_dir)
        >>> ens.t, ens.attrs["paths"]
        (array([0., 1., 2.]), 100)
    """
    path = Path(path)
    if path.is_dir():
        path = path / "ensemble.h5"
    datasets, attrs, verified = checked_read(path)
    version = int(attrs.get("schema_version", -1))
    if version not in READABLE_SCHEMAS:
        raise ValueError(f"{path}: schema_version={version} is not readable: this sgi-run reads "
                         f"{', '.join(map(str, READABLE_SCHEMAS))}")
    if "snapshots/t" in datasets and "snapshots/t_snapshot" not in datasets:   # v1's name of the snapshot times
        datasets["snapshots/t_snapshot"] = datasets.pop("snapshots/t")
    coordinates = re.compile(r"(observables/[^/]+|paths|diagnostics|snapshots|time_averages|invariant_drift)/t$")

    def group(prefix: str) -> dict[str, np.ndarray]:
        """The group's series; its coordinates (v2's copies of t) are not data (entry axes are not read)."""
        return {name.split("/", 1)[1]: data for name, data in datasets.items()
                if name.startswith(prefix + "/") and not coordinates.match(name)}

    observables: dict[str, dict[str, np.ndarray]] = {}
    for name, data in group("observables").items():
        observable, field = name.rsplit("/", 1)
        observables.setdefault(observable, {})[field] = data
    order = [str(n) for n in attrs.pop("observables", sorted(observables))]
    required = ["t", "diagnostics/nonfinite_paths"] + [f"observables/{name}/{field}" for name in order
                                                       for field in ("mean", "var", "count")]
    missing = [name for name in required if name not in datasets]
    if missing:
        raise DamagedFile(f"{path}: missing dataset {', '.join(missing)}")
    return Ensemble(datasets["t"], {name: observables[name] for name in order}, group("paths"),
                    group("diagnostics"), attrs, group("snapshots"), group("time_averages"), verified,
                    group("invariant_drift"))
