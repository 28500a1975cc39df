"""One lazy, Dask-backed variable from the metadata scans of its files, and several
variables on one grid and time axis as one dataset: what :func:`~pangeo_hpc.io.era5.open_era5`
and :func:`~pangeo_hpc.io.files.open_files` share.

The data are a :class:`~pangeo_hpc.io.fused.SummingArray` (a
:class:`~pangeo_hpc.io.reader.MultiFileArray` that sums area means as it reads) read
without xarray's lock, in chunks of whole fields that never span two files. The time axis
and its bounds (``time1`` and ``time1_bounds`` of ERA5's forecast variables, ``time_bnds``
of CMIP files) come from the scans, each file's values decoded with its own ``units`` and
``calendar``.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import dask.array as da
import numpy as np
import xarray as xr
from dask.base import tokenize

from pangeo_hpc.errors import InputError
from pangeo_hpc.io.fused import SummingArray
from pangeo_hpc.io.hdf5_meta import FileInfo, Head
from pangeo_hpc.io.reader import Source

#: attributes of the files that are encoding or HDF5 plumbing, not the variable's
DIMS_ATTR_SKIP = (
    "DIMENSION_LIST",
    "REFERENCE_LIST",
    "CLASS",
    "NAME",
    "_Netcdf4Dimid",
    "_Netcdf4Coordinates",
    "_FillValue",
    "scale_factor",
    "add_offset",
    "missing_value",
    "_nc3_strict",
)

_STANDARD = {None: "standard", "gregorian": "standard", "standard": "standard"}


def lazy_dataset(
    variable: str,
    files: Sequence[str],
    infos: Sequence[FileInfo],
    sources: Sequence[Source],
    head: Head,
    chunk_mb: float,
    *,
    name: str,
) -> xr.Dataset:
    """``variable`` of ``files`` (in time order) as a lazy dataset with its time axis,
    the time bounds when every file has them, the grid of ``head`` and its attributes.

    ``name`` starts the Dask key (``open_era5``, ``open_files``).

    Parameters
    ----------
    variable : str
        The variable's name.
    files : Sequence[str]
        Paths or URLs, in time order.
    infos : Sequence[FileInfo]
        The scan of each file.
    sources : Sequence[Source]
        What reads each file.
    head : Head
        What the first file tells of all.
    chunk_mb : float
        Target size of a Dask chunk, in MB.
    name : str
        The start of the Dask key.

    Returns
    -------
    xr.Dataset
        Lazy, one variable.

    Raises
    ------
    InputError
        When a file's grid or dtype differs from the first file's.

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> from pangeo_hpc.io.catalog import catalog
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst, t2m = "sea_surface_temperature", "air_temperature_at_2_metres"
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(tmp.name, spec, sst, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     cat = catalog(tmp.name, sst, "2000-01", "2000-02")
    >>> ds = lazy_dataset(sst, cat.files, cat.infos, cat.sources, cat.head, 128, name="open_files")
    >>> ds[sst].shape, ds[sst].chunks[0]  # lazy: one chunk per file
    ((60, 19, 36), (31, 29))
    >>> tmp.cleanup()
    """
    ref = infos[0]
    time_dim, *field_dims = head.dims
    for path, info in zip(files[1:], infos[1:], strict=True):
        if info.field_shape != ref.field_shape or info.dtype != ref.dtype:
            raise InputError(
                f"{path!r} has {variable} of shape {info.field_shape} {info.dtype}, "
                f"but {files[0]!r} has {ref.field_shape} {ref.dtype}: all files must "
                "share one grid; remove or regrid the odd file"
            )
    lengths = [info.length for info in infos]
    times = decode_times(time_dim, [i.times for i in infos], infos, head.time_attrs, files)
    decodings = [info.decoding for info in infos]
    dtype = max((d.value_dtype(ref.dtype) for d in decodings), key=lambda d: d.itemsize)
    array = SummingArray(sources, lengths, ref.field_shape, dtype, decodings)
    chunks = _time_chunks(lengths, ref.chunk_time, ref.field_shape, dtype, chunk_mb)
    data = da.from_array(
        array,
        chunks=(chunks, *ref.field_shape),
        lock=False,
        asarray=False,
        meta=np.empty((0,) * array.ndim, dtype),
        name=f"{name}-{variable}-" + tokenize(list(sources), lengths, dtype, decodings),
    )
    time_attrs = dict(head.time_attrs)
    coords: dict[str, xr.DataArray | tuple] = {}
    bounds_name = ref.bounds_name
    if bounds_name and all(i.bounds is not None for i in infos):
        raw = [i.bounds for i in infos]
        bounds = decode_times(bounds_name, raw, infos, time_attrs, files)  # type: ignore[arg-type]
        nv = head.bounds_dims[-1] if len(head.bounds_dims) == 2 else "nv"
        coords[bounds_name] = ((time_dim, nv), bounds)
    else:
        time_attrs.pop("bounds", None)  # no bounds variable to point to
    var_attrs = {k: v for k, v in head.var_attrs.items() if k not in DIMS_ATTR_SKIP}
    time_coord = xr.DataArray(
        times,
        dims=(time_dim,),
        attrs={k: v for k, v in time_attrs.items() if k not in ("units", "calendar")},
    )
    ds = xr.Dataset(
        {variable: ((time_dim, *field_dims), data, var_attrs)},
        coords={time_dim: time_coord, **head.coords, **coords},
        attrs=dict(head.attrs),
    )
    ds[time_dim].encoding.update(
        units=ref.time_units or time_attrs.get("units"),
        calendar=ref.calendar or time_attrs.get("calendar", "standard"),
    )
    return ds


def decode_times(
    name: str,
    values: Sequence[np.ndarray],
    infos: Sequence[FileInfo],
    attrs: dict,
    files: Sequence[str],
) -> np.ndarray:
    """The stored times (or bounds) of each file as dates, decoded by xarray's public CF
    coder as ``xr.open_dataset`` decodes them, with the file's ``units`` and ``calendar``
    (those of ``attrs``, the first file's, where a scan did not read them). Consecutive
    files with the same units are decoded together.

    Parameters
    ----------
    name : str
        The coordinate's name (time, or its bounds).
    values : Sequence[np.ndarray]
        The stored values of each file.
    infos : Sequence[FileInfo]
        The scan of each file.
    attrs : dict
        The first file's time attributes.
    files : Sequence[str]
        Paths or URLs, for messages.

    Returns
    -------
    np.ndarray
        The dates of all files, concatenated.

    Raises
    ------
    InputError
        When the files' calendars differ, or their dates decode to different types.

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> from pangeo_hpc.io.catalog import catalog
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst, t2m = "sea_surface_temperature", "air_temperature_at_2_metres"
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(tmp.name, spec, sst, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     cat = catalog(tmp.name, sst, "2000-01", "2000-02")
    >>> values = [info.times for info in cat.infos]  # hours since 1900
    >>> dates = decode_times("time0", values, cat.infos, cat.head.time_attrs, cat.files)
    >>> dates.shape, str(dates[0]), str(dates[-1])
    ((60,), '2000-01-01T00:00:00.000000000', '2000-02-29T00:00:00.000000000')
    >>> tmp.cleanup()
    """
    keys = [
        (info.time_units or attrs.get("units"), info.calendar or attrs.get("calendar"))
        for info in infos
    ]
    calendars = [_STANDARD.get(c, c) for _, c in keys]
    for i in range(1, len(keys)):
        if calendars[i] != calendars[0]:
            raise InputError(
                f"{files[i]!r} has calendar {calendars[i]!r} but {files[0]!r} has "
                f"{calendars[0]!r}: files opened together must share one calendar; open "
                "them separately"
            )
    out: list[np.ndarray] = []
    i = 0
    while i < len(keys):
        j = i + 1
        while j < len(keys) and keys[j] == keys[i]:
            j += 1
        units, calendar = keys[i]
        group = {"units": units, **({"calendar": calendar} if calendar else {})}
        raw = np.concatenate(values[i:j])
        out.append(_decode(name, raw, group, files[i]))
        i = j
    if len(out) == 1:
        return out[0]
    if len({o.dtype.kind for o in out}) > 1:  # datetime64 in some, cftime in others
        raise InputError(
            f"the times of {files[0]!r} and {files[-1]!r} decode to different types (dates "
            "outside 1678..2262 need cftime): open them separately"
        )
    return np.concatenate(out)


def _decode(name: str, values: np.ndarray, attrs: dict, path: object) -> np.ndarray:
    if "since" not in str(attrs.get("units", "")):
        raise InputError(
            f"time variable {name!r} of {str(path)!r} has units {attrs.get('units')!r}, not "
            "dates: give it CF units such as 'hours since 1900-01-01 00:00:00'"
        )
    dims = (name,) if values.ndim == 1 else (name, "nv")
    raw = xr.Variable(dims, values, attrs)
    return np.asarray(xr.coders.CFDatetimeCoder().decode(raw, name=name).values)


def _time_chunks(
    lengths: list[int], hdf5_time: int, field_shape: tuple[int, ...], dtype: np.dtype, mb: float
) -> tuple[int, ...]:
    """Chunks along time: multiples of the HDF5 chunk, about ``mb`` each, never across files."""
    per_step = float(np.prod(field_shape)) * dtype.itemsize
    steps = max(1, int(mb * 1e6 // per_step))
    steps = max(hdf5_time, steps // hdf5_time * hdf5_time)
    out: list[int] = []
    for n in lengths:
        out += [steps] * (n // steps) + ([n % steps] if n % steps else [])
    return tuple(out)


def merge_variables(parts: Sequence[tuple[str, xr.Dataset, str]]) -> xr.Dataset:
    """Datasets of one variable each, ``(variable, dataset, its first file)``, as one:
    they must share the grid and the time axis (an error names both otherwise).

    Parameters
    ----------
    parts : Sequence[tuple[str, xr.Dataset, str]]
        ``(variable, dataset, its first file)`` each.

    Returns
    -------
    xr.Dataset
        All the variables.

    Raises
    ------
    InputError
        When two variables differ in grid or time axis.

    Examples
    --------
    >>> import dask, tempfile
    >>> from pangeo_hpc.demo import DemoSpec
    >>> from pangeo_hpc.demo.writer import write_month
    >>> from pangeo_hpc.inputs.periods import months
    >>> from pangeo_hpc.io.catalog import catalog
    >>> tmp, spec = tempfile.TemporaryDirectory(), DemoSpec(resolution=10.0).resolved()
    >>> sst, t2m = "sea_surface_temperature", "air_temperature_at_2_metres"
    >>> for m in months("2000-01", "2000-02"):  # two months of demo files, 10 degree cells
    ...     _ = write_month(tmp.name, spec, sst, m)
    ...     _ = write_month(tmp.name, spec, t2m, m)
    >>> with dask.config.set({"pangeo-hpc.catalog.cache": False}):  # no scan cache kept
    ...     cat = catalog(tmp.name, sst, "2000-01", "2000-02")
    ...     cat_t2m = catalog(tmp.name, t2m, "2000-01", "2000-02")
    >>> parts = [(v, lazy_dataset(v, c.files, c.infos, c.sources, c.head, 128, name="open_files"),
    ...           c.files[0]) for v, c in ((sst, cat), (t2m, cat_t2m))]
    >>> list(merge_variables(parts).data_vars)
    ['sea_surface_temperature', 'air_temperature_at_2_metres']
    >>> tmp.cleanup()
    """
    v0, ds0, f0 = parts[0]
    a = ds0[v0]
    for v, ds, f in parts[1:]:
        b = ds[v]
        same_grid = a.dims[1:] == b.dims[1:] and a.shape[1:] == b.shape[1:]
        same_grid = same_grid and all(
            (d in a.coords) == (d in b.coords)
            and (d not in a.coords or np.array_equal(a[d].values, b[d].values))
            for d in a.dims[1:]
        )
        if not same_grid:
            raise InputError(
                f"{v!r} ({f!r}) is on the grid {_grid_text(b)} but {v0!r} ({f0!r}) on "
                f"{_grid_text(a)}: variables opened together must share one grid; open them "
                "separately or regrid one (cdo remapbil)"
            )
        ta, tb = a[a.dims[0]].values, b[b.dims[0]].values
        if a.dims[0] != b.dims[0] or ta.shape != tb.shape or not (ta == tb).all():
            raise InputError(
                f"{v!r} ({f!r}) has the time axis {_time_text(b)} but {v0!r} ({f0!r}) "
                f"{_time_text(a)}: variables opened together must share one time axis; open "
                "them separately, or choose a period both cover with start=/end="
            )
    return xr.merge(
        [ds for _, ds, _ in parts], compat="override", join="exact", combine_attrs="override"
    )


#: a span of the time axis read from one file per variable: (first step, stop, files)
Piece = tuple[int, int, tuple[str, ...]]


def file_spans(files: Sequence[str], lengths: Sequence[int]) -> list[tuple[int, int, str]]:
    """Each file's steps on the time axis of their concatenation: ``(first, stop, file)``.

    Parameters
    ----------
    files : Sequence[str]
        Paths or URLs, in time order.
    lengths : Sequence[int]
        The number of time steps in each.

    Returns
    -------
    list[tuple[int, int, str]]
        ``(first, stop, file)`` each.

    Examples
    --------
    >>> file_spans(["2008-01.nc", "2008-02.nc"], [31, 29])
    [(0, 31, '2008-01.nc'), (31, 60, '2008-02.nc')]
    """
    ends = np.cumsum(lengths)
    return [(int(e - n), int(e), f) for f, n, e in zip(files, lengths, ends, strict=True)]


def time_pieces(spans: Sequence[Sequence[tuple[int, int, str]]], n: int) -> list[Piece]:
    """The time axis (``n`` steps) cut where any variable's file changes: each piece comes
    from one file per variable (a file holding two variables counted once).

    ``spans`` holds each variable's :func:`file_spans`, clipped to the steps opened. The
    pieces are what an incremental run keeps a state for
    (:mod:`pangeo_hpc.batch.incremental.run`).

    Parameters
    ----------
    spans : Sequence[Sequence[tuple[int, int, str]]]
        Each variable's :func:`file_spans`.
    n : int
        The number of time steps.

    Returns
    -------
    list[Piece]
        The pieces, in time order.

    Examples
    --------
    >>> t2m = file_spans(["t2m-01.nc", "t2m-02.nc"], [31, 29])
    >>> tp = file_spans(["tp-01-02.nc"], [60])
    >>> time_pieces([t2m, tp], 60)
    [(0, 31, ('t2m-01.nc', 'tp-01-02.nc')), (31, 60, ('t2m-02.nc', 'tp-01-02.nc'))]
    """
    cuts = sorted(
        {0, n, *(a for v in spans for a, _, _ in v), *(b for v in spans for _, b, _ in v)}
    )
    # a span covers the cuts from its start's to its end's (both are cuts): one pass over
    # the spans, not one over every span per piece (241 monthly files: 58 000 tests)
    at = {c: k for k, c in enumerate(cuts)}
    files: list[list[str]] = [[] for _ in cuts]
    for v in spans:
        for lo, hi, f in v:
            for k in range(at[lo], at[hi]):
                files[k].append(f)
    pieces = []
    for k, (a, b) in enumerate(itertools.pairwise(cuts)):
        if 0 <= a < b <= n:
            pieces.append((a, b, tuple(dict.fromkeys(files[k]))))
    return pieces


def clip_spans(
    spans: Sequence[tuple[int, int, str]], lo: int, hi: int
) -> list[tuple[int, int, str]]:
    """``spans`` on the axis of steps ``lo:hi`` (a period that starts or ends inside a file).

    Parameters
    ----------
    spans : Sequence[tuple[int, int, str]]
        ``(first, stop, file)`` each.
    lo : int
        The first step opened.
    hi : int
        The step after the last one opened.

    Returns
    -------
    list[tuple[int, int, str]]
        The spans that overlap, shifted by ``lo``.

    Examples
    --------
    >>> spans = file_spans(["2008-01.nc", "2008-02.nc"], [31, 29])
    >>> clip_spans(spans, 20, 40)  # days 20 to 39 opened
    [(0, 11, '2008-01.nc'), (11, 20, '2008-02.nc')]
    """
    out = []
    for a, b, f in spans:
        a, b = max(a, lo), min(b, hi)
        if a < b:
            out.append((a - lo, b - lo, f))
    return out


def _grid_text(array: xr.DataArray) -> str:
    """``lat x lon (181, 360), lat 90..-90, lon 0..359`` for messages."""
    dims = array.dims[1:]
    text = f"{' x '.join(map(str, dims))} {tuple(array.shape[1:])}"
    for d in dims:
        if d in array.coords and array[d].size:
            values = array[d].values
            text += f", {d} {values[0]:.6g}..{values[-1]:.6g}"
    return text


def _time_text(array: xr.DataArray) -> str:
    """``time0: 744 steps 2000-01-01T00..2000-01-31T23`` for messages."""
    t = array[array.dims[0]].values
    span = f"{str(t[0])[:13]}..{str(t[-1])[:13]}" if t.size else "empty"
    return f"{array.dims[0]}: {t.size} steps {span}"


def variable_names(variable: object, param: str) -> list[str]:
    """``variable`` (a name or a list of names) as a list of distinct names.

    Parameters
    ----------
    variable : object
        A name, or a list of names.
    param : str
        The parameter's name, for messages.

    Returns
    -------
    list[str]
        The names.

    Raises
    ------
    InputError
        When ``variable`` is neither, or names a variable twice.

    Examples
    --------
    >>> variable_names("t2m", "variable"), variable_names(["t2m", "tp"], "variable")
    (['t2m'], ['t2m', 'tp'])
    """
    names = [variable] if isinstance(variable, str) else variable
    if (
        not isinstance(names, list | tuple)
        or not names
        or not all(isinstance(v, str) and v for v in names)
    ):
        raise InputError(
            f"{param}={variable!r} is not a variable name or a list of them: give one such "
            "as 'sea_surface_temperature' or a list such as ['eastward_wind_at_10_metres', "
            "'northward_wind_at_10_metres']",
            param=param,
        )
    if len(set(names)) < len(names):
        raise InputError(f"{param}={list(names)!r} names a variable twice: name each once")
    return list(names)
