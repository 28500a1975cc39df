"""What a run of a recipe on its data would read, its cached partial states considered.

A recipe that runs incrementally (:mod:`pangeo_hpc.batch.incremental.run`) reads only the files
whose partial states are not in the state cache yet; ``plan --data`` predicts from those
bytes. The check is cheap and read-only: the recipe's data are opened lazily (their
catalog), each file is stamped (``os.stat``, or one HEAD per S3 object, as a run does) and
the cache is looked at by entry name: the run's own plan
(:func:`~pangeo_hpc.batch.incremental.read_plan.plan_reads`, the
:class:`~pangeo_hpc.batch.incremental.read_plan.ReadPlan`
a run reports from). No state is loaded, nothing is computed, and nothing in the cache is
marked used.

Sizes are those :mod:`pangeo_hpc.planning.calibrate` fits its rates on: the uncompressed
bytes of the recipe's (first) variable, and the files as stored.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pangeo_hpc.batch.chains.recipe_yaml import Recipe, load
from pangeo_hpc.batch.incremental.read_plan import plan_reads
from pangeo_hpc.batch.incremental.state_cache import FLAG, StateCache, open_cache
from pangeo_hpc.batch.pipeline.steps import CACHE_OFF, data_root, open_dataset
from pangeo_hpc.errors import named

__all__ = ["Reads", "reads"]


@dataclass(frozen=True)
class Reads:
    """The inputs of a run over a period, and what of them it would read.

    Attributes
    ----------
    recipe : str
        The recipe's name.
    period : (str, str)
        First and last day of the data, ``YYYY-MM-DD``.
    incremental : bool
        Whether the run would take partial states from the cache; else ``why`` says why not
        and every file is to read.
    files, files_cached, files_unused, files_to_read : int
        The files of the period (counted per piece of the time axis, as a run's report
        counts them), those whose states are cached, those no step uses, those to read.
    size, size_to_read : int
        Uncompressed bytes of the recipe's variable: all, and in the files to read.
    stored, stored_to_read : int
        Bytes of the files as stored: all, and of the files to read.
    why : str, optional
        Why the run would not be incremental.
    cache : str, optional
        The cache folder looked at.

    Examples
    --------
    >>> from pangeo_hpc.planning.reads import reads
    >>> r = reads("era5-sst-mean", "data/era5-demo", end="2000-12")  # doctest: +SKIP
    >>> r.files_to_read, r.size_to_read  # doctest: +SKIP
    """

    recipe: str
    period: tuple[str, str]
    incremental: bool
    files: int
    files_cached: int
    files_unused: int
    files_to_read: int
    size: int
    size_to_read: int
    stored: int
    stored_to_read: int
    why: str | None = None
    cache: str | None = None

    @property
    def ratio(self) -> float:
        """Uncompressed over stored bytes of all the files (the compression ratio)."""
        return self.size / self.stored if self.stored else 1.0

    def line(self) -> str:
        """One line: what is cached and what is left to read.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> r = Reads("r", ("2000-01-01", "2019-12-31"), True, 240, 239, 0, 1, 0, 0,
        ...           700_000_000, 2_900_000, cache="/c")
        >>> r.line()
        "239 of 240 files cached (pangeo-hpc.cache.folder '/c'): 1 file, 2.9 MB to read"
        """
        mb = self.stored_to_read / 1e6
        left = f"{self.files_to_read} file{'s' * (self.files_to_read != 1)}, {mb:,.1f} MB to read"
        if not self.incremental:
            return f"not incremental ({self.why}): all {left}"
        text = (
            f"{self.files_cached} of {self.files} files cached ({named(FLAG, self.cache)}): {left}"
        )
        return text + (f", {self.files_unused} not needed" if self.files_unused else "")


def reads(
    recipe: Recipe | str,
    data: str | Path | None = None,
    *,
    start: str | None = None,
    end: str | None = None,
    cache: StateCache | bool | None = None,
    s3: Any = None,
) -> Reads:
    """What a run of ``recipe`` on ``data`` from ``start`` to ``end`` would read.

    Parameters
    ----------
    recipe : Recipe or str
        The recipe, or its name or YAML path.
    data : str or Path, optional
        Its data (default config ``data.root``): a folder or ``s3://bucket/prefix``.
    start, end : str, optional
        First and last month, ``YYYY-MM``; default the recipe's period.
    cache : StateCache or bool, optional
        The state cache a run would use (default config ``pangeo-hpc.cache.folder``);
        ``False``: as if nothing were cached (``--no-cache``: the run reads every file).
    s3 : S3Options, optional
        How to reach ``s3://`` data.

    Returns
    -------
    Reads

    Examples
    --------
    >>> from pangeo_hpc.planning.reads import reads
    >>> r = reads("era5-sst-mean", "data/era5-demo", end="2000-12")  # doctest: +SKIP
    >>> print(r.line())  # doctest: +SKIP
    """
    spec = load(recipe) if isinstance(recipe, str) else recipe
    ds = open_dataset(spec, data_root(data), start=start, end=end, s3=s3)
    var = ds[spec.variable]
    t = var.dims[0]
    axis = ds[t].values
    period = (str(axis[0])[:10], str(axis[-1])[:10])
    size, stored = int(var.nbytes), int(ds.encoding["source_bytes"])
    store = open_cache(cache)
    prepared, plan = plan_reads(spec, ds, store, why_not=CACHE_OFF, s3=s3)
    if isinstance(prepared, str):
        files = plan.files
        return Reads(spec.name, period, False, files, 0, 0, files, size, size, stored, stored,
                     why=plan.why, cache=None if store is None else str(store.folder))  # fmt: skip
    steps = sum(prepared.pieces[i][1] - prepared.pieces[i][0] for i in plan.to_read)
    return Reads(
        spec.name,
        period,
        True,
        files=plan.files,
        files_cached=plan.files_reused,
        files_unused=plan.files_unused,
        files_to_read=plan.files_to_read,
        size=size,
        size_to_read=round(size * steps / var.sizes[t]),
        stored=stored,
        stored_to_read=plan.bytes_to_read,
        cache=plan.cache,
    )
