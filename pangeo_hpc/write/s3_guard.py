"""What the package may write under an S3 prefix: the rules of :mod:`pangeo_hpc.write.guard`,
for objects.

An S3 prefix has no folder to rename and no marker file a user cannot also write, so the
package's objects say so themselves and a prefix holds one run at a time through a
manifest written last (:mod:`pangeo_hpc.write.s3_outputs`):

* every object the package writes carries the metadata :data:`MARK` (the header
  ``x-amz-meta-pangeo-hpc: written-by pangeo-hpc X.Y kind K``); a user's upload
  (``aws s3 cp``, boto3, the console) does not;
* a prefix may be written when it is empty, or when every object under it is ours: listed
  with its ETag in the manifest (``PREFIX/summary.json``, itself marked), or marked (a
  run's objects that no manifest names yet: a run under way, or one that failed). The
  first foreign key is named in one line with the fix, and nothing is written, removed or
  replaced;
* an output prefix that is, contains or lies inside an input (``s3://`` URLs of the same
  bucket) is refused, as is an object at the prefix's own key (a "file");
* a prefix holding another kind of output (a Zarr store where a result goes) is refused;
  with ``overwrite=False`` an existing output is too;
* a **single file** (``survey --json s3://b/k.json``, a plot, a config) is one object at
  its own key (:func:`check_key`, as :func:`pangeo_hpc.write.guard.check_file` for a
  path): new, or an object this package wrote as a single file (marked with the kind
  :data:`FILE_KIND`); never a user's object, a run's object, a "folder" (a key with
  objects under ``KEY/``) or an input.

The checks run before anything is computed and again just before the manifest is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError, named
from pangeo_hpc.s3.options import S3Options, is_s3, split_url
from pangeo_hpc.write.marks import WRITTEN_BY

__all__ = [
    "FILE_KIND",
    "MANIFEST",
    "MARK",
    "Listed",
    "S3Target",
    "check_key",
    "check_place",
    "check_prefix",
    "is_marked",
    "mark_value",
    "marked",
    "marked_kind",
]

#: the object metadata (``x-amz-meta-<MARK>``) of every object this package writes on S3
MARK = "pangeo-hpc"
#: the manifest of a prefix: written last, it makes one run visible
MANIFEST = "summary.json"
#: the kind in the mark of a single file written to its own key (a report, a figure)
FILE_KIND = "file"


def mark_value(kind: str) -> str:
    """The value of :data:`MARK` on an object of an output of ``kind``.

    Parameters
    ----------
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).

    Returns
    -------
    str
        The value.

    Examples
    --------
    >>> mark_value("result")
    'written-by pangeo-hpc ... kind result'
    """
    from importlib.metadata import version

    return f"written-by {WRITTEN_BY} {version('pangeo-hpc')} kind {kind}"


def marked_kind(attributes: Mapping[str, Any] | None) -> str | None:
    """The kind in an object's mark (:func:`mark_value`), ``None`` if it carries none.

    Parameters
    ----------
    attributes : Mapping[str, Any] or None
        An object's attributes (obstore's ``GetResult.attributes``), or ``None``.

    Returns
    -------
    str or None
        The kind.

    Examples
    --------
    >>> marked_kind({MARK: mark_value("result")}), marked_kind({})
    ('result', None)
    """
    if not is_marked(attributes):
        return None
    return str((attributes or {})[MARK]).rpartition(" kind ")[2]


def is_marked(attributes: Mapping[str, Any] | None) -> bool:
    """Whether an object's attributes (obstore's ``GetResult.attributes``) carry the mark.

    Parameters
    ----------
    attributes : Mapping[str, Any] or None
        An object's attributes, or ``None``.

    Returns
    -------
    bool
        Whether it carries the mark.

    Examples
    --------
    >>> is_marked({MARK: mark_value("result")}), is_marked({}), is_marked(None)
    (True, False, False)
    """
    value = str((attributes or {}).get(MARK, ""))
    return value.startswith(f"written-by {WRITTEN_BY}")


@dataclass(frozen=True)
class S3Target:
    """An output prefix ``s3://bucket/prefix`` and the options to reach it.

    Attributes
    ----------
    url : str
        ``s3://bucket/prefix``, normalised.
    bucket : str
        The bucket.
    prefix : str
        The prefix (no trailing ``/``).
    s3 : S3Options
        The endpoint and credentials.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst/", S3Options(endpoint_url="http://localhost:8333"))
    >>> target.url, target.bucket, target.prefix
    ('s3://results/era5-sst', 'results', 'era5-sst')
    """

    url: str
    bucket: str
    prefix: str
    s3: S3Options

    @classmethod
    def of(cls, url: str, s3: S3Options | None = None, *, flag: str = "out") -> S3Target:
        """The target of ``url``; a URL without a prefix (a whole bucket) is refused.

        Parameters
        ----------
        url : str
            ``s3://bucket/prefix``.
        s3 : S3Options, optional
            Endpoint and credentials; ``None``: :meth:`S3Options.resolve`.
        flag : str, optional
            How messages name the output.

        Raises
        ------
        InputError
            If ``url`` names a whole bucket (no prefix).

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> S3Target.of("s3://results/era5-sst", S3Options()).prefix
        'era5-sst'
        >>> S3Target.of("s3://results", S3Options())
        Traceback (most recent call last):
        ...
        pangeo_hpc.errors.InputError: ...
        """
        bucket, prefix = split_url(url)
        if not prefix:
            raise InputError(
                f"{named(flag, url)} is a whole bucket: give a prefix inside it, e.g. "
                f"s3://{bucket}/results/RUN (nothing was changed)",
                param=(flag,) if flag.isidentifier() else (),
            )
        return cls(f"s3://{bucket}/{prefix}", bucket, prefix, s3 or S3Options.resolve())

    def key(self, *parts: str) -> str:
        """The object key of ``parts`` under the prefix.

        Parameters
        ----------
        *parts : str
            Path parts below the prefix.

        Returns
        -------
        str
            The key.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> target = S3Target.of("s3://results/era5-sst", S3Options())
        >>> target.key("run-1", "result.nc")
        'era5-sst/run-1/result.nc'
        """
        return "/".join((self.prefix, *parts))

    def url_of(self, *parts: str) -> str:
        """The ``s3://`` URL of ``parts`` under the prefix.

        Parameters
        ----------
        *parts : str
            Path parts below the prefix.

        Returns
        -------
        str
            The URL.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> S3Target.of("s3://results/era5-sst", S3Options()).url_of("summary.json")
        's3://results/era5-sst/summary.json'
        """
        return f"s3://{self.bucket}/{self.key(*parts)}"

    @property
    def store(self) -> Any:
        """The obstore store of the bucket (cached by :class:`S3Options`)."""
        return self.s3.store(self.bucket)


@dataclass(frozen=True)
class Listed:
    """What is under a prefix: every object's size and ETag by key, and the manifest read
    (``None`` if absent).

    Attributes
    ----------
    objects : dict[str, tuple[int, str]]
        Key -> (size, ETag) of every object under the prefix.
    manifest : dict[str, Any] or None
        The manifest read, or ``None``.
    manifest_etag : str or None
        The manifest's ETag, or ``None``.

    Examples
    --------
    >>> objects = {"sst/run-1/a.nc": (4, '"etag"')}
    >>> listed = Listed(objects=objects, manifest=None, manifest_etag=None)
    >>> listed.objects["sst/run-1/a.nc"]
    (4, '"etag"')
    """

    objects: dict[str, tuple[int, str]]
    manifest: dict[str, Any] | None
    manifest_etag: str | None


def list_objects(target: S3Target) -> dict[str, tuple[int, str]]:
    """Every object under ``target``'s prefix (``PREFIX/...``): ``{key: (size, etag)}``.

    Parameters
    ----------
    target : S3Target
        The S3 output.

    Returns
    -------
    dict[str, tuple[int, str]]
        Key -> (size, ETag).

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> list_objects(target)  # {key: (size, etag)}  # doctest: +SKIP
    """
    import obstore

    found: dict[str, tuple[int, str]] = {}
    for batch in obstore.list(target.store, target.prefix + "/"):
        for meta in batch:
            found[str(meta["path"])] = (int(meta["size"]), str(meta["e_tag"] or ""))
    return found


def head(target: S3Target, key: str) -> dict[str, Any] | None:
    """The attributes (metadata) of the object ``key``, or ``None`` if there is none.

    Parameters
    ----------
    target : S3Target
        The S3 output.
    key : str
        The object's full key.

    Returns
    -------
    dict or None
        The attributes, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> head(target, "era5-sst/summary.json")  # its attributes, or None  # doctest: +SKIP
    """
    import obstore
    from obstore.exceptions import NotFoundError

    try:
        return dict(obstore.get(target.store, key, options={"head": True}).attributes)
    except (NotFoundError, FileNotFoundError):
        return None


def stat(target: S3Target, key: str) -> tuple[dict[str, Any], str] | None:
    """The attributes (metadata) and ETag of the object ``key``, ``None`` if there is none.

    Parameters
    ----------
    target : S3Target
        The S3 output.
    key : str
        The object's full key.

    Returns
    -------
    (dict, str) or None
        The attributes and ETag, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> attributes, etag = stat(target, "era5-sst/summary.json")  # doctest: +SKIP
    """
    import obstore
    from obstore.exceptions import NotFoundError

    try:
        got = obstore.get(target.store, key, options={"head": True})
    except (NotFoundError, FileNotFoundError):
        return None
    return dict(got.attributes), str(got.meta["e_tag"] or "")


def marked(target: S3Target, keys: Iterable[str]) -> Iterator[tuple[str, bool]]:
    """``(key, carries the mark)`` of each of ``keys`` (a HEAD each, concurrently); a key
    gone meanwhile counts as marked (nothing of a user's is there).

    Parameters
    ----------
    target : S3Target
        The S3 output.
    keys : Iterable[str]
        Full keys.

    Returns
    -------
    iterator of (str, bool)
        Each key and whether it carries the mark.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> dict(marked(target, ["era5-sst/run-1/result.nc"]))  # doctest: +SKIP
    """
    keys = list(keys)
    if not keys:
        return iter(())
    workers = max(1, min(len(keys), int(config.get("s3.upload-concurrency"))))

    def one(key: str) -> tuple[str, bool]:
        attrs = head(target, key)
        return key, attrs is None or is_marked(attrs)

    with ThreadPoolExecutor(workers) as pool:
        return iter(list(pool.map(one, keys)))


def read_manifest(target: S3Target) -> tuple[dict[str, Any], str] | None:
    """The manifest of ``target`` and its ETag, if there is one that this package wrote;
    ``None`` if there is none. A manifest without the mark, or not a JSON object of ours,
    is ``({}, etag)``: present, but foreign.

    Parameters
    ----------
    target : S3Target
        The S3 output.

    Returns
    -------
    (dict, str) or None
        The manifest and its ETag, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> manifest, etag = read_manifest(target)  # doctest: +SKIP
    """
    import json

    import obstore
    from obstore.exceptions import NotFoundError

    try:
        got = obstore.get(target.store, target.key(MANIFEST))
    except (NotFoundError, FileNotFoundError):
        return None
    etag = str(got.meta["e_tag"] or "")
    if not is_marked(got.attributes):
        return {}, etag
    try:
        doc = json.loads(bytes(got.bytes()))
    except ValueError:
        return {}, etag
    if not isinstance(doc, dict) or not str(doc.get("written_by", "")).startswith(WRITTEN_BY):
        return {}, etag
    return doc, etag


def runs_named(doc: Mapping[str, Any]) -> dict[str, tuple[int, str]]:
    """The objects a manifest lists (its run's, by full key, with size and ETag).

    Parameters
    ----------
    doc : Mapping[str, Any]
        A manifest.

    Returns
    -------
    dict[str, tuple[int, str]]
        Key -> (size, ETag).

    Examples
    --------
    >>> runs_named({"objects": {"sst/run-1/a.nc": {"bytes": 4, "etag": '"e1"'}}})
    {'sst/run-1/a.nc': (4, '"e1"')}
    """
    objects = doc.get("objects")
    if not isinstance(objects, dict):
        return {}
    out: dict[str, tuple[int, str]] = {}
    for key, rec in objects.items():
        if isinstance(rec, dict):
            out[str(key)] = (int(rec.get("bytes", -1)), str(rec.get("etag", "")))
    return out


def _refused(flag: str, message: str, *more: str) -> InputError:
    return InputError(message, param=(*([flag] if flag.isidentifier() else []), *more))


def _check_s3_inputs(target: S3Target, inputs: Iterable[object], flag: str) -> None:
    """Refuse an output prefix that is, contains or lies inside an ``s3://`` input."""
    out = f"{target.bucket}/{target.prefix}/"
    for given in inputs:
        if not is_s3(given):
            continue
        bucket, prefix = split_url(str(given))
        src = f"{bucket}/{prefix}/" if prefix else f"{bucket}/"
        how = (
            "is" if out == src else
            "contains" if src.startswith(out) else
            "lies inside" if out.startswith(src) else None
        )  # fmt: skip
        if how:
            raise _refused(
                flag,
                f"{named(flag, target.url)} {how} the input {str(given)!r}: write the outputs "
                "outside the input data (nothing was changed)",
            )


def check_place(target: S3Target, inputs: Iterable[object], flag: str) -> None:
    """The first checks of every S3 output (a run prefix, an Icechunk repository): not an
    ``s3://`` input (:func:`_check_s3_inputs`), not the key of an object (a "file").

    Parameters
    ----------
    target : S3Target
        The S3 output.
    inputs : Iterable[object]
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str
        How messages name the output: a parameter (``out``) or a command-line flag.

    Raises
    ------
    InputError
        If the target is an input, or the key of an object.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> check_place(target, ["s3://era5-pds/2019"], "out")  # doctest: +SKIP
    """
    _check_s3_inputs(target, inputs, flag)
    if head(target, target.prefix) is not None:
        raise _refused(
            flag,
            f"{named(flag, target.url)} is an object (a file), not a prefix pangeo-hpc "
            "wrote: give another prefix (nothing was changed)",
        )


def check_prefix(
    target: S3Target,
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
) -> Listed:
    """Check that ``target`` may receive a run of ``kind`` (the module's rules).

    Parameters
    ----------
    target : S3Target
        The S3 output.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    overwrite : bool, optional
        Whether an earlier output of the same kind may be replaced.

    Returns
    -------
    Listed
        What is there now: the objects, and the manifest of the run to replace.

    Raises
    ------
    InputError
        For an input, a "file" at the prefix's key, an object this package did not write,
        another kind of output, or (``overwrite=False``) any earlier output; nothing is
        changed.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> listed = check_prefix(target, kind="result", overwrite=True)  # doctest: +SKIP
    >>> listed.manifest  # the run to replace, or None  # doctest: +SKIP
    """
    check_place(target, inputs, flag)
    objects = list_objects(target)
    found = read_manifest(target) if target.key(MANIFEST) in objects else None
    manifest, etag = found if found is not None else (None, None)
    if manifest == {}:
        raise _foreign(target, flag, target.key(MANIFEST))
    trusted = runs_named(manifest or {})
    doubtful = sorted(
        k for k, v in objects.items() if k != target.key(MANIFEST) and trusted.get(k) != v
    )
    for key, ours in marked(target, doubtful):
        if not ours:
            raise _foreign(target, flag, key)
    if manifest is not None:
        if manifest.get("kind") != kind:
            raise _refused(
                flag,
                f"{named(flag, target.url)} holds a {manifest.get('kind')} output of "
                f"pangeo-hpc, not a {kind}: give another prefix (nothing was changed)",
            )
        if not overwrite:
            raise _refused(
                flag,
                f"{named(flag, target.url)} exists: pass overwrite=True to replace it",
                "overwrite",
            )
    return Listed(objects, manifest, etag)


def _foreign(target: S3Target, flag: str, key: str) -> InputError:
    return _refused(
        flag,
        f"{named(flag, target.url)} holds objects that pangeo-hpc did not write (first: "
        f"s3://{target.bucket}/{key}): give a new or empty prefix (nothing was changed)",
    )


def check_key(target: S3Target, *, inputs: Iterable[object] = (), flag: str = "out") -> str | None:
    """Check that the single file ``target`` (its prefix is the object's key) may be
    written: no object there, or one this package wrote as a single file.

    Parameters
    ----------
    target : S3Target
        The S3 file (its prefix is the key).
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.

    Returns
    -------
    str or None
        The ETag of the object of ours to replace (for a conditional PUT), ``None`` if the
        key is free.

    Raises
    ------
    InputError
        For an input, a key with objects under it (a "folder"), an object this package did
        not write, or an object of a run (a result's file, listed by its manifest); nothing
        is changed.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst/plot.png", S3Options())
    >>> check_key(target)  # None: the key is free  # doctest: +SKIP
    """
    import obstore

    _check_s3_inputs(target, inputs, flag)
    for batch in obstore.list(target.store, target.prefix + "/", chunk_size=1):
        if batch:
            raise _refused(
                flag,
                f"{named(flag, target.url)} is a prefix holding objects (a folder): give "
                "a file name (nothing was changed)",
            )
    found = stat(target, target.prefix)
    if found is None:
        return None
    attrs, etag = found
    kind = marked_kind(attrs)
    if kind is None:
        raise _refused(
            flag,
            f"{named(flag, target.url)} exists and was not written by pangeo-hpc: give "
            "another key, or move that object away yourself (nothing was changed)",
        )
    if kind != FILE_KIND:
        raise _refused(
            flag,
            f"{named(flag, target.url)} is an object of a {kind} output of pangeo-hpc, not "
            "a single file: give another key (nothing was changed)",
        )
    return etag
