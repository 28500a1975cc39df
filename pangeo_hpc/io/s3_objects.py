"""The S3 objects a dataset covers: one HEAD per month of a variable in the era5-pds
layout (size, ETag, version: the :class:`~pangeo_hpc.inputs.stamps.Stamp` every cache keys
on), or a listing for ``index``; with one-line errors naming what is missing and the call
that lists what is there.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import DataNotFoundError
from pangeo_hpc.inputs.periods import Month, month_ranges, months, parse_month
from pangeo_hpc.inputs.stamps import Stamp
from pangeo_hpc.io.layout import key_month
from pangeo_hpc.io.s3_runs import run_location
from pangeo_hpc.s3.failures import explain
from pangeo_hpc.s3.options import S3Options, split_url
from pangeo_hpc.s3.waiting import Notice

__all__ = ["objects_to_index"]


def objects_to_index(
    url: str,
    opts: S3Options,
    *,
    variable: str | None = None,
    start: str | None = None,
    end: str | None = None,
    suffixes: Sequence[str] = (".nc", ".nc4", ".h5", ".hdf5"),
) -> list[Stamp]:
    """The objects under ``url`` that ``index`` makes byte-range indexes for.

    With ``variable``: its monthly files in the era5-pds layout from ``start`` to ``end``
    (default: all there are). Without: every object whose name ends in one of ``suffixes``;
    with ``start`` or ``end`` too, those of every variable in that period (keys in the
    layout ``pangeo-hpc.data.layout``). A prefix that pangeo-hpc wrote is indexed as its
    current run (:func:`pangeo_hpc.io.s3_runs.run_location`).

    Parameters
    ----------
    url : str
        An ``s3://`` prefix.
    opts : S3Options
        How to reach S3.
    variable : str | None, optional
        A variable's name, or ``None`` for all.
    start : str | None, optional
        First month, or ``None``.
    end : str | None, optional
        Last month, or ``None``.
    suffixes : Sequence[str], optional
        Object name endings indexed without ``variable``.

    Returns
    -------
    list[Stamp]
        The objects' stamps.

    Raises
    ------
    DataNotFoundError
        When months are missing, or the prefix holds no such object.

    Examples
    --------
    >>> opts = S3Options(anon=True)  # doctest: +SKIP
    >>> url, sst = "s3://era5-pds", "sea_surface_temperature"
    >>> stamps = objects_to_index(url, opts, variable=sst, end="2008-12")  # doctest: +SKIP
    >>> stamps[-1].path  # 's3://era5-pds/2008/12/data/sea_surface_temperature.nc'  # doctest: +SKIP
    """
    url = run_location(url, opts, flag="url").url
    if variable is not None:
        if start is None or end is None:
            first, last = _s3_span(url, variable, opts)
            start, end = start or first, end or last
        bucket, prefix = split_url(url)
        base = f"s3://{bucket}/{prefix}".rstrip("/")
        pattern = config.get("data.layout")
        wanted = months(start, end)
        urls = [
            f"{base}/" + pattern.format(year=m.year, month=m.month, variable=variable)
            for m in wanted
        ]
        what = f"HEAD of {len(urls)} object{'s' * (len(urls) != 1)} under {url}"
        with Notice(opts, what) as notice:

            def head(u: str) -> Stamp | None:
                found = _head(u, opts)
                notice.answered()
                return found

            heads = map_threads(head, urls)
        missing = [m for m, h in zip(wanted, heads, strict=True) if h is None]
        if missing:
            _check_bucket(url, opts)
            call = _inventory_call(url)
            raise DataNotFoundError(
                f"{len(missing)} of {len(wanted)} months of {variable!r} are missing under "
                f"{url!r} ({month_ranges(missing)}): choose a period that exists with "
                f"start=/end= ({call} lists what is there)",
                param=("start", "end"),
                commands={call: ["inventory", url]},
            )
        return [h for h in heads if h is not None]
    from pangeo_hpc.s3.listing import list_objects

    bucket, prefix = split_url(url)
    found = [
        Stamp.of_object(f"s3://{bucket}/{o.key}", o.size, o.etag, o.version)
        for o in list_objects(url, opts)
        if o.key.endswith(tuple(suffixes))
    ]
    if not found:
        call = _inventory_call(url)
        raise DataNotFoundError(
            f"no NetCDF4/HDF5 objects ({', '.join(suffixes)}) under {url!r}: check the prefix "
            f"({call})",
            commands={call: ["inventory", url]},
        )
    if start is None and end is None:
        return found
    # a period without a variable: every variable's files of those months (era5-pds layout)
    dated = []
    for stamp in found:
        key = stamp.path[len(f"s3://{bucket}/") :]
        hit = key_month(key[len(prefix) :].lstrip("/") if prefix else key)
        if hit is not None:
            dated.append((hit[0], stamp))
    if not dated:
        raise DataNotFoundError(
            f"no objects under {url!r} are in the layout {config.get('data.layout')!r}, so "
            "start=/end= select nothing: drop them to index every NetCDF4 object",
            param=("start", "end"),
        )
    first = parse_month(start, name="start") if start else min(m for m, _ in dated)
    last = parse_month(end, name="end", end=True) if end else max(m for m, _ in dated)
    months(str(first), str(last))  # the end must not come before the start
    chosen = [s for m, s in dated if first <= m <= last]
    if not chosen:
        call = _inventory_call(url)
        raise DataNotFoundError(
            f"no objects under {url!r} between {first} and {last}: choose a period that "
            f"exists ({call} lists what is there)",
            commands={call: ["inventory", url]},
        )
    return chosen


def _inventory_call(url: str) -> str:
    """The call that lists what is under ``url``, for messages (the CLI's ``inventory``)."""
    return f"pangeo_hpc.storage.inventory.inventory({url!r})"


def _check_bucket(url: str, opts: S3Options) -> None:
    """Raise the usual message if the bucket of ``url`` is missing or refuses access."""
    import obstore

    bucket, prefix = split_url(url)
    try:
        with Notice(opts, f"listing {url}"):
            obstore.list_with_delimiter(opts.store(bucket), prefix or None)
    except Exception as exc:
        raise (explain(exc, url, opts) or exc) from exc


def _head(url: str, opts: S3Options) -> Stamp | None:
    """The stamp of ``url`` (size, ETag, version), or ``None`` if it does not exist."""
    import obstore
    from obstore.exceptions import NotFoundError

    bucket, key = split_url(url)
    try:
        meta = obstore.head(opts.store(bucket), key)
    except (NotFoundError, FileNotFoundError):  # obstore raises the builtin for a 404
        return None
    except Exception as exc:
        raise (explain(exc, url, opts) or exc) from exc
    return Stamp.of_object(url, meta["size"], meta.get("e_tag"), meta.get("version"))


def _s3_span(root: str, variable: str, opts: S3Options) -> tuple[str, str]:
    """First and last month of ``variable`` under ``root``, from a listing."""
    from pangeo_hpc.s3.listing import list_objects

    prefix = split_url(root)[1]
    pattern = config.get("data.layout")
    found: list[Month] = []
    for obj in list_objects(root, opts):
        rel = obj.key[len(prefix) :].lstrip("/") if prefix else obj.key
        hit = key_month(rel, variable)
        if hit is not None:
            found.append(hit[0])
    if not found:
        call = _inventory_call(root)
        raise DataNotFoundError(
            f"no {variable!r} files under {root!r} in the layout {pattern!r}: check the "
            f"bucket and prefix ({call})",
            commands={call: ["inventory", root]},
        )
    found.sort()
    return str(found[0]), str(found[-1])


def map_threads(fn: Any, items: Sequence[Any] | range) -> list[Any]:
    """``[fn(x) for x in items]`` on a few threads (metadata reads wait on I/O).

    Parameters
    ----------
    fn : Any
        A function of one item.
    items : Sequence[Any] | range
        The items.

    Returns
    -------
    list[Any]
        The results, in order.

    Examples
    --------
    >>> map_threads(lambda x: x * x, range(5))
    [0, 1, 4, 9, 16]
    """
    items = list(items)
    if len(items) < 4:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(8) as pool:
        return list(pool.map(fn, items))
