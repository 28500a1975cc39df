"""What a run reads of its inputs: one :class:`ReadPlan`, built once, and the run's
:class:`Report` made from it.

:func:`plan_reads` plans an incremental run (:func:`~pangeo_hpc.batch.incremental.plan.prepare`)
and looks at the state cache by entry name: the pieces whose states are cached (an entry of
their own, or inside the roll-up of the last run) are *reused*, those no step uses are *not
needed*, the others are *to read*. Cheap and read-only: no state is loaded, none is marked
used. The same plan decides whether a local run needs worker processes
(:mod:`pangeo_hpc.batch.pipeline.execute`), predicts a run's bytes (``plan --data``,
:mod:`pangeo_hpc.planning.reads`) and, with what the run found on the way (an entry that
could not be read is a miss: its files are read), is what ``summary.json``'s ``reads`` and
the printed reads line say.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import xarray as xr

from pangeo_hpc.batch.incremental.plan import Prepared, prepare
from pangeo_hpc.batch.incremental.rollups import rollup_pieces
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.io.byte_reads import bytes_read

__all__ = ["ReadPlan", "Report", "plan_reads", "worker_reads"]


@dataclass(frozen=True)
class ReadPlan:
    """The input files of a run by piece of the time axis, and which are reused, to read,
    or not needed.

    Attributes
    ----------
    pieces : tuple of tuple of str
        The files of each piece (one per variable).
    sizes : dict
        Bytes of each file as stored (from its stamp), where known.
    reused : frozenset of int
        Pieces whose states come from the cache.
    unused : frozenset of int
        Pieces no step uses (another season, a month the steps select away).
    why : str, optional
        Why the run is not incremental (then every piece is to read).
    cache : str, optional
        The state cache's folder.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.read_plan import ReadPlan
    >>> plan = ReadPlan((("2000-01.nc",), ("2000-02.nc",), ("2000-03.nc",)),
    ...                 {"2000-01.nc": 3_000_000, "2000-02.nc": 2_000_000, "2000-03.nc": 1_000_000},
    ...                 reused=frozenset({0}), unused=frozenset({2}))
    >>> plan.files_reused, plan.files_to_read, plan.bytes_to_read
    (1, 1, 2000000)
    """

    pieces: tuple[tuple[str, ...], ...]
    sizes: dict[str, int] = field(default_factory=dict)
    reused: frozenset[int] = frozenset()
    unused: frozenset[int] = frozenset()
    why: str | None = None
    cache: str | None = None

    @classmethod
    def whole(cls, data: xr.Dataset, why: str, cache: str | None = None) -> ReadPlan:
        """A run that reads every file of ``data`` (not incremental, for ``why``).

        Parameters
        ----------
        data : xr.Dataset
            The dataset read.
        why : str
            Why the run is not incremental.
        cache : str, optional
            The cache's folder, or ``None``.

        Examples
        --------
        >>> from pangeo_hpc.batch import open_inputs
        >>> from pangeo_hpc.batch.incremental.read_plan import ReadPlan
        >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
        >>> plan = ReadPlan.whole(inputs.dataset, "caching is off")  # doctest: +SKIP
        >>> plan.files_to_read == plan.files  # doctest: +SKIP
        """
        files = list(data.encoding.get("source_files") or [])
        stamps = data.encoding.get("source_stamps") or {}
        sizes = {f: int(stamps[f].size) for f in files if f in stamps}
        return cls(tuple((f,) for f in files), sizes, why=why, cache=cache)

    @property
    def incremental(self) -> bool:
        """Whether states are taken from and saved to the cache."""
        return self.why is None

    @property
    def to_read(self) -> frozenset[int]:
        """Pieces whose files are read."""
        return frozenset(range(len(self.pieces))) - self.reused - self.unused

    def _files(self, pieces: Any) -> int:
        return sum(len(self.pieces[i]) for i in pieces)

    @property
    def files(self) -> int:
        """Files of every piece (counted per piece, a file of two pieces twice)."""
        return self._files(range(len(self.pieces)))

    @property
    def files_reused(self) -> int:
        return self._files(self.reused)

    @property
    def files_to_read(self) -> int:
        return self._files(self.to_read)

    @property
    def files_unused(self) -> int:
        return self._files(self.unused)

    @property
    def bytes_to_read(self) -> int:
        """Stored bytes of the files to read (each once), as far as their sizes are known."""
        files = {f for i in self.to_read for f in self.pieces[i]}
        return sum(self.sizes.get(f, 0) for f in files)

    def as_run(self, read: Any) -> ReadPlan:
        """This plan as a run carried it out, having read the pieces ``read``: more than
        planned where a cached state turned out unreadable (a miss: its files are read) or
        a roll-up was replaced since the plan was made, fewer where another run saved
        states in between.

        Parameters
        ----------
        read : Any
            The pieces read.

        Returns
        -------
        ReadPlan
            The plan as carried out.

        Examples
        --------
        >>> from pangeo_hpc.batch.incremental.read_plan import ReadPlan
        >>> sizes = {"2000-01.nc": 30, "2000-02.nc": 20}
        >>> plan = ReadPlan((("2000-01.nc",), ("2000-02.nc",)), sizes, reused=frozenset({0}))
        >>> plan.as_run(read={0, 1}).files_to_read  # a cached state turned out unreadable
        2
        """
        read = frozenset(read)
        if read == self.to_read:
            return self
        return replace(self, reused=frozenset(range(len(self.pieces))) - self.unused - read)


def plan_reads(
    recipe: Any,
    data: xr.Dataset,
    cache: StateCache | None,
    *,
    why_not: str,
    s3: Any = None,
    memo: Any = None,
) -> tuple[Prepared | str, ReadPlan]:
    """The incremental plan of ``recipe`` on ``data`` (or why it runs whole) and what it
    reads with ``cache`` (``None``: caching is off, for ``why_not``).

    Parameters
    ----------
    recipe : Recipe
        The recipe.
    data : xarray.Dataset
        Its data, opened (:func:`~pangeo_hpc.batch.pipeline.steps.open_dataset`).
    cache : StateCache or None
        Where a run would look.
    why_not : str
        Why the run is not incremental when ``cache`` is ``None``.
    s3, memo : optional
        As for :func:`~pangeo_hpc.batch.incremental.plan.prepare`.

    Returns
    -------
    (Prepared or str, ReadPlan)

    Examples
    --------
    >>> from pangeo_hpc.batch import StateCache, open_inputs
    >>> from pangeo_hpc.batch.incremental.read_plan import plan_reads
    >>> inputs = open_inputs("era5-sst-mean", data="data/era5-demo")  # doctest: +SKIP
    >>> spec, ds = inputs.spec, inputs.dataset  # doctest: +SKIP
    >>> prepared, reads = plan_reads(spec, ds, StateCache(), why_not="")  # doctest: +SKIP
    >>> reads.files_reused, reads.files_to_read  # doctest: +SKIP
    """
    folder = None if cache is None else str(cache.folder)
    if cache is None:
        return why_not, ReadPlan.whole(data, why_not)
    prepared = prepare(recipe, data, s3=s3, memo=memo)
    if isinstance(prepared, str):
        return prepared, ReadPlan.whole(data, prepared)
    unused = prepared.unused()
    reused = set(range(len(prepared.pieces))) - unused
    for c, plan in prepared.chains.items():
        in_rollup = rollup_pieces(cache, prepared, c, report=False)
        for i in list(reused):
            if plan.uses(i) and i not in in_rollup and not cache.has(prepared.keys[c, i]):
                reused.discard(i)
    pieces = tuple(tuple(files) for _, _, files in prepared.pieces)
    # keyed by the files as the plan names them: a stamp's path is absolute, the files are
    # as the data root was given (relative in ``--data data/era5-demo``)
    sizes = {
        f: int(s.size)
        for files, stamps in zip(pieces, prepared.stamps, strict=True)
        for f, s in zip(files, stamps, strict=True)
    }
    return prepared, ReadPlan(pieces, sizes, frozenset(reused), frozenset(unused), cache=folder)


@dataclass
class Report:
    """What a run read and reused (its :class:`ReadPlan`, as it turned out), for
    ``summary.json``.

    Attributes
    ----------
    plan : ReadPlan
        What was planned, as it turned out.
    bytes_read : int, optional
        Bytes the workers read.
    states_saved : int, optional
        States put in the cache.
    caching : str, optional
        Why caching stopped during the run, or ``None``.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.read_plan import ReadPlan, Report
    >>> sizes = {"2000-01.nc": 3_000_000, "2000-02.nc": 2_000_000}
    >>> plan = ReadPlan((("2000-01.nc",), ("2000-02.nc",)), sizes, reused=frozenset({0}))
    >>> report = Report(plan, bytes_read=1_900_000, states_saved=1)
    >>> report.as_dict()["files_read"], report.as_dict()["bytes_read"]
    (1, 1900000)
    """

    plan: ReadPlan
    bytes_read: int = 0
    states_saved: int = 0
    caching: str | None = None

    @property
    def incremental(self) -> bool:
        return self.plan.incremental

    @property
    def why(self) -> str | None:
        return self.plan.why

    @property
    def files(self) -> int:
        return self.plan.files

    @property
    def files_reused(self) -> int:
        return self.plan.files_reused

    @property
    def files_read(self) -> int:
        return self.plan.files_to_read

    @property
    def files_skipped(self) -> int:
        return self.plan.files_unused

    @property
    def cache(self) -> str | None:
        return self.plan.cache

    def as_dict(self) -> dict[str, Any]:
        """``summary.json``'s ``reads``: the files reused, read and not needed, the stored
        bytes of the files read (``bytes_to_read``, from their stamps) and the bytes the
        reader counted (``bytes_read``).

        Returns
        -------
        dict[str, Any]
            The record.

        Examples
        --------
        >>> from pangeo_hpc.batch.incremental.read_plan import ReadPlan, Report
        >>> sizes = {"2000-01.nc": 30, "2000-02.nc": 20}
        >>> plan = ReadPlan((("2000-01.nc",), ("2000-02.nc",)), sizes, reused=frozenset({0}))
        >>> Report(plan, bytes_read=19, states_saved=1).as_dict()
        {'incremental': True, 'files': 2, 'files_reused': 1, 'files_read': 1, 'files_skipped...
        """
        out = {
            "incremental": self.incremental,
            "why": self.why,
            "files": self.files,
            "files_reused": self.files_reused,
            "files_read": self.files_read,
            "files_skipped": self.files_skipped,
            "bytes_to_read": self.plan.bytes_to_read,
            "bytes_read": self.bytes_read,
            "states_saved": self.states_saved,
            "cache": self.cache,
            "caching": self.caching,
        }
        return {k: v for k, v in out.items() if v is not None}

    def line(self) -> str:
        """One line for the log: what was reused and read.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> from pangeo_hpc.batch.incremental.read_plan import ReadPlan, Report
        >>> sizes = {"2000-01.nc": 30, "2000-02.nc": 20}
        >>> plan = ReadPlan((("2000-01.nc",), ("2000-02.nc",)), sizes, reused=frozenset({0}))
        >>> Report(plan, bytes_read=19, states_saved=1).line()
        "incremental: 1 of 2 files' states reused, 1 file read (0.0 MB)"
        """
        mb = self.bytes_read / 1e6
        if not self.incremental:
            return f"not incremental ({self.why}): read {_files(self.files)}, {mb:.1f} MB"
        whose = "file's" if self.files == 1 else "files'"
        text = (
            f"incremental: {self.files_reused} of {self.files} {whose} states reused, "
            f"{_files(self.files_read)} read ({mb:.1f} MB)"
        )
        if self.files_skipped:
            text += f", {self.files_skipped} not needed"
        return text + (f"; {self.caching}" if self.caching else "")


def _files(n: int) -> str:
    return f"{n} file" if n == 1 else f"{n} files"


def worker_reads(client: Any, before: dict[str, int] | None = None) -> Any:
    """Each worker's :func:`~pangeo_hpc.io.byte_reads.bytes_read`; with ``before``: the bytes
    read since then, summed over the workers (a worker new since then from zero).

    Parameters
    ----------
    client : distributed.Client
        A client of the workers.
    before : dict[str, int], optional
        An earlier answer of this function, or ``None``.

    Returns
    -------
    dict or int
        Bytes read by worker address; with ``before``, the bytes since then in all.

    Examples
    --------
    >>> from pangeo_hpc.batch.incremental.read_plan import worker_reads
    >>> before = worker_reads(client)  # doctest: +SKIP
    >>> client.compute(result).result()  # doctest: +SKIP
    >>> worker_reads(client, before)  # bytes the workers read since  # doctest: +SKIP
    """
    now = client.run(bytes_read)
    if before is None:
        return now
    return int(sum(v - before.get(k, 0) for k, v in now.items()))
