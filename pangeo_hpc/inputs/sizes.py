"""Sizes users type (``150GB``, ``512MiB``, ``1e9``) and memory per job, checked once."""

from __future__ import annotations

import decimal
import math
import re

from pangeo_hpc.errors import InputError, named

_SIZE = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([a-z]*)\s*$", re.IGNORECASE)

__all__ = ["format_bytes", "parse_size"]


def _bad(name: str, value: object, problem: str, fix: str) -> InputError:
    """``size='lots' is not a size: FIX`` for a parameter, ``memory 'lots' ...`` for a
    setting, ``'lots' ...`` without a name (the caller names it)."""
    what = named(name, value) if name else repr(value)
    return InputError(f"{what} {problem}: {fix}", param=name if name.isidentifier() else None)


def parse_size(value: object, *, name: str = "size") -> int:
    """Bytes in a size: ``150GB``, ``1.5 GiB``, ``512MiB``, ``4096``, or a positive number.

    Units as Dask reads them: ``kB``, ``MB``, ``GB`` ... are powers of 1000, ``KiB``,
    ``MiB``, ``GiB`` ... powers of 1024 (case does not matter). Exact at any size: no
    floating point on the way (Dask's ``parse_bytes`` rounds above 2**53 bytes).

    Parameters
    ----------
    value : str or int or float
        The size.
    name : str
        What it is, for the error: the parameter that took ``value`` (``"memory"``, shown
        as ``memory='lots'``), a setting (``"pangeo-hpc.storage.block-size"``), or empty
        where the caller names it.

    Returns
    -------
    int
        Bytes, at least 1.

    Raises
    ------
    InputError
        One line naming the value and how to write it.

    Examples
    --------
    >>> parse_size("150GB"), parse_size("512MiB"), parse_size(4096)
    (150000000000, 536870912, 4096)
    """
    fix = "write it like 150GB or 512MiB"
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _bad(name, value, "is not a size", fix)
    if isinstance(value, str):
        m = _SIZE.match(value)
        from dask.utils import byte_sizes  # here: the command line's --help imports no dask

        unit = byte_sizes.get(m.group(2).lower()) if m else None
        if m is None or unit is None:
            raise _bad(name, value, "is not a size", fix)
        try:
            n = int(decimal.Decimal(m.group(1)) * unit)
        except (decimal.InvalidOperation, OverflowError):
            raise _bad(name, value, "is not a size", fix) from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise _bad(name, value, "is not a size", fix)
    else:
        n = int(value)
    if n < 1:
        raise _bad(name, value, "must be at least one byte", fix)
    return n


_RATE = re.compile(r"^\s*(.+?)\s*(?:/\s*s|ps)\s*$", re.IGNORECASE)
#: bits: "100Gbit", "25Gb" (lower-case b; "25GB" is bytes)
_BITS = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)\s*([kKmMgGtT]?)(?:[bB][iI][tT]|b)\s*$")


def parse_rate(value: object, *, name: str = "rate") -> float:
    """Bytes per second in a rate: ``2880MB/s``, ``1.5 GiB/s``, ``100Gbit/s``, ``25Gbps``.

    Byte units as :func:`parse_size`; ``bit``, ``kbit``, ``Mbit``, ``Gbit``, ``Tbit`` (and
    ``Gbps``...) are powers of 1000 bits. A bare number is bytes per second.

    Parameters
    ----------
    value : str or int or float
        The rate.
    name : str
        What it is, for the error, as for :func:`parse_size` (e.g. ``"network"``).

    Returns
    -------
    float
        Bytes per second, > 0.

    Raises
    ------
    InputError
        One line naming the value and how to write it.

    Examples
    --------
    >>> parse_rate("2880MB/s"), parse_rate("100Gbit/s"), parse_rate("25Gbps")
    (2880000000.0, 12500000000.0, 3125000000.0)
    """
    fix = "write it like 2880MB/s or 100Gbit/s"
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise _bad(name, value, "is not a rate", fix)
    if not isinstance(value, str):
        if not math.isfinite(value) or value <= 0:
            raise _bad(name, value, "is not a rate above 0", fix)
        return float(value)
    m = _RATE.match(value)
    if m is None:
        raise _bad(name, value, "is not a rate (per second)", fix)
    bits = _BITS.match(m.group(1))
    if bits:
        scale = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12}[bits.group(2).lower()]
        return float(bits.group(1)) * scale / 8
    try:
        return float(parse_size(m.group(1), name=""))
    except InputError:
        raise _bad(name, value, "is not a rate", fix) from None


def format_bytes(n: int) -> str:
    """``1.50 GiB`` for ``1610612736``: dask's :func:`dask.utils.format_bytes`, imported at
    the first call (the command line's ``--help`` imports no dask).

    Parameters
    ----------
    n : int
        Bytes.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> format_bytes(1610612736)
    '1.50 GiB'
    """
    from dask.utils import format_bytes as dask_format_bytes

    return dask_format_bytes(n)
