"""An ``s3://`` prefix that pangeo-hpc wrote, read as the run its manifest makes visible.

Our writers never put a tree, a store or a result at the prefix a user names: each run
goes under ``PREFIX/run-.../`` and becomes visible through ``PREFIX/summary.json``,
written last (:mod:`pangeo_hpc.write.s3_outputs`). A reader given ``PREFIX`` (``--data``,
a recipe's ``store:``, ``index``) therefore reads where the manifest points, after
checking every object it lists (:func:`~pangeo_hpc.write.s3_outputs.current_run`), so a
user names ``s3://bucket/demo`` as it was written, never ``.../run-...`` by hand.

The rule of every reader of our prefixes: only a run that a manifest of ours names is
trusted. :func:`run_location` decides, from one GET of ``PREFIX/summary.json`` and, when
there is none, one delimiter listing of ``PREFIX/``:

* a manifest of ours: the current run's location (checked object by object);
* ``PREFIX/run-...`` named by hand: itself if its parent's manifest names it, else refused
  with the parent to give instead (a replaced or unfinished run is never read);
* no manifest, but ``run-...`` prefixes below (an upload that failed or was killed):
  refused in one line, with ``cleanup`` as the fix;
* anything else (a whole bucket such as ``s3://era5-pds``, a tree or store a user wrote,
  a user's own ``summary.json``): the URL unchanged. So is a prefix where these requests
  are refused (S3 answers 403, not 404, for a missing key of a public bucket read
  anonymously; a bucket that does not exist): the reader's own first request meets the
  same failure and explains it. An endpoint that does not answer is named at once
  (:mod:`pangeo_hpc.s3.failures`, after :class:`~pangeo_hpc.s3.waiting.Notice`'s line).
"""

from __future__ import annotations

from typing import NamedTuple

from pangeo_hpc.errors import InputError, named
from pangeo_hpc.s3.failures import explain, timed_out
from pangeo_hpc.s3.options import S3Options, split_url
from pangeo_hpc.s3.waiting import Notice
from pangeo_hpc.write.s3_guard import S3Target, read_manifest
from pangeo_hpc.write.s3_outputs import RUN_PREFIX, current_run

__all__ = ["Located", "run_location"]


class Located(NamedTuple):
    """Where a reader reads: ``url``, and the ``kind`` of the run of ours there (``demo``,
    ``zarr``, ``result``; ``None`` for anything else).

    Attributes
    ----------
    url : str
        Where to read.
    kind : str or None
        ``demo``, ``zarr``, ``result``, or ``None``.

    Examples
    --------
    >>> Located("s3://bucket/sst.zarr/runs/0001", "zarr")
    Located(url='s3://bucket/sst.zarr/runs/0001', kind='zarr')
    """

    url: str
    kind: str | None = None


def run_location(url: str, s3: S3Options | None = None, *, flag: str = "data") -> Located:
    """Where to read ``url``: the current run of a prefix pangeo-hpc wrote, else ``url``.

    Parameters
    ----------
    url : str
        ``s3://bucket[/prefix]``, as the user gave it.
    s3 : S3Options, optional
        Endpoint and credentials; default :meth:`S3Options.resolve`.
    flag : str
        How the user named ``url`` (``data``, ``store``, ``--data``), for messages.

    Returns
    -------
    Located
        The run's ``location`` (``s3://bucket/prefix/run-...``) and kind, or ``url``
        without a trailing slash and ``None``.

    Raises
    ------
    InputError
        A prefix with runs of ours but no manifest, a run its prefix's manifest does not
        name, or a manifest whose objects are missing or changed: one line, the fix in it.

    Examples
    --------
    >>> run_location("s3://my-bucket/demo")  # doctest: +SKIP
    Located(url='s3://my-bucket/demo/run-20261127T070000Z-1a2b3c', kind='demo')
    """
    bucket, prefix = split_url(url)
    if not prefix:  # a whole bucket: never an output of ours (S3Target refuses one)
        return Located(f"s3://{bucket}")
    from obstore.exceptions import BaseError

    target = S3Target.of(url, s3, flag=flag)
    with Notice(target.s3, f"GET of {target.url}/summary.json"):
        try:
            return _located(target, bucket, flag)
        except BaseError as exc:
            if timed_out(exc):  # no answer: said now, not waited for twice
                raise (explain(exc, target.url, target.s3) or exc) from None
            return Located(target.url)  # denied, no such bucket: the reader's requests say it


def _located(target: S3Target, bucket: str, flag: str) -> Located:
    """:func:`run_location`'s rules for ``target``, its requests allowed."""
    found = read_manifest(target)
    if found is not None and found[0]:
        run = current_run(target.url, target.s3, flag=flag)
        kind = run.manifest.get("kind")
        return Located(str(run.manifest.get("location") or run.url), kind and str(kind))
    parent, _, last = target.prefix.rpartition("/")
    if parent and last.startswith(RUN_PREFIX):
        above = S3Target.of(f"s3://{bucket}/{parent}", target.s3, flag=flag)
        return Located(target.url, _check_named_run(above, last, flag))
    if found is None and _has_runs(target):
        raise InputError(
            f"{named(flag, target.url)} holds runs of pangeo-hpc but no summary.json (an "
            "upload that failed or was killed): write it again, or remove them with "
            f"`pangeo-hpc cleanup {target.url} --min-age 0`",
            param=(flag,) if flag.isidentifier() else (),
        )
    return Located(target.url)


def _check_named_run(parent: S3Target, run: str, flag: str) -> str | None:
    """Refuse ``PARENT/run`` unless ``PARENT``'s manifest of ours names it (and it is
    whole); the run's kind."""
    found = read_manifest(parent)
    if found is None or not found[0]:
        if found is None and not _has_runs(parent):
            return None  # a user's folder that happens to be called run-...: not ours
        raise InputError(
            f"{named(flag, parent.url_of(run))} is a run that no summary.json of pangeo-hpc "
            "names (an upload that failed or was killed): write it again",
            param=(flag,) if flag.isidentifier() else (),
        )
    current = current_run(parent.url, parent.s3, flag=flag)
    if current.manifest.get("run") != run:
        raise InputError(
            f"{named(flag, parent.url_of(run))} is not the current run of {parent.url} (its "
            f"summary.json names {current.manifest.get('run')}): give {named(flag, parent.url)}",
            param=(flag,) if flag.isidentifier() else (),
        )
    kind = current.manifest.get("kind")
    return kind and str(kind)


def _has_runs(target: S3Target) -> bool:
    """Whether ``target`` has ``run-...`` prefixes directly below it (one delimiter LIST)."""
    import obstore

    found = obstore.list_with_delimiter(target.store, target.prefix + "/")
    return any(
        str(p).rstrip("/").rpartition("/")[2].startswith(RUN_PREFIX)
        for p in found["common_prefixes"]
    )
