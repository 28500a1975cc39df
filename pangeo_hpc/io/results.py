"""A run's result read back: ``result.nc`` or ``result.zarr`` of a result folder or of an
``s3://`` prefix, as its ``summary.json`` names it.

On S3 only a complete run is read: the manifest (``PREFIX/summary.json``, written last) and
every object it lists with the size and ETag recorded
(:func:`pangeo_hpc.write.s3_outputs.current_run`); ``result.nc`` is fetched with
``If-Match`` on its ETag, so the bytes read are the ones the manifest lists even if the
run is replaced meanwhile (a reader gets the old run, the new one, or an error that says
to read again; never a mix).
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import xarray as xr

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3.options import S3Options, is_s3

__all__ = ["open_result", "result_summary"]


def result_summary(where: str | Path, s3: S3Options | None = None) -> dict[str, Any]:
    """The ``summary.json`` of the result at ``where`` (a folder, or an ``s3://`` prefix
    whose run is checked complete).

    Parameters
    ----------
    where : str | Path
        A folder, or an ``s3://`` prefix.
    s3 : S3Options | None, optional
        How to reach S3 (default from ``pangeo-hpc.s3``).

    Returns
    -------
    dict[str, Any]
        The summary.

    Raises
    ------
    InputError
        For a folder without ``summary.json``, or a prefix without a complete run.

    Examples
    --------
    >>> summary = result_summary("out/sst-trend")  # doctest: +SKIP
    >>> result_summary(".")  # no run finished here
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: '.' has no summary.json: give the --out folder of a run ...
    """
    if is_s3(where):
        from pangeo_hpc.write.s3_outputs import current_run

        return current_run(str(where), s3).manifest
    path = Path(where) / "summary.json"
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise InputError(
            f"{str(where)!r} has no summary.json: give the --out folder of a run that finished"
        ) from None
    except ValueError as exc:
        raise InputError(f"{str(path)!r} cannot be read as JSON ({exc}): run again") from None
    if not isinstance(doc, dict) or "outputs" not in doc:
        raise InputError(f"{str(path)!r} names no outputs: give a recipe's result folder")
    return doc


def open_result(where: str | Path, s3: S3Options | None = None) -> xr.Dataset:
    """The result dataset of a run written to ``where``.

    Parameters
    ----------
    where : str or path
        The run's ``--out``: a folder, or ``s3://bucket/prefix``.
    s3 : S3Options, optional
        Endpoint and credentials for ``s3://``; default :meth:`S3Options.resolve`.

    Returns
    -------
    xarray.Dataset
        ``result.nc`` loaded, or ``result.zarr`` opened lazily (``xr.open_zarr``).

    Raises
    ------
    InputError
        If ``where`` holds no finished run (on S3: no manifest, or an object it lists is
        missing or changed).

    Examples
    --------
    >>> ds = open_result("s3://my-bucket/results/sst-mean")      # doctest: +SKIP
    """
    if not is_s3(where):
        doc = result_summary(where)
        data = Path(where) / str(doc["outputs"]["data"])
        if data.suffix == ".zarr":
            return xr.open_zarr(data)
        with xr.open_dataset(data) as ds:
            return ds.load()
    from pangeo_hpc.write.s3_outputs import current_run

    opts = s3 or S3Options.resolve()
    run = current_run(str(where), opts)
    name = str(run.manifest["outputs"]["data"])
    url = run.url_of(name)
    if name.endswith(".zarr"):
        return xr.open_zarr(url, storage_options=opts.storage_options())
    import obstore

    key = run.target.key(str(run.manifest["run"]), name)
    etag = run.manifest["objects"][key]["etag"]
    try:
        blob = obstore.get(run.target.store, key, options={"if_match": etag}).bytes()
    except Exception as exc:
        if type(exc).__name__ not in ("PreconditionError", "NotFoundError"):
            raise
        raise InputError(
            f"{url} was replaced while it was read (its ETag changed): read it again"
        ) from None
    with xr.open_dataset(io.BytesIO(bytes(blob)), engine="h5netcdf") as ds:
        return ds.load()
