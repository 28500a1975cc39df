"""Basic indexing keys of the package's lazy arrays, as Dask hands them over.

:class:`~pangeo_hpc.io.reader.MultiFileArray` and :class:`~pangeo_hpc.io.zarr_reader.ZarrChunks`
read only the part of the data a key selects: :func:`full_key` gives the key one entry per
axis, :func:`bounding_box` the contiguous block to read and the index that takes the key's
elements out of it.
"""

from __future__ import annotations

__all__ = ["bounding_box", "full_key"]


def full_key(key: object, ndim: int) -> tuple:
    """``key`` as a tuple of ``ndim`` entries.

    Parameters
    ----------
    key : object
        An index: an integer, a slice, an index array, ``Ellipsis`` or a tuple of these.
    ndim : int
        The number of axes of the array indexed.

    Returns
    -------
    tuple
        ``Ellipsis`` expanded and missing trailing axes filled with ``slice(None)``.

    Raises
    ------
    TypeError
        When ``key`` holds ``None``: these arrays do not add axes.

    Examples
    --------
    >>> full_key((0, ...), 3)
    (0, slice(None, None, None), slice(None, None, None))
    >>> full_key(slice(2), 3)
    (slice(None, 2, None), slice(None, None, None), slice(None, None, None))
    """
    key = key if isinstance(key, tuple) else (key,)
    if any(k is None for k in key):
        raise TypeError("these lazy arrays do not add axes (None in the index)")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1 :]
    return key + (slice(None),) * (ndim - len(key))


def bounding_box(key: tuple, shape: tuple[int, ...]) -> tuple[list[tuple[int, int]], tuple]:
    """The block to read for a key of slices and integers, and what to take out of it.

    Parameters
    ----------
    key : tuple
        One slice or integer per axis (see :func:`full_key`); negative integers and
        negative steps are allowed.
    shape : tuple of int
        The shape of the array indexed.

    Returns
    -------
    box : list of (int, int)
        ``(lo, hi)`` per axis: the smallest block holding the key's elements.
    post : tuple
        The index that takes the key's elements, in the key's order, out of that block
        (a step, a reversal, or ``0`` for an integer axis, which it drops).

    Examples
    --------
    >>> box, post = bounding_box((1, slice(None, None, -1), slice(0, 4, 2)), (3, 2, 4))
    >>> box  # read row 1, both lats, lons 0..2
    [(1, 2), (0, 2), (0, 3)]
    >>> post  # then drop the time axis, reverse lat, take every other lon
    (0, slice(1, None, -1), slice(None, None, 2))
    """
    box: list[tuple[int, int]] = []
    post: list[slice | int] = []
    for k, n in zip(key, shape, strict=True):
        if isinstance(k, slice):
            idx = range(*k.indices(n))
            if len(idx) == 0:
                box.append((0, 0))
                post.append(slice(None))
                continue
            lo, hi = min(idx[0], idx[-1]), max(idx[0], idx[-1]) + 1
            box.append((lo, hi))
            post.append(
                slice(None, None, idx.step) if idx.step > 0 else slice(hi - 1 - lo, None, idx.step)
            )
        else:
            i = int(k) + n if int(k) < 0 else int(k)
            box.append((i, i + 1))
            post.append(0)
    return box, tuple(post)
