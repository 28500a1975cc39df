"""Where an output goes: a local (or mounted) path, or an ``s3://`` URL.

One check and one writer for both, so that a verb takes ``s3://...`` without a branch of
its own:

* a **folder** output (a result, a Zarr store, a demo tree): :func:`check_output` and
  :func:`output_folder`; a path goes to :func:`pangeo_hpc.write.guard.check_folder` and
  :func:`pangeo_hpc.write.outputs.atomic_dir`, an ``s3://`` URL to
  :func:`pangeo_hpc.write.s3_guard.check_prefix` and
  :func:`pangeo_hpc.write.s3_outputs.s3_folder` (a run under the prefix, a manifest last);
* a **single file** (a JSON report, a figure, a config): :func:`check_output_file` and
  :func:`output_file`; a path goes to :func:`pangeo_hpc.write.guard.check_file` (the
  package's writers, ``write_json``, ``save_figure``, ``atomic_file``, then write it whole),
  an ``s3://bucket/key`` to :func:`pangeo_hpc.write.s3_guard.check_key`, and the file,
  written whole in a local staging folder, becomes the object in one conditional PUT
  (:func:`pangeo_hpc.write.s3_outputs.put_marked`): ``If-None-Match: *`` on a free key,
  ``If-Match`` the ETag checked on an object of ours, so an object put there meanwhile is
  checked again (a user's is refused, nothing written), never silently replaced. A PUT
  is atomic: the object is whole, or the one before is still there.

Any other URL is refused as before (:func:`pangeo_hpc.write.guard.local_path`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from pangeo_hpc.errors import StorageError
from pangeo_hpc.s3.options import S3Options, is_s3, split_url
from pangeo_hpc.write.guard import check_file, check_folder
from pangeo_hpc.write.outputs import atomic_dir
from pangeo_hpc.write.s3_guard import FILE_KIND, S3Target, check_key, check_prefix
from pangeo_hpc.write.s3_outputs import _first_line, new_run_id, put_marked, s3_folder

__all__ = [
    "Output",
    "check_output",
    "check_output_file",
    "output_file",
    "output_folder",
    "suffix_of",
    "where_in",
]

#: a folder output: a local path, or an ``s3://bucket/prefix`` URL
Output = Path | str


def check_output(
    target: str | os.PathLike[str],
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
    s3: S3Options | None = None,
) -> Output:
    """Check that ``target`` may receive an output of ``kind`` (nothing is written).

    Parameters
    ----------
    target : str or os.PathLike[str]
        A folder or ``s3://`` prefix.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    overwrite : bool, optional
        Whether an earlier output of the same kind may be replaced.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.

    Returns
    -------
    pathlib.Path or str
        The folder as a path, or the ``s3://bucket/prefix`` URL (normalised).

    Raises
    ------
    InputError
        As :func:`~pangeo_hpc.write.guard.check_folder` or
        :func:`~pangeo_hpc.write.s3_guard.check_prefix` do; nothing is changed.

    Examples
    --------
    >>> print(check_output("results/era5-sst", kind="result"))
    results/era5-sst
    >>> check_output("s3://results/era5-sst", kind="result")  # lists the prefix  # doctest: +SKIP
    """
    if is_s3(target):
        dest = S3Target.of(str(target), s3, flag=flag)
        check_prefix(dest, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)
        return dest.url
    return check_folder(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite)


@contextmanager
def output_folder(
    target: str | os.PathLike[str],
    *,
    kind: str,
    inputs: Iterable[object] = (),
    flag: str = "out",
    overwrite: bool = True,
    s3: S3Options | None = None,
    run: str | None = None,
) -> Iterator[Path]:
    """Yield a temporary local folder whose files become ``target`` as a whole on success:
    :func:`~pangeo_hpc.write.outputs.atomic_dir` for a path,
    :func:`~pangeo_hpc.write.s3_outputs.s3_folder` for an ``s3://`` URL (``s3``: its
    endpoint and credentials; ``run``: the run's id, :func:`where_in`).

    Parameters
    ----------
    target : str or os.PathLike[str]
        A folder or ``s3://`` prefix.
    kind : str
        The output's kind (``result``, ``zarr``, ``demo-data``, ...).
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    overwrite : bool, optional
        Whether an earlier output of the same kind may be replaced.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.
    run : str, optional
        The run's id for an ``s3://`` target; ``None``: a new one.

    Yields
    ------
    Path
        The temporary local folder to write the files in.

    Raises
    ------
    InputError
        If ``target`` may not receive the output (:func:`check_output`).

    Examples
    --------
    >>> import os
    >>> from pangeo_hpc.write.outputs import write_json
    >>> with output_folder("results/era5-sst", kind="result") as tmp:  # or s3://bucket/prefix
    ...     _ = write_json(tmp / "summary.json", {"mean": 2.5})
    >>> os.listdir("results/era5-sst")
    ['summary.json']
    """
    if is_s3(target):
        with s3_folder(
            str(target), kind=kind, inputs=inputs, flag=flag, overwrite=overwrite, s3=s3, run=run
        ) as tmp:
            yield tmp
        return
    with atomic_dir(target, kind=kind, inputs=inputs, flag=flag, overwrite=overwrite) as tmp:
        yield tmp


def where_in(target: str | os.PathLike[str]) -> tuple[str | None, str]:
    """The run id an output to ``target`` will have (``None`` for a folder), and where its
    files will be: the folder itself, or ``s3://bucket/prefix/RUN`` (a run's objects sit
    under a prefix of their own, :mod:`pangeo_hpc.write.s3_outputs`).

    Parameters
    ----------
    target : str or os.PathLike[str]
        A folder or ``s3://`` prefix.

    Returns
    -------
    (str or None, str)
        The run id and the place.

    Examples
    --------
    >>> where_in("results/era5-sst")
    (None, 'results/era5-sst')
    >>> where_in("s3://results/era5-sst")
    ('run-...', 's3://results/era5-sst/run-...')
    """
    if is_s3(target):
        run = new_run_id()
        bucket, prefix = split_url(str(target))
        return run, f"s3://{bucket}/{prefix}/{run}"
    return None, str(target)


def suffix_of(target: str | os.PathLike[str]) -> str:
    """The suffix of a file output, path or ``s3://`` URL (``".png"``), in lower case.

    Parameters
    ----------
    target : str or os.PathLike[str]
        A path or URL.

    Returns
    -------
    str
        The suffix, ``""`` without one.

    Examples
    --------
    >>> suffix_of("results/Plot.PNG"), suffix_of("s3://bucket/x/plot.svg"), suffix_of("results/x")
    ('.png', '.svg', '')
    """
    return PurePosixPath(str(target)).suffix.lower()


def check_output_file(
    target: str | os.PathLike[str],
    *,
    inputs: Iterable[object] = (),
    flag: str = "out",
    ours: Callable[[Path], bool] | None = None,
    s3: S3Options | None = None,
) -> Output:
    """Check that the single file ``target`` may be written (nothing is written).

    Parameters
    ----------
    target : path or str
        A file name, or ``s3://bucket/key``.
    inputs : iterable
        What the verb reads (paths or ``s3://`` URLs): the output must not be, or lie
        inside, any of them.
    flag : str
        How the user named ``target`` (``out``, ``--json``), for messages.
    ours : callable, optional
        For a path: the test of a writer that knows its files better
        (:func:`~pangeo_hpc.write.guard.check_file`).
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target; default :meth:`S3Options.resolve`.

    Returns
    -------
    pathlib.Path or str
        The file as a path, or the ``s3://bucket/key`` URL.

    Raises
    ------
    InputError
        As :func:`~pangeo_hpc.write.guard.check_file` or
        :func:`~pangeo_hpc.write.s3_guard.check_key` do; nothing is changed.

    Examples
    --------
    >>> print(check_output_file("stats.json"))
    stats.json
    >>> check_output_file("data/era5/stats.json", inputs=["data/era5"])
    Traceback (most recent call last):
    ...
    pangeo_hpc.errors.InputError: out='data/era5/stats.json' lies inside the input 'data/era5': ...
    """
    if is_s3(target):
        dest = S3Target.of(str(target), s3, flag=flag)
        check_key(dest, inputs=inputs, flag=flag)
        return dest.url
    return check_file(target, inputs=inputs, flag=flag, ours=ours)


@contextmanager
def output_file(
    target: str | os.PathLike[str],
    *,
    inputs: Iterable[object] = (),
    flag: str = "out",
    ours: Callable[[Path], bool] | None = None,
    s3: S3Options | None = None,
) -> Iterator[Path]:
    """Yield the path to give the package's file writer (``write_json``, ``save_figure``,
    ``atomic_file``); on success the file is at ``target``.

    For a path, ``target`` itself, checked (those writers write it whole or not at all).
    For ``s3://bucket/key``, a new name in a local staging folder; once the block is done
    the key is checked again and the file PUT there in one conditional request, marked
    (the module's rules). Parameters as for :func:`check_output_file`.

    Parameters
    ----------
    target : str or os.PathLike[str]
        A file path or ``s3://bucket/key``.
    inputs : Iterable[object], optional
        The data read: the output may not be, contain or lie inside one (paths; URLs and
        ``None`` are skipped).
    flag : str, optional
        How messages name the output: a parameter (``out``) or a command-line flag.
    ours : Callable[[Path], bool], optional
        A test that recognises a file of an earlier version as this package's, besides
        the marker.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.

    Yields
    ------
    pathlib.Path
        Where to write the file.

    Raises
    ------
    InputError
        If ``target`` may not be written, before the block or at its end (nothing written).
    StorageError
        If the PUT failed (the object before it, if any, is unchanged).

    Examples
    --------
    >>> from pathlib import Path
    >>> from pangeo_hpc.write.marks import file_is_ours
    >>> from pangeo_hpc.write.outputs import write_json
    >>> with output_file("stats.json") as path:  # or s3://bucket/key
    ...     _ = write_json(path, {"mean": 2.5})
    >>> file_is_ours(Path("stats.json"))
    True
    """
    inputs = list(inputs)
    if not is_s3(target):
        yield check_file(target, inputs=inputs, flag=flag, ours=ours)
        return
    dest = S3Target.of(str(target), s3, flag=flag)
    check_key(dest, inputs=inputs, flag=flag)
    stage = Path(tempfile.mkdtemp(prefix="pangeo-hpc-s3-"))
    try:
        local = stage / (PurePosixPath(dest.prefix).name or "file")
        yield local
        _put_file(dest, local, inputs=inputs, flag=flag)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


#: conditional PUTs tried when other writers of ours keep replacing the object meanwhile
_ATTEMPTS = 3


def _put_file(dest: S3Target, local: Path, *, inputs: list[object], flag: str) -> None:
    """PUT ``local`` at ``dest``'s key if the key is (still) free or ours, conditionally on
    what was checked: an object put in between is checked again, never silently replaced."""
    for _attempt in range(_ATTEMPTS):
        etag = check_key(dest, inputs=inputs, flag=flag)
        mode = "create" if etag is None else {"e_tag": etag}
        try:
            put_marked(dest, dest.prefix, local, kind=FILE_KIND, mode=mode)
            return
        except Exception as exc:
            if type(exc).__name__ in ("PreconditionError", "AlreadyExistsError"):
                continue  # another writer was quicker: check what it put, then again
            raise StorageError(  # its first line, credentials redacted (s3_outputs)
                f"writing {dest.url} failed ({_first_line(exc)}): nothing was written; run "
                "again when the server answers"
            ) from exc
    raise StorageError(
        f"{dest.url}: other writers kept replacing it: write one at a time (nothing of "
        "this one was written)"
    )
