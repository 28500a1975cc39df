"""Outputs written to S3: a run's objects under a prefix of their own, made visible at once
by a manifest written last.

S3 has no rename, so :func:`~pangeo_hpc.write.outputs.atomic_dir`'s one exchange of names
becomes one PUT of a small object. A verb writes its folder locally as always (a temporary
folder, the same code as for ``--out DIR``), then :func:`s3_folder` uploads it:

1. the prefix is checked (:func:`pangeo_hpc.write.s3_guard.check_prefix`: empty, or only
   this package's objects, never an input);
2. every file goes to ``PREFIX/run-<UTC time>-<random>/...``, marked in its metadata
   (:data:`~pangeo_hpc.write.s3_guard.MARK`); a run's keys are never written twice;
3. the prefix is checked again, then ``PREFIX/summary.json`` is written: the run's summary
   (if the folder held a ``summary.json``), its ``kind``, its ``run``, the run's URL
   (``location``: a Zarr store's, for ``xr.open_zarr``) and every object of it with its
   size and ETag. Written with ``If-Match`` on the manifest it replaces (or
   ``If-None-Match`` for the first), so a run that another run overtook writes again over
   that one, never over a manifest it did not see;
4. the run before the one replaced is removed (the one just replaced stays, so a reader
   that has just read its manifest still finds its objects).

A reader (:func:`current_run`, :func:`pangeo_hpc.io.results.open_result`) reads the manifest
and checks each listed object's size and ETag: it sees the old run or the new one, never a
mix. A failed upload removes what it put (Ctrl-C too); one that was killed, or whose
server went away, leaves no manifest and objects that no manifest names, which
:func:`cleanup` (``pangeo-hpc cleanup s3://...``) lists and removes, marked ones only.

Credentials come from :class:`~pangeo_hpc.s3.options.S3Options` (the AWS chain) and are
never part of a message: obstore's errors are reduced to their first line, which names the
method, the URL (endpoint, bucket and key) and the status.
"""

from __future__ import annotations

import json
import logging
import secrets
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError, StorageError, redact
from pangeo_hpc.s3.failures import denied
from pangeo_hpc.s3.options import S3Options
from pangeo_hpc.write.marks import WRITTEN_BY
from pangeo_hpc.write.s3_guard import (
    MANIFEST,
    MARK,
    S3Target,
    check_prefix,
    head,
    is_marked,
    list_objects,
    mark_value,
    read_manifest,
    runs_named,
)

__all__ = [
    "UPLOADED", "Run", "cleanup", "current_run", "new_run_id", "put_marked", "remove_marked",
    "s3_folder",
]  # fmt: skip

log = logging.getLogger(__name__)

#: called with each object's key once it is uploaded (before the manifest): tests stop the
#: server at a known point of an upload with it
UPLOADED: list[Callable[[str], None]] = []
#: the prefix of a run's objects under the output prefix
RUN_PREFIX = "run-"


def _first_line(exc: BaseException) -> str:
    return redact(str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__)


@contextmanager
def s3_folder(
    url: str,
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
    s3: S3Options | None = None,
    run: str | None = None,
) -> Iterator[Path]:
    """Yield a local temporary folder; on success its files become the run at ``url``.

    Parameters
    ----------
    url : str
        ``s3://bucket/prefix``: checked first (:func:`~pangeo_hpc.write.s3_guard.check_prefix`).
    kind : str
        ``"result"`` (the folder holds a ``summary.json``, which becomes the manifest's
        body) or ``"zarr"`` (the folder is a Zarr store).
    inputs, flag, overwrite
        As for :func:`pangeo_hpc.write.outputs.atomic_dir`.
    s3 : S3Options, optional
        Endpoint and credentials; default :meth:`S3Options.resolve`.
    run : str, optional
        The run's id (:func:`new_run_id`), for a caller that records where its files go.

    Yields
    ------
    pathlib.Path
        The folder to write (removed afterwards).

    Raises
    ------
    InputError
        If ``url`` may not be written (nothing is changed).
    StorageError
        If the upload failed: no manifest was written, so nothing of it is visible; what was
        put is removed (or left for :func:`cleanup` if the server is gone).

    Examples
    --------
    >>> from pangeo_hpc.write.outputs import write_json
    >>> with s3_folder("s3://results/era5-sst", kind="result") as tmp:  # doctest: +SKIP
    ...     write_json(tmp / "summary.json", {"mean": 2.5})
    """
    inputs = list(inputs)
    target = S3Target.of(url, s3, flag=flag)
    check_prefix(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)
    stage = Path(tempfile.mkdtemp(prefix="pangeo-hpc-s3-"))
    try:
        folder = stage / "run"
        folder.mkdir()
        yield folder
        publish(target, folder, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite, run=run)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def put_marked(
    target: S3Target, key: str, data: Path | bytes, *, kind: str, mode: Any = None, **attrs: str
) -> dict[str, Any]:
    """PUT ``data`` (a file or bytes) at ``key``, marked as this package's output of ``kind``
    (:data:`~pangeo_hpc.write.s3_guard.MARK`): the one place objects are written. ``mode``:
    obstore's ``"create"`` (``If-None-Match: *``) or ``{"e_tag": ...}`` (``If-Match``);
    ``attrs``: more attributes (``Content-Type``). Returns obstore's answer (its ``e_tag``).

    Parameters
    ----------
    target : S3Target
        The S3 output.
    key : str
        The object's full key.
    data : Path or bytes
        A file, or bytes.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).
    mode : Any, optional
        obstore's put mode: ``"create"``, ``{"e_tag": ...}``, or ``None`` (overwrite).
    **attrs : str
        More attributes of the object.

    Returns
    -------
    dict[str, Any]
        obstore's answer.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> key = target.key("run-1", "notes.txt")
    >>> put_marked(target, key, b"hello", kind="result", mode="create")  # doctest: +SKIP
    """
    import obstore

    attributes = {MARK: mark_value(kind), **attrs}
    return dict(obstore.put(target.store, key, data, attributes=attributes, mode=mode))


def new_run_id() -> str:
    """A new run's id: ``run-<UTC time>-<8 hex digits>``.

    Returns
    -------
    str
        The id.

    Examples
    --------
    >>> new_run_id()
    'run-...Z-...'
    """
    return f"{RUN_PREFIX}{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{secrets.token_hex(4)}"


def publish(
    target: S3Target,
    folder: Path,
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
    run: str | None = None,
) -> dict[str, Any]:
    """Upload the files of ``folder`` as a new run of ``target`` and write its manifest
    (the module's steps 2-4); returns the manifest.

    Parameters
    ----------
    target : S3Target
        The S3 output.
    folder : Path
        The local folder of the run's files.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    overwrite : bool, optional
        Whether an earlier output of the same kind may be replaced.
    run : str, optional
        The run's id; ``None``: a new one.

    Returns
    -------
    dict[str, Any]
        The manifest.

    Raises
    ------
    InputError
        If the target may not receive the run
        (:func:`~pangeo_hpc.write.s3_guard.check_prefix`), or the server refuses the
        credentials a write (they may read but not write there).
    StorageError
        If an upload fails otherwise, or another writer changed the manifest meanwhile.

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> manifest = publish(target, Path("results/era5-sst"), kind="result")  # doctest: +SKIP
    """

    summary: dict[str, Any] = {}
    if (folder / MANIFEST).is_file():
        summary = json.loads((folder / MANIFEST).read_text())
    run = run or new_run_id()
    files = sorted(
        p for p in folder.rglob("*") if p.is_file() and p.relative_to(folder).as_posix() != MANIFEST
    )
    put: dict[str, dict[str, Any]] = {}

    def upload(path: Path) -> None:
        key = target.key(run, path.relative_to(folder).as_posix())
        answer = put_marked(target, key, path, kind=kind)
        # recorded at once: what an interrupted run put is removed, whichever thread put it
        put[key] = {"bytes": path.stat().st_size, "etag": str(answer["e_tag"])}
        for hook in UPLOADED:
            hook(key)

    try:
        workers = max(1, min(len(files), int(config.get("s3.upload-concurrency"))))
        with ThreadPoolExecutor(workers) as pool:
            list(pool.map(upload, files))
        put = dict(sorted(put.items()))
        # again: a user may have put something there meanwhile, another run its manifest
        for _attempt in range(3):
            listed = check_prefix(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)
            previous = None if listed.manifest is None else listed.manifest.get("run")
            doc = {
                "written_by": f"{WRITTEN_BY} {_version()}",
                **{k: v for k, v in summary.items() if k != "written_by"},
                "kind": kind,
                "run": run,
                "location": target.url_of(run),  # what xr.open_zarr opens (a Zarr store)
                "previous": previous,
                "objects": put,
            }
            body = (json.dumps(doc, indent=2, default=str) + "\n").encode()
            mode: Any = (
                "create" if listed.manifest_etag is None else {"e_tag": listed.manifest_etag}
            )
            try:
                put_marked(
                    target, target.key(MANIFEST), body, kind=kind, mode=mode,
                    **{"Content-Type": "application/json"},
                )  # fmt: skip
            except Exception as exc:  # another run wrote the manifest in between: again
                if type(exc).__name__ not in ("PreconditionError", "AlreadyExistsError"):
                    raise
                continue
            break
        else:
            raise StorageError(
                f"{target.url}: other runs kept replacing its summary.json: run one at a time "
                "(nothing of this run was made visible)"
            )
    except BaseException as exc:
        _remove_quietly(target, put)
        if isinstance(exc, InputError | StorageError | KeyboardInterrupt):
            raise
        if not isinstance(exc, Exception):
            raise
        refused = denied(exc)
        if refused is not None:  # keys that may read (the prefix was listed) but not write
            raise InputError(
                f"writing {target.url} was refused ({refused}): these credentials may not "
                "write there; use credentials that may (AWS_PROFILE, AWS_ACCESS_KEY_ID) or "
                "write elsewhere (nothing of this run was made visible)",
                param=(flag,) if flag.isidentifier() else (),
            ) from exc
        raise StorageError(
            f"writing {target.url} failed ({_first_line(exc)}): nothing of this run was made "
            f"visible; when the server answers again, run: pangeo-hpc cleanup {target.url}"
        ) from exc
    if listed.manifest is not None:
        try:  # the run is visible already: a failure here leaves work for cleanup()
            _retire(target, listed.manifest.get("previous"), keep={run, str(previous)})
        except Exception as exc:
            log.warning(f"{target.url}: a replaced run was not removed ({_first_line(exc)})")
    return doc


def _version() -> str:
    from importlib.metadata import version

    return version("pangeo-hpc")


def _remove_quietly(target: S3Target, put: dict[str, Any]) -> None:
    """Remove what this run put (its own keys, written just now); a server that is gone
    leaves them for :func:`cleanup`."""
    import obstore

    for key in list(put):
        try:
            obstore.delete(target.store, key)
        except Exception as exc:  # the server is gone: cleanup() later
            log.warning(f"{target.url}: left {len(put)} objects of a failed run ({exc!r:.80})")
            return


def _retire(target: S3Target, run: object, *, keep: set[str]) -> None:
    """Remove the marked objects of ``run`` (the run before the one just replaced)."""
    if not isinstance(run, str) or not run.startswith(RUN_PREFIX) or run in keep:
        return
    remove_marked(target, [k for k, _, _ in _listing(target, run + "/")])


def _listing(target: S3Target, under: str = "") -> list[tuple[str, int, datetime]]:
    """``(key, size, last modified)`` of every object under ``PREFIX/under``."""
    import obstore

    rows = []
    for batch in obstore.list(target.store, target.key(under) if under else target.prefix + "/"):
        for meta in batch:
            rows.append((str(meta["path"]), int(meta["size"]), meta["last_modified"]))
    return rows


def remove_marked(target: S3Target, keys: list[str]) -> tuple[list[str], list[str]]:
    """Remove those of ``keys`` that carry the mark, after a HEAD of each (an object
    pangeo-hpc did not write is never removed).

    Parameters
    ----------
    target : S3Target
        The S3 output the keys belong to.
    keys : list of str
        Full keys.

    Returns
    -------
    (list of str, list of str)
        The keys removed, and those left because they lack the mark.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> remove_marked(target, ["era5-sst/run-1/notes.txt"])  # doctest: +SKIP
    (['era5-sst/run-1/notes.txt'], [])
    """
    import obstore

    def one(key: str) -> tuple[str, bool | None]:
        attrs = head(target, key)
        if attrs is None:
            return key, None  # gone meanwhile
        if not is_marked(attrs):
            return key, False
        obstore.delete(target.store, key)
        return key, True

    if not keys:
        return [], []
    workers = max(1, min(len(keys), int(config.get("s3.upload-concurrency"))))
    with ThreadPoolExecutor(workers) as pool:
        done = list(pool.map(one, keys))
    return [k for k, ok in done if ok], [k for k, ok in done if ok is False]


class Run:
    """The run a prefix's manifest makes visible, checked object by object.

    Attributes
    ----------
    target : S3Target
    manifest : dict
        ``PREFIX/summary.json`` as written.

    Examples
    --------
    >>> from pangeo_hpc.s3.options import S3Options
    >>> from pangeo_hpc.write.s3_guard import S3Target
    >>> target = S3Target.of("s3://results/era5-sst", S3Options())
    >>> run = Run(target, {"run": "run-20240101T000000Z-0123abcd"})
    >>> run.url
    's3://results/era5-sst/run-20240101T000000Z-0123abcd'
    """

    def __init__(self, target: S3Target, manifest: dict[str, Any]) -> None:
        self.target = target
        self.manifest = manifest

    @property
    def url(self) -> str:
        """``s3://bucket/prefix/run-...``: where the run's objects are."""
        return self.target.url_of(str(self.manifest["run"]))

    def url_of(self, name: str) -> str:
        """The URL of the run's file (or folder) ``name``.

        Parameters
        ----------
        name : str
            A file's or folder's name in the run.

        Returns
        -------
        str
            The URL.

        Examples
        --------
        >>> from pangeo_hpc.s3.options import S3Options
        >>> from pangeo_hpc.write.s3_guard import S3Target
        >>> target = S3Target.of("s3://results/era5-sst", S3Options())
        >>> Run(target, {"run": "run-1"}).url_of("result.zarr")
        's3://results/era5-sst/run-1/result.zarr'
        """
        return f"{self.url}/{name}"


def current_run(url: str, s3: S3Options | None = None, *, flag: str = "result") -> Run:
    """The run visible at ``url``: its manifest, after checking that every object it lists
    is there with the size and ETag recorded.

    Parameters
    ----------
    url : str
        The output's ``s3://`` URL.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.

    Returns
    -------
    Run
        The run.

    Raises
    ------
    InputError
        If there is no manifest of this package, or an object is missing or changed (a run
        replaced and cleaned up since, or a user's edit): one line naming it and the fix.

    Examples
    --------
    >>> run = current_run("s3://results/era5-sst")  # doctest: +SKIP
    >>> run.url_of("result.nc")  # 's3://results/era5-sst/run-.../result.nc'  # doctest: +SKIP
    """
    target = S3Target.of(url, s3, flag=flag)
    found = read_manifest(target)
    if not found or not found[0]:
        raise InputError(
            f"{target.url} holds no output of pangeo-hpc (no summary.json it wrote): give the "
            "--out of a run that finished"
        )
    doc = found[0]
    run = doc.get("run")
    if not isinstance(run, str) or not run.startswith(RUN_PREFIX):
        raise InputError(f"{target.url}/summary.json names no run: run the verb again")
    under = target.key(run) + "/"
    there = {k: v for k, v in list_objects(target).items() if k.startswith(under)}
    for key, written in sorted(runs_named(doc).items()):
        if there.get(key) != written:
            raise InputError(
                f"s3://{target.bucket}/{key} is missing or differs from {target.url}/summary.json "
                "(the run was replaced and removed, or changed): read it again, or run again"
            )
    return Run(target, doc)


def cleanup(
    url: str, s3: S3Options | None = None, *, min_age: float | None = None
) -> tuple[list[str], list[str]]:
    """Remove what failed or killed runs left under ``url``, and runs replaced since.

    Only objects that carry this package's mark (a HEAD of each) and that the current
    manifest does not name are removed, and only those older than ``min_age`` seconds
    (default config ``pangeo-hpc.s3.cleanup-min-age``), so that a run uploading now keeps
    its objects. Objects a user put there are listed, never touched.

    Parameters
    ----------
    url : str
        The output's ``s3://`` URL.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.
    min_age : float, optional
        Seconds an object must be old to be removed; default config
        ``pangeo-hpc.s3.cleanup-min-age``.

    Returns
    -------
    (list of str, list of str)
        The keys removed, and the keys left because they are not this package's.

    Examples
    --------
    >>> removed, foreign = cleanup("s3://results/era5-sst", min_age=3600)  # doctest: +SKIP
    """
    target = S3Target.of(url, s3, flag="prefix")
    age = float(config.get("s3.cleanup-min-age", min_age))
    if age < 0:
        raise InputError(f"min_age={age} must be >= 0 seconds, e.g. 3600", param="min_age")
    found = read_manifest(target)
    doc = found[0] if found else {}
    current = set(runs_named(doc)) | {target.key(MANIFEST)}
    before = datetime.now(UTC) - timedelta(seconds=age)
    keys = [k for k, _, t in _listing(target) if k not in current and t <= before]
    removed, foreign = remove_marked(target, keys)
    return sorted(removed), sorted(foreign)
