"""Stripe-aware outputs on Lustre: ``lfs setstripe -c N`` from the projected size."""

from __future__ import annotations

import math
import shutil
import subprocess
from pathlib import Path

from pangeo_hpc import config
from pangeo_hpc.storage.detect import detect


def stripe_count(
    nbytes: int, *, gb_per_stripe: float | None = None, osts: int | None = None
) -> int:
    """Stripes for a file of ``nbytes``: one per ``gb_per_stripe`` GB (config
    ``pangeo-hpc.storage.gb-per-stripe``, default 1, as NASA advises), at least 1, at most
    the number of OSTs.

    Parameters
    ----------
    nbytes : int
        The file's size.
    gb_per_stripe : float, optional
        GB per stripe; default config ``pangeo-hpc.storage.gb-per-stripe``.
    osts : int, optional
        The number of OSTs, the most stripes there can be.

    Returns
    -------
    int
        The stripe count.

    Examples
    --------
    >>> stripe_count(300e9, osts=24), stripe_count(10e6), stripe_count(3.2e9)
    (24, 1, 4)
    """
    per = float(config.get("storage.gb-per-stripe", gb_per_stripe))
    count = max(1, math.ceil(nbytes / 1e9 / per))
    return min(count, osts) if osts else count


def _ost_count(path: str | Path) -> int | None:
    """OSTs of the Lustre file system holding ``path`` (``lfs df``)."""
    r = subprocess.run(["lfs", "df", str(path)], capture_output=True, text=True)
    n = sum(1 for line in r.stdout.splitlines() if "[OST:" in line)
    return n or None


def prepare_output(path: str | Path, nbytes: int) -> int | None:
    """Set the Lustre layout of the folder ``path`` for ``nbytes`` of output; files made in it
    inherit it. A no-op (returns None) anywhere but Lustre.

    Parameters
    ----------
    path : str or Path
        The output folder.
    nbytes : int
        The size of the output to come.

    Returns
    -------
    int or None
        The stripe count set, None off Lustre.

    Examples
    --------
    >>> prepare_output("/lustre/out/sst.nc", 50 * 2**30)  # doctest: +SKIP
    """
    return _setstripe(Path(path), Path(path), nbytes)


def stripe_file(path: str | Path, nbytes: int) -> int | None:
    """Create the empty file ``path`` with a layout for ``nbytes`` on Lustre (``lfs
    setstripe -c N FILE``) before it is written; a no-op elsewhere.

    Parameters
    ----------
    path : str | Path
        The file to create.
    nbytes : int
        The bytes it will hold.

    Returns
    -------
    int | None
        The stripe count set, or ``None`` (not Lustre, or no ``lfs``).

    Examples
    --------
    >>> stripe_file("/lustre/out/sst.nc", 50 * 2**30)  # on Lustre: the count set  # doctest: +SKIP
    >>> stripe_file("sst.nc", 50 * 2**30) is None  # not Lustre: nothing done
    True
    """
    return _setstripe(Path(path), Path(path).parent, nbytes)


def _setstripe(target: Path, folder: Path, nbytes: int) -> int | None:
    if detect(folder).kind != "lustre" or shutil.which("lfs") is None:
        return None
    count = stripe_count(nbytes, osts=_ost_count(folder))
    subprocess.run(
        ["lfs", "setstripe", "-c", str(count), str(target)],
        check=True,
        capture_output=True,
        text=True,
    )
    return count
