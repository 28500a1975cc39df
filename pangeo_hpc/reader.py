"""A lazy array over one variable split along time across many HDF5/NetCDF4 files.

Dask reads it block by block with :mod:`h5py`, without xarray's backend lock: each worker
process opens the file it needs, reads whole fields, and decodes CF packing and fill values
itself. Run it on process workers: HDF5 serialises threads within one process.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import h5py
import numpy as np


@dataclass(frozen=True, slots=True)
class Decoding:
    """CF decoding of stored values: fill/missing values become NaN, then scale and offset."""

    fill_values: tuple[float, ...] = ()
    scale_factor: float | None = None
    add_offset: float | None = None

    @classmethod
    def from_attrs(cls, attrs: h5py.AttributeManager) -> Decoding:
        fills: list[float] = []
        for key in ("_FillValue", "missing_value"):
            if key in attrs:
                fills += [float(v) for v in np.atleast_1d(attrs[key])]
        fills = [v for v in fills if not np.isnan(v)]

        def scalar(key: str) -> float | None:
            return float(np.atleast_1d(attrs[key])[0]) if key in attrs else None

        return cls(tuple(dict.fromkeys(fills)), scalar("scale_factor"), scalar("add_offset"))

    def apply(self, raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
        out = raw.astype(dtype, copy=False)
        if self.fill_values:
            mask = np.isin(raw, self.fill_values)
            if mask.any():
                out = np.where(mask, np.nan, out).astype(dtype, copy=False)
        if self.scale_factor is not None:
            out = out * dtype.type(self.scale_factor)
        if self.add_offset is not None:
            out = out + dtype.type(self.add_offset)
        return out


class MultiFileArray:
    """Array-like view ``(time, *field_shape)`` over ``variable`` in consecutive files.

    Indexing with slices and integers reads just the needed hyperslab; index arrays are
    applied after reading the rows they span. ``lengths[i]`` is the number of time steps in
    ``paths[i]``.
    """

    __slots__ = ("_offsets", "decoding", "dtype", "lengths", "ndim", "paths", "shape", "variable")

    def __init__(
        self,
        paths: Sequence[str],
        variable: str,
        lengths: Sequence[int],
        field_shape: tuple[int, ...],
        dtype: np.dtype,
        decoding: Decoding,
    ) -> None:
        self.paths = list(paths)
        self.variable = variable
        self.lengths = list(lengths)
        self._offsets = np.concatenate([[0], np.cumsum(self.lengths)]).astype(int)
        self.shape = (int(self._offsets[-1]), *field_shape)
        self.ndim = len(self.shape)
        self.dtype = np.dtype(dtype)
        self.decoding = decoding

    def __getitem__(self, key: object) -> np.ndarray:
        key = _expand(key, self.ndim)
        rows = np.arange(self.shape[0])[key[0]]
        scalar = np.ndim(rows) == 0
        rows = np.atleast_1d(rows)
        simple = all(isinstance(k, slice | int | np.integer) for k in key[1:])
        field_key = key[1:] if simple else (slice(None),) * (self.ndim - 1)
        if rows.size == 0:
            block = self._rows(0, 0, field_key)
        else:
            lo, hi = int(rows.min()), int(rows.max()) + 1
            block = self._rows(lo, hi, field_key)
            if not (isinstance(key[0], slice) and rows.size == hi - lo and rows[0] == lo):
                block = block[rows - lo]
        if not simple:
            block = block[(slice(None), *key[1:])]
        return block[0] if scalar else block

    def _rows(self, start: int, stop: int, field_key: tuple) -> np.ndarray:
        """Rows ``start:stop`` along time, each file read once."""
        parts = []
        first = int(np.searchsorted(self._offsets, start, side="right")) - 1
        for i in range(max(first, 0), len(self.paths)):
            lo, hi = self._offsets[i], self._offsets[i + 1]
            if lo >= stop:
                break
            a, b = max(start, lo) - lo, min(stop, hi) - lo
            if b > a:
                parts.append(self._read(i, (slice(a, b), *field_key)))
        if not parts:
            shape = np.empty(self.shape[1:], dtype=bool)[field_key].shape
            return np.empty((0, *shape), dtype=self.dtype)
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def _read(self, i: int, key: tuple[slice, ...]) -> np.ndarray:
        with h5py.File(self.paths[i], "r") as f:
            raw = f[self.variable][key]
        return self.decoding.apply(raw, self.dtype)


def _expand(key: object, ndim: int) -> tuple:
    """``key`` as a tuple of ``ndim`` entries (Ellipsis expanded, missing axes filled)."""
    key = key if isinstance(key, tuple) else (key,)
    if any(k is None for k in key):
        raise TypeError("MultiFileArray does not add axes (None in the index)")
    if Ellipsis in key:
        i = key.index(Ellipsis)
        key = key[:i] + (slice(None),) * (ndim - len(key) + 1) + key[i + 1 :]
    return key + (slice(None),) * (ndim - len(key))
