"""Walltime strings as batch schedulers write them, and worker lifetimes that fit inside."""

from __future__ import annotations

import re

from pangeo_hpc.errors import InputError

_SLURM = re.compile(r"^(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?$")
_UNITS = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhd])$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_walltime(value: object) -> int:
    """Seconds in a walltime: ``HH:MM:SS``, ``D-HH:MM:SS``, ``MM`` (minutes), ``90m``, ``2h``.

    Colon forms follow Slurm: ``M``, ``M:S``, ``H:M:S``, ``D-H``, ``D-H:M``, ``D-H:M:S``.

    Parameters
    ----------
    value : object
        A walltime.

    Returns
    -------
    int
        Seconds.

    Raises
    ------
    InputError
        For anything else.

    Examples
    --------
    >>> parse_walltime("02:00:00"), parse_walltime("1-00:30:00"), parse_walltime("45m")
    (7200, 88200, 2700)
    """
    text = str(value).strip().lower() if isinstance(value, str | int) else None
    m = _SLURM.match(text or "")
    if m:
        d, a, b, c = m.groups()
        if d is not None:  # D-H, D-H:M, D-H:M:S
            secs = int(d) * 86400 + int(a) * 3600 + int(b or 0) * 60 + int(c or 0)
        elif c is not None:  # H:M:S
            secs = int(a) * 3600 + int(b) * 60 + int(c)
        else:  # M or M:S
            secs = int(a) * 60 + int(b or 0)
    elif (u := _UNITS.match(text or "")) is not None:
        secs = round(float(u.group(1)) * _SECONDS[u.group(2)])
    else:
        raise InputError(
            f"walltime {value!r} is not a duration: write HH:MM:SS (e.g. 02:00:00), "
            "D-HH:MM:SS, or 90m / 2h"
        )
    if secs <= 0:
        raise InputError(f"walltime {value!r} must be longer than zero, e.g. 01:00:00")
    return secs


def format_walltime(seconds: int) -> str:
    """``HH:MM:SS`` (hours may exceed 24), as every scheduler accepts.

    Parameters
    ----------
    seconds : int
        Seconds.

    Returns
    -------
    str
        The text.

    Examples
    --------
    >>> format_walltime(90061)
    '25:01:01'
    """
    h, rest = divmod(int(seconds), 3600)
    return f"{h:02d}:{rest // 60:02d}:{rest % 60:02d}"


def lifetime(walltime: object) -> tuple[int, int]:
    """Worker ``--lifetime`` and ``--lifetime-stagger`` (seconds) that end before the job.

    Workers retire gracefully (handing their data over) before the scheduler kills the job:
    10 % of the walltime but at least 1 and at most 10 minutes of margin, and a stagger of
    half the margin so that not every worker leaves at once.

    Parameters
    ----------
    walltime : object
        The job's walltime (as :func:`parse_walltime` reads it).

    Returns
    -------
    tuple[int, int]
        ``(lifetime, stagger)`` seconds.

    Examples
    --------
    >>> lifetime("02:00:00")  # 10 minutes of margin, a stagger of 5
    (6600, 300)
    >>> lifetime("30m")
    (1620, 90)
    """
    wall = parse_walltime(walltime)
    margin = min(max(wall // 10, 60), 600)
    margin = min(margin, wall // 2)
    return wall - margin, margin // 2
