"""Where a folder output goes: a local (or mounted) folder, or an ``s3://bucket/prefix``.

One check (:func:`check_output`) and one writer (:func:`output_folder`) for both, so that a
verb that writes a result or a Zarr store takes ``--out s3://...`` without a branch of
its own: a path goes to :func:`pangeo_hpc.write.guard.check_folder` and
:func:`pangeo_hpc.write.outputs.atomic_dir`, an ``s3://`` URL to
:func:`pangeo_hpc.write.s3_guard.check_prefix` and
:func:`pangeo_hpc.write.s3_outputs.s3_folder`. Any other URL is refused as before
(:func:`pangeo_hpc.write.guard.local_path`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pangeo_hpc.s3.options import S3Options, is_s3, split_url
from pangeo_hpc.write.guard import check_folder
from pangeo_hpc.write.outputs import atomic_dir
from pangeo_hpc.write.s3_guard import S3Target, check_prefix
from pangeo_hpc.write.s3_outputs import new_run_id, s3_folder

__all__ = ["Output", "check_output", "output_folder", "where_in"]

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

    Returns
    -------
    pathlib.Path or str
        The folder as a path, or the ``s3://bucket/prefix`` URL (normalised).

    Raises
    ------
    InputError
        As :func:`~pangeo_hpc.write.guard.check_folder` or
        :func:`~pangeo_hpc.write.s3_guard.check_prefix` do; nothing is changed.
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
    endpoint and credentials; ``run``: the run's id, :func:`where_in`)."""
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
    under a prefix of their own, :mod:`pangeo_hpc.write.s3_outputs`)."""
    if is_s3(target):
        run = new_run_id()
        bucket, prefix = split_url(str(target))
        return run, f"s3://{bucket}/{prefix}/{run}"
    return None, str(target)
