"""Site profiles: named sets of cluster options kept in dask config (``pangeo-hpc.profiles``)."""

from __future__ import annotations

from typing import Any

import dask.config

from pangeo_hpc.errors import InputError

KINDS = ("local", "slurm", "pbs", "sge", "gateway")


def names() -> list[str]:
    """The profiles defined in config (shipped ones and the user's).

    Returns
    -------
    list[str]
        The names, sorted.

    Examples
    --------
    >>> from pangeo_hpc.clusters.profiles import names
    >>> "sdsc-comet" in names()
    True
    """
    return sorted(dask.config.get("pangeo-hpc.profiles", {}) or {})


def resolve(name: str, **overrides: Any) -> dict[str, Any]:
    """The options of profile ``name`` with ``overrides`` on top, keys as Python names.

    ``None`` overrides are ignored, so callers can pass their optional arguments through.

    Parameters
    ----------
    name : str
        A profile of :func:`names`.
    **overrides : Any
        Options that replace the profile's (``cores=8``).

    Returns
    -------
    dict[str, Any]
        The options.

    Raises
    ------
    InputError
        If there is no profile ``name`` (the message lists the known ones), or its kind
        is unknown.

    Examples
    --------
    >>> from pangeo_hpc.clusters.profiles import resolve
    >>> options = resolve("sdsc-comet", walltime="00:30:00", queue=None)
    >>> options["kind"], options["walltime"]
    ('slurm', '00:30:00')
    """
    profiles = dask.config.get("pangeo-hpc.profiles", {}) or {}
    if name not in profiles:
        raise InputError(
            f"unknown profile {name!r}: choose one of {names()}, or define it in "
            "~/.config/dask/pangeo-hpc.yaml under pangeo-hpc.profiles"
        )
    out = {k.replace("-", "_"): v for k, v in (profiles[name] or {}).items()}
    out.update({k: v for k, v in overrides.items() if v is not None})
    kind = out.get("kind", "local")
    if kind not in KINDS:
        raise InputError(f"profile {name!r} has kind {kind!r}: use one of {KINDS}")
    return out


def describe(name: str) -> str:
    """One line: kind, and cores/processes/memory/walltime (a gateway's options) where set.

    Parameters
    ----------
    name : str
        A profile of :func:`names`.

    Returns
    -------
    str
        The line.

    Examples
    --------
    >>> from pangeo_hpc.clusters.profiles import describe
    >>> describe("sdsc-comet")
    'slurm queue=compute cores=24 processes=12 memory=120GB walltime=02:00:00 interface=ib0'
    """
    p = resolve(name)
    parts = [p.get("kind", "local")]
    for key in ("queue", "cores", "processes", "memory", "walltime", "interface"):
        if p.get(key) is not None:
            parts.append(f"{key}={p[key]}")
    parts += [f"{k}={v}" for k, v in (p.get("options") or {}).items()]
    return " ".join(str(x) for x in parts)
