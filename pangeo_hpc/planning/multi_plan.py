"""The plan of a recipe over several datasets: the sum of its datasets' plans.

A run of such a recipe (:func:`~pangeo_hpc.batch.pipeline.multi_run.run_multi`) starts one
cluster and computes the datasets one after the other on it, each as a one-dataset recipe
named ``RECIPE.DATASET`` (:func:`~pangeo_hpc.batch.pipeline.multi_run.dataset_recipes`),
incrementally through the state cache; the combine runs after them, in the client's process,
on their small results (not planned). So, per node count:

- each dataset is planned as its own recipe on its own files
  (:func:`~pangeo_hpc.planning.plan.plan`, with what of them is cached), from the
  calibration of ``RECIPE.DATASET`` (``calibrate RECIPE`` measures every dataset's);
- the wall times add up (low, median and high ends each), and so do the tasks;
- the jobs start once: the queue, the workers' arrival and the billed startup are counted
  once (:meth:`~pangeo_hpc.planning.model.Model.billed` on the summed wall times), not once
  per dataset;
- the bottleneck is the longest dataset's; efficiency and read rate are over the whole.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pangeo_hpc.batch.chains.multi_yaml import MultiRecipe
from pangeo_hpc.batch.pipeline.multi_run import dataset_recipes
from pangeo_hpc.batch.pipeline.steps import data_root
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import format_bytes
from pangeo_hpc.planning.calibration import Calibration, calibrate_call, load_calibration
from pangeo_hpc.planning.plan import Plan, plan
from pangeo_hpc.planning.plan_text import fewest_nodes, rows_text

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["MultiPlan", "plan_multi"]


@dataclass
class MultiPlan:
    """The plan of a recipe over several datasets: each dataset's plan and their sum.

    Attributes
    ----------
    recipe : str
        The recipe's name.
    parts : dict of str to Plan
        Each dataset's plan (its ``reads``: its files and what of them is cached).
    rows : list of dict
        One row per node count, the datasets summed (:func:`_summed_row`), with the keys
        of a :class:`~pangeo_hpc.planning.plan.Plan`'s rows.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi
    >>> from pangeo_hpc.planning.multi_plan import plan_multi
    >>> spec = load_multi("model-vs-era5-t2m")
    >>> mp = plan_multi(spec, data="data/era5-demo")  # doctest: +SKIP
    >>> list(mp.parts), mp.best()["nodes"]  # doctest: +SKIP
    """

    recipe: str
    parts: dict[str, Plan]
    rows: list[dict[str, Any]]

    @property
    def first(self) -> Plan:
        """The first dataset's plan."""
        return next(iter(self.parts.values()))

    @property
    def model(self) -> Any:
        """The first dataset's :class:`~pangeo_hpc.planning.model.Model`: the site's
        figures every dataset shares (price, jobs' start, processes), as a budget reads
        them."""
        return self.first.model

    def best(self, within: float = 0.1) -> dict[str, Any]:
        """The fewest nodes whose summed wall time is within ``within`` of the fastest.

        Parameters
        ----------
        within : float, optional
            Fraction above the fastest accepted.

        Returns
        -------
        dict[str, Any]
            The summed row.

        Examples
        --------
        >>> from pangeo_hpc.batch import load_multi
        >>> from pangeo_hpc.planning.multi_plan import plan_multi
        >>> spec = load_multi("model-vs-era5-t2m")
        >>> mp = plan_multi(spec, data="data/era5-demo")  # doctest: +SKIP
        >>> mp.best()["nodes"]  # doctest: +SKIP
        """
        return dict(fewest_nodes(self.rows, within))

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON: the recipe, each dataset's plan and the summed rows.

        Returns
        -------
        dict[str, Any]
            The document.

        Examples
        --------
        >>> from pangeo_hpc.batch import load_multi
        >>> from pangeo_hpc.planning.multi_plan import plan_multi
        >>> spec = load_multi("model-vs-era5-t2m")
        >>> mp = plan_multi(spec, data="data/era5-demo")  # doctest: +SKIP
        >>> sorted(mp.to_json())  # doctest: +SKIP
        """
        return {
            "recipe": self.recipe,
            "datasets": {n: p.to_json() for n, p in self.parts.items()},
            "rows": [dict(r) for r in self.rows],
        }

    def text(self) -> str:
        """Each dataset's reads and figures in a line or two, then the summed table.

        Returns
        -------
        str
            The text.

        Examples
        --------
        >>> from pangeo_hpc.batch import load_multi
        >>> from pangeo_hpc.planning.multi_plan import plan_multi
        >>> spec = load_multi("model-vs-era5-t2m")
        >>> mp = plan_multi(spec, data="data/era5-demo")  # doctest: +SKIP
        >>> print(mp.text())  # doctest: +SKIP
        """
        size = sum(p.model.size for p in self.parts.values())
        stored = sum(p.model.size / p.model.ratio for p in self.parts.values())
        names = ", ".join(self.parts)
        lines = [
            f"plan for {self.recipe}: {len(self.parts)} datasets ({names}) one after the "
            f"other on one cluster, {format_bytes(size)} uncompressed to read "
            f"({format_bytes(int(stored))} stored)"
        ]
        for name, p in self.parts.items():
            m = p.model
            reads = f"inputs: {p.reads.line()}" if p.reads is not None else ""
            lines.append(
                f"  {name} ({p.recipe}, {p.reads.period[0]}..{p.reads.period[1]}): {reads}"
                if p.reads is not None
                else f"  {name} ({p.recipe})"
            )
            lines.append(
                f"    {format_bytes(m.size)} uncompressed to read, ratio {m.ratio:.2f}; measured "
                f"{m.process_rate / 1e6:,.0f} MB/s per process, {m.fixed:.2f} s per run"
            )
        m = self.first.model
        lines.append(
            f"nodes: {m.processes} processes, {m.cores} cores"
            + (f", ${m.price:g}/node-hour" if m.price is not None else "")
            + f"; storage {m.storage.describe()}; the jobs start once"
        )
        lines += [f"  {k}: {v}" for k, v in self.first.sources.items()]
        files = [p.reads for p in self.parts.values() if p.reads is not None]
        counted = (sum(r.files_to_read for r in files), sum(r.files for r in files))
        return "\n".join([*lines, *rows_text(m, self.rows, counted if files else None)])

    def plot(self, ax: Axes | None = None) -> Axes:
        """As :meth:`pangeo_hpc.planning.plan.Plan.plot`, of the summed rows.

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
        >>> from pangeo_hpc.batch import load_multi
        >>> from pangeo_hpc.planning.multi_plan import plan_multi
        >>> spec = load_multi("model-vs-era5-t2m")
        >>> mp = plan_multi(spec, data="data/era5-demo")  # doctest: +SKIP
        >>> ax = mp.plot(Figure().add_subplot())  # doctest: +SKIP
        """
        summed = Plan(self.recipe, self.first.model, self.rows, dict(self.first.sources))
        ax = summed.plot(ax)
        size = sum(p.model.size for p in self.parts.values())
        ax.set_title(f"{self.recipe}: {len(self.parts)} datasets, {format_bytes(size)}")
        return ax


def _summed_row(rows: Sequence[dict[str, Any]], model: Any) -> dict[str, Any]:
    """Rows of one node count, one per dataset (:meth:`Model.predict`), as one run on one
    cluster: wall times and tasks added, the jobs' start and the startup billed once by
    ``model`` (:meth:`~pangeo_hpc.planning.model.Model.billed`), the longest dataset's
    bottleneck, efficiencies weighted by wall time."""
    nodes = rows[0]["nodes"]
    wall = sum(r["wall_s"] for r in rows)
    low, high = sum(r["wall_low_s"] for r in rows), sum(r["wall_high_s"] for r in rows)

    def weighted(key: str) -> float:
        return sum(r[key] * r["wall_s"] for r in rows) / wall if wall else rows[0][key]

    longest = max(rows, key=lambda r: r["wall_s"])
    return {
        "nodes": nodes,
        "workers": rows[0]["workers"],
        "tasks": sum(r["tasks"] for r in rows),
        "chunks_per_process": sum(r["chunks_per_process"] for r in rows),
        "chunk_s": weighted("chunk_s"),
        "wall_s": wall,
        "efficiency": weighted("efficiency"),
        "tail_efficiency": weighted("tail_efficiency"),
        "bottleneck": longest["bottleneck"],
        "read_MB_s": weighted("read_MB_s"),
        **model.billed(nodes, wall, low, high),
    }


def plan_multi(
    spec: MultiRecipe,
    *,
    data: str | Path | None = None,
    start: str | None = None,
    end: str | None = None,
    calibration: Calibration | str | Path | None = None,
    **options: Any,
) -> MultiPlan:
    """Plan ``spec`` from its datasets' files: the sum of their plans (see the module's
    description).

    Parameters
    ----------
    spec : MultiRecipe
        The recipe (:func:`pangeo_hpc.batch.chains.multi_yaml.load_multi`).
    data : str or Path, optional
        The data root (``{data}`` in a dataset's ``files:``, the era5-pds tree of the
        others); default config ``pangeo-hpc.data.root``.
    start, end : str, optional
        First and last month, for every dataset.
    calibration : Calibration or path, optional
        As for :func:`~pangeo_hpc.planning.plan.plan`; it must hold ``RECIPE.DATASET``
        for every dataset.
    **options
        The other keywords of :func:`~pangeo_hpc.planning.plan.plan` (``cache``,
        ``profile``, ``options``, ``storage``, ``price``, ``nodes``, ``chunk``, ``ratio``,
        ``startup``, ``host_cores``, ``s3``), for every dataset.

    Returns
    -------
    MultiPlan

    Raises
    ------
    InputError
        A dataset without a calibration (naming it and the ``calibrate`` call that
        measures every dataset), and as :func:`~pangeo_hpc.planning.plan.plan`.

    Examples
    --------
    >>> from pangeo_hpc.batch import load_multi
    >>> from pangeo_hpc.planning.multi_plan import plan_multi
    >>> spec = load_multi("model-vs-era5-t2m")
    >>> mp = plan_multi(spec, data="data/era5-demo")  # doctest: +SKIP
    >>> print(mp.text())  # doctest: +SKIP
    """
    if options.get("size") is not None:
        raise InputError(
            f"recipe {spec.name!r} is over several datasets, each with its own files: it is "
            "planned from them, not from one size; give data= (--data) instead of size=",
            param=("size", "data"),
        )
    options.pop("size", None)
    if not isinstance(calibration, Calibration):
        calibration = load_calibration(calibration)
    root = data_root(data)
    recipes = dataset_recipes(spec, root, start=start, end=end)
    for name, one in recipes.items():
        if one.name not in calibration.recipes:
            call, words = calibrate_call(spec.name, "local", "local")
            raise InputError(
                f"no calibration for {one.name!r} (the dataset {name!r} of {spec.name!r}) in "
                f"{calibration.source!r}: measure every dataset with {call}",
                commands={call: words},
            )
    parts = {
        name: plan(one, data=root, start=start, end=end, calibration=calibration, **options)
        for name, one in recipes.items()
    }
    first = next(iter(parts.values()))
    rows = [
        _summed_row([p.rows[i] for p in parts.values()], first.model)
        for i in range(len(first.rows))
    ]
    return MultiPlan(spec.name, parts, rows)
