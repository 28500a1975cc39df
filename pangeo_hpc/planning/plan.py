"""Plan before you pay: wall time, efficiency, bottleneck and cost of a recipe per node count.

The model (``docs/scaling.md``) is a bound-and-waves model fed by measurements
(:mod:`pangeo_hpc.planning.calibrate`):

- the data are ``chunks`` read tasks of ``chunk`` uncompressed bytes (``data.time-chunk-mb``,
  never across files); the recipe's graph has ``tasks_per_chunk`` tasks per chunk;
- at most ``min(processes, cores)`` worker processes per node decode at once (HDF5
  serialises the threads of one process), and at most ``chunks`` in all;
- the chunks take the longest of three times: the CPU's, ``ceil(chunks / busy processes)``
  waves of ``chunk / process_rate`` seconds (the last wave may leave processes idle: the
  long tail); the storage's, stored bytes over its bandwidth (shared by all nodes for a
  parallel file system, per node for S3 or local disks); the network's, stored bytes over
  the nodes' links (for storage reached over the network);
- the scheduler hands out tasks one after the other: ``tasks x task_overhead`` seconds,
  with ``task_overhead`` growing with the number of workers;
- wall time = fixed cost + the longer of the waves and the scheduler's time; cost = nodes x
  (wall time + startup) x price per node-hour.

Examples
--------
>>> p = plan("era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s")
>>> print(p.text())  # doctest: +SKIP
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pangeo_hpc import config
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.clusters import profiles
from pangeo_hpc.errors import InputError, named
from pangeo_hpc.inputs.sizes import parse_rate, parse_size
from pangeo_hpc.planning.calibration import Calibration, calibrate_call, load_calibration
from pangeo_hpc.planning.model import (
    STORAGE_KINDS,
    Model,
    Storage,
    fused_read_tasks,
    parse_storage,
)
from pangeo_hpc.planning.plan_text import fewest_nodes, plan_text
from pangeo_hpc.planning.reads import Reads, reads

# the model's names come with the planner that uses them
__all__ = [
    "STORAGE_KINDS",
    "Model",
    "Plan",
    "Reads",
    "Storage",
    "parse_storage",
    "plan",
    "reads",
]

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

    from pangeo_hpc.batch.chains.recipe_yaml import Recipe
    from pangeo_hpc.s3.options import S3Options


@dataclass
class Plan:
    """Predicted rows per node count, with what they were predicted from (``reads``: the
    recipe's files and what of them is cached, for a plan from its data).

    Attributes
    ----------
    recipe : str
        The recipe's name.
    model : Model
        Every input of the prediction.
    rows : list of dict
        One row per node count: wall time (and its low and high ends), efficiency, long
        tail, bottleneck, node-hours and cost.
    sources : dict of str to str
        Where each input came from (the calibration file, the profile, an option).
    reads : Reads or None
        The recipe's files and what of them is cached, for a plan from its data.

    Examples
    --------
    >>> from pangeo_hpc.planning.plan import plan
    >>> p = plan(  # doctest: +SKIP
    ...     "era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s"
    ... )
    >>> p.table()  # doctest: +SKIP
    """

    recipe: str
    model: Model
    rows: list[dict[str, Any]]
    sources: dict[str, str] = field(default_factory=dict)
    reads: Reads | None = None

    def table(self) -> pd.DataFrame:
        """The rows as a DataFrame indexed by nodes.

        Returns
        -------
        pd.DataFrame
            The table.

        Examples
        --------
        >>> from pangeo_hpc.planning.plan import plan
        >>> p = plan("era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s")
        >>> p.table().index.tolist()
        [1, 2, 4, 8, 16, 32, 64]
        >>> int(p.table().loc[1, "workers"])  # 36 processes a node
        36
        """
        import pandas as pd

        return pd.DataFrame(self.rows).set_index("nodes")

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON: the recipe, the model's inputs, what it reads and the rows
        (each with its low and high ends: ``wall_low_s``, ``cost_high`` ...).

        Returns
        -------
        dict[str, Any]
            The document.

        Examples
        --------
        >>> from pangeo_hpc.planning.plan import plan
        >>> p = plan("era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s")
        >>> doc = p.to_json()
        >>> sorted(doc), doc["rows"][0]["nodes"]
        (['model', 'reads', 'recipe', 'rows', 'sources'], 1)
        """
        m = asdict(self.model)
        m["storage"] = self.model.storage.describe()
        return {
            "recipe": self.recipe,
            "model": m,
            "reads": asdict(self.reads) if self.reads is not None else None,
            "sources": dict(self.sources),
            "rows": [dict(r) for r in self.rows],
        }

    def best(self, within: float = 0.1) -> dict[str, Any]:
        """The fewest nodes whose wall time is within ``within`` of the fastest.

        Parameters
        ----------
        within : float, optional
            Fraction above the fastest accepted.

        Returns
        -------
        dict[str, Any]
            The row.

        Examples
        --------
        >>> from pangeo_hpc.planning.plan import plan
        >>> p = plan("era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s")
        >>> best = p.best()  # the fewest nodes within 10 % of the fastest
        >>> bool(best["wall_s"] <= 1.1 * p.table()["wall_s"].min())
        True
        """
        return dict(fewest_nodes(self.rows, within))

    def text(self) -> str:
        """The plan as a table a terminal shows, with its inputs and a recommendation.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> from pangeo_hpc.planning.plan import plan
        >>> p = plan("era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s")
        >>> print(p.text().splitlines()[0])
        plan for era5-sst-mean: 300.0 GB uncompressed (... GB stored, ...), ... chunks of 128 MB
        """
        return plan_text(self.recipe, self.model, self.rows, self.sources, self.reads)

    def plot(self, ax: Axes | None = None) -> Axes:
        """Wall time (log) and cost per node count, bottlenecks marked, on ``ax`` (for a file:
        ``Figure().add_subplot()``, no pyplot); default a new pyplot figure, as a notebook shows.

        Parameters
        ----------
        ax : Axes, optional
            The axes to draw on; ``None``: a new pyplot figure.

        Returns
        -------
        Axes
            The axes.

        Examples
        --------
        >>> from matplotlib.figure import Figure
        >>> from pangeo_hpc.planning.plan import plan
        >>> p = plan("era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s")
        >>> ax = p.plot(Figure().add_subplot())
        >>> ax.get_xlabel()
        'nodes'
        """
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(7, 4), layout="constrained")
        nodes = [r["nodes"] for r in self.rows]
        ax.plot(nodes, [r["wall_s"] for r in self.rows], "o-", color="C0", label="wall time")
        for r in self.rows:
            ax.annotate(r["bottleneck"], (r["nodes"], r["wall_s"]), fontsize=7,
                        textcoords="offset points", xytext=(3, 5))  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="nodes", ylabel="predicted wall time (s)")
        ax.set_xticks(nodes, [str(n) for n in nodes])
        ax.set_title(f"{self.recipe}: {self.model.size / 1e9:,.0f} GB, {self.model.storage.kind}")
        if self.model.price is not None:
            cost = ax.twinx()
            cost.plot(nodes, [r["cost"] for r in self.rows], "s--", color="C1", label="cost")
            cost.set_ylabel("cost ($)", color="C1")
        ax.grid(True, which="both", alpha=0.3)
        return ax


def _price(value: object) -> float:
    """``3.888``, ``3.888/h``, ``$3.888/h``: dollars per node-hour."""
    text = str(value).strip().lstrip("$").removesuffix("/h").removesuffix("/hour")
    try:
        price = float(text)
    except ValueError:
        price = -1.0
    if not math.isfinite(price) or price < 0 or isinstance(value, bool):
        raise InputError(
            f"price={value!r} is not a price per node-hour: write it like '3.888/h'",
            param="price",
        )
    return price


def _nodes(value: Iterable[int] | str | None) -> list[int]:
    if value is None:
        value = config.get("plan.nodes")
    if isinstance(value, str):
        parts = [p.strip() for p in value.split(",")]
        if not all(p.isdigit() for p in parts):
            raise InputError(
                f"nodes={value!r} is not node counts: write them like '1,2,4,8'", param="nodes"
            )
        value = [int(p) for p in parts]
    out = sorted(set(value))
    if not out or any(not isinstance(n, int) or isinstance(n, bool) or n < 1 for n in out):
        raise InputError(
            f"nodes={value!r} must be whole numbers, 1 or more, e.g. [1, 2, 4, 8]", param="nodes"
        )
    return out


def plan(
    recipe: str | Recipe,
    size: int | str | None = None,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    cache: StateCache | bool | None = None,
    profile: str = "local",
    options: Mapping[str, Any] | None = None,
    storage: str | None = None,
    price: float | str | None = None,
    nodes: Sequence[int] | str | None = None,
    chunk: int | str | None = None,
    ratio: float | None = None,
    startup: float | None = None,
    calibration: Calibration | str | Path | None = None,
    host_cores: int | None = None,
    s3: S3Options | None = None,
) -> Plan:
    """Predict the wall time, efficiency, bottleneck and cost of ``recipe`` per node count.

    Parameters
    ----------
    recipe : str or Recipe
        A recipe name (``era5-sst-mean``) or a loaded recipe; the calibration of its name
        is used.
    size : int or str, optional
        Uncompressed size of the data it reads, e.g. ``"300GB"`` (xarray's ``nbytes``).
        Give it or ``data``.
    data : str or Path, optional
        The recipe's data (a folder or ``s3://bucket/prefix``): plan from its files over
        ``start`` to ``end`` (:func:`~pangeo_hpc.planning.reads.reads`). A recipe that runs
        incrementally reads only the files whose partial states are not cached: the plan
        is of those bytes; the others say why not and plan all of them. The compression
        ratio is then the files' own.
    start, end : str, optional
        With ``data``: first and last month, ``YYYY-MM``; default the recipe's period.
    cache : StateCache or bool, optional
        With ``data``: the state cache a run would use (default config
        ``pangeo-hpc.cache.folder``); ``False``: as if nothing were cached (``--no-cache``).
    profile : str
        Site profile for processes, cores, network and price per node (``profiles``); on a
        batch cluster, the jobs' queue and their workers' arrival that ``calibrate``
        measured on it (:attr:`Calibration.starts`, keyed by profile, or by kind for a
        cluster started without one: ``slurm``); on a local cluster, its start that
        ``calibrate`` measured on one (``local``: the workers' arrival, no queue).
    options : mapping, optional
        The profile's options as a run resolves them (its overrides on top, or a Slurm
        partition's cores without a profile); default those of ``profile``.
    storage : str, optional
        ``KIND[:RATE]``: ``fsx:2880MB/s`` (shared by all nodes), ``s3`` or ``local`` (per
        node), ``cache`` (already in memory). Without a rate, the calibration's. Default:
        the profile's ``storage``, else ``local``.
    price : float or str, optional
        Dollars per node-hour (``3.888/h``). Default: the profile's ``price``.
    nodes : sequence of int or str, optional
        Node counts; default config ``plan.nodes``.
    chunk : int or str, optional
        Uncompressed bytes per read task; default config ``data.time-chunk-mb``.
    ratio : float, optional
        Compression ratio of the files; default the files' own with ``data``, else the
        calibration's.
    startup : float, optional
        Seconds billed per node besides the run; default config ``plan.startup``.
    calibration : Calibration or path, optional
        Default: the file ``calibrate`` wrote (config ``plan.calibration``), else the
        figures shipped in config ``plan.fallback``.
    host_cores : int, optional
        Workers and scheduler share one host of this many cores (see :class:`Model`).
    s3 : S3Options, optional
        With ``s3://`` data or an ``s3://`` calibration object: how to reach them.

    Returns
    -------
    Plan

    Raises
    ------
    InputError
        An unknown profile or recipe, a size, rate, price or node count that cannot be read;
        neither ``size`` nor ``data``, or both.

    Examples
    --------
    >>> from pangeo_hpc.planning.plan import plan
    >>> p = plan(  # doctest: +SKIP
    ...     "era5-sst-mean", "300GB", profile="aws-c5n.18xlarge", storage="fsx:2880MB/s"
    ... )
    >>> print(p.text())  # doctest: +SKIP
    """
    if size is None and data is None:
        raise InputError(
            "a plan needs size= (the data's uncompressed size, e.g. '300GB') or data= (the "
            "recipe's files, e.g. '/fsx/era5-pds')",
            param=("size", "data"),
        )
    if size is not None and data is not None:
        raise InputError(
            f"{named('size', size)} and {named('data', data)} both given: plan either a "
            "size or the recipe's files, not both",
            param=("size", "data"),
        )
    if data is None and (start, end, cache) != (None, None, None):
        raise InputError(
            "start=, end= and cache= choose what to plan of data=: give data= too",
            param=("start", "end", "data"),
        )
    if not isinstance(calibration, Calibration):
        calibration = load_calibration(calibration, s3)
    spec, recipe = recipe, (recipe if isinstance(recipe, str) else recipe.name)
    fit = calibration.recipe(recipe)
    site = dict(options) if options is not None else profiles.resolve(profile)
    batch = site.get("kind", "local") != "local"
    if batch:  # as the job script: one process per core unless told otherwise
        site["processes"] = site.get("processes") or site.get("cores")
    queue, arrival = (0.0, 0.0), (0.0, 0.0)
    arrival_workers = None  # the workers whose start was measured together
    if batch and profile in calibration.starts:
        queue, arrival = calibration.starts[profile].ranges()
        arrival_workers = calibration.starts[profile].jobs * site["processes"]
    if site.get("kind", "local") == "local":
        # a local cluster: this host's cores, shared by the workers and the scheduler; its
        # workers' start measured by calibrate on a local cluster (no queue), one per core
        if "local" in calibration.starts:
            queue, arrival = calibration.starts["local"].ranges()
            arrival_workers = calibration.cores
        site = {"cores": calibration.cores, "processes": calibration.cores, **site}
        host_cores = host_cores or site["cores"]
        nodes = nodes or [1]
    for key in ("cores", "processes"):
        if not isinstance(site.get(key), int) or site[key] < 1:
            raise InputError(f"profile {profile!r} needs {key} (a whole number) for a plan")
    default_chunk = f"{config.get('data.time-chunk-mb')}MB"
    inputs = None if data is None else reads(spec, data, start=start, end=end, cache=cache, s3=s3)
    chunk_bytes = parse_size(chunk if chunk is not None else default_chunk, name="chunk")
    if ratio is None:
        ratio = inputs.ratio if inputs is not None else fit.ratio
    # with data: 0 when every file's state is cached (a given size is at least a byte)
    nbytes = inputs.size_to_read if inputs is not None else parse_size(size, name="size")
    model = Model(
        size=nbytes,
        ratio=float(ratio),
        chunk=chunk_bytes,
        tasks_per_chunk=fit.tasks_per_chunk,
        process_rate=fit.process_rate,
        task_overhead=fit.scheduler_task or calibration.task_overhead,
        overhead_per_worker=calibration.overhead_per_worker,
        fixed=fit.fixed,
        processes=site["processes"],
        cores=site["cores"],
        storage=parse_storage(storage or site.get("storage") or "local", calibration.storage),
        network=parse_rate(site["network"], name="network") if site.get("network") else None,
        price=_price(price if price is not None else site["price"])
        if price is not None or site.get("price") is not None
        else None,
        startup=float(startup if startup is not None else config.get("plan.startup")),
        task_cost=fit.task_cost,
        warmup=fit.warmup,
        load_slowdown=fit.load_slowdown,
        host_cores=host_cores,
        spread=(float(fit.spread[0]), float(fit.spread[1])),
        queue=queue,
        arrival=arrival,
        arrival_workers=arrival_workers,
        # fused reads: the spans the reader sums, not one task per chunk
        read_tasks=fused_read_tasks(nbytes, chunk_bytes) or None if fit.fused else None,
    )
    rows = [model.predict(n) for n in _nodes(nodes)]
    sources = {"calibration": calibration.describe()}
    if batch and profile not in calibration.starts:
        call, _ = calibrate_call(recipe, profile, site["kind"])
        sources["job start"] = f"not measured on {profile!r}: counted as 0 (measure: {call})"
    return Plan(recipe=recipe, model=model, rows=rows, sources=sources, reads=inputs)


def _with_model(p: Plan, **changes: Any) -> Plan:
    """The same plan with some model inputs changed (``storage=...``, ``ratio=...``)."""
    model = replace(p.model, **changes)
    rows = [model.predict(r["nodes"]) for r in p.rows]
    return Plan(p.recipe, model, rows, dict(p.sources), p.reads)
