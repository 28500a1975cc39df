"""The calibration file: what :mod:`pangeo_hpc.planning.plan` reads and
:mod:`pangeo_hpc.planning.calibrate` measures, per host and recipe, in JSON.

The file (config ``plan.calibration``) is JSON; each ``calibrate`` run updates its recipe and
keeps the others. Figures the file lacks come from the shipped ones (config ``plan.fallback``).
It may be an object, ``s3://bucket/key`` (shared by the machines of a site): read with one GET,
written as one marked object (:func:`pangeo_hpc.write.targets.output_file`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pangeo_hpc import config
from pangeo_hpc.errors import InputError, named
from pangeo_hpc.s3.options import S3Options

VERSION = 1


@dataclass(frozen=True)
class RecipeFit:
    """What one recipe costs per byte and per run, measured.

    Attributes
    ----------
    process_rate : float
        Uncompressed bytes/s one busy worker process decodes and reduces.
    tasks_per_chunk : float
        Tasks of the recipe's graph per read chunk.
    fixed : float
        Seconds per run beyond the chunks and the scheduler (submission, gathering).
    task_cost : float
        Worker CPU seconds per task besides the computing itself (messages, bookkeeping).
    scheduler_task : float
        CPU seconds of the scheduler (and client) process per task of the recipe's graph.
    warmup : float
        Worker CPU seconds of a fresh worker process before its first chunk (imports, JIT).
    load_slowdown : float
        How much longer a chunk computes when every core of the host is busy than when one
        process is (shared caches, memory bandwidth, SMT siblings, turbo).
    ratio : float
        Uncompressed / stored bytes of the files measured.
    chunk : int
        Uncompressed bytes per read chunk of the data measured.
    chunks : int
        Read chunks of the data measured.
    walls : list of float
        Wall times of the measured runs (s).
    spread : list of float
        ``[low, high]``: the fastest and the slowest of the repeated runs over the median of
        their size, each size on its own (``[1, 1]``: not measured); the plan's range.
    workers : int
        Worker processes of the measuring cluster.
    data : str
        What was read (root and period).
    fused : bool
        The recipe's reads are fused with its area mean
        (:mod:`pangeo_hpc.recipes.fusion`): a read task spans several chunks, so the plan
        counts the fused spans (:func:`pangeo_hpc.planning.model.fused_read_tasks`), not
        the chunks; ``chunks`` and the figures per chunk are then per read task.

    Examples
    --------
    >>> from pangeo_hpc.planning.calibration import RecipeFit
    >>> fit = RecipeFit(process_rate=185e6, tasks_per_chunk=5.0, fixed=0.0, ratio=2.73)
    >>> fit.process_rate / 1e6, fit.load_slowdown  # MB/s per worker process; no slowdown
    (185.0, 1.0)
    """

    process_rate: float
    tasks_per_chunk: float
    fixed: float
    ratio: float
    task_cost: float = 0.0
    scheduler_task: float = 0.0
    warmup: float = 0.0
    load_slowdown: float = 1.0
    chunk: int = 0
    chunks: int = 0
    walls: list[float] = field(default_factory=list)
    workers: int = 1
    data: str = ""
    spread: list[float] = field(default_factory=lambda: [1.0, 1.0])
    fused: bool = False


@dataclass(frozen=True)
class JobStarts:
    """How long the batch jobs of one site take before their workers are there, measured
    by ``calibrate`` on that site's cluster (:func:`pangeo_hpc.planning.measure.job_starts`).

    Attributes
    ----------
    queue : list of float
        Seconds from a job's submission to its start, one per job measured (not billed).
    arrival : list of float
        Seconds from a job's start to its last worker connected (billed).
    jobs : int
        Jobs submitted at once in each round.
    created : str
        When (ISO 8601).

    Examples
    --------
    >>> from pangeo_hpc.planning.calibration import JobStarts
    >>> starts = JobStarts(queue=[12.0, 30.0, 18.0], arrival=[4.0, 6.5, 5.0], jobs=2)
    >>> starts.ranges()  # ((queue low, high), (arrival low, high)), seconds
    ((12.0, 30.0), (4.0, 6.5))
    """

    queue: list[float]
    arrival: list[float]
    jobs: int = 1
    created: str = ""

    def ranges(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """``((queue low, high), (arrival low, high))`` in seconds.

        Returns
        -------
        ((float, float), (float, float))
            The ranges.

        Examples
        --------
        >>> from pangeo_hpc.planning.calibration import JobStarts
        >>> JobStarts(queue=[12.0, 30.0, 18.0], arrival=[4.0, 6.5, 5.0]).ranges()
        ((12.0, 30.0), (4.0, 6.5))
        """
        return (min(self.queue), max(self.queue)), (min(self.arrival), max(self.arrival))


@dataclass(frozen=True)
class Calibration:
    """Measured inputs of the plan: per recipe, the scheduler, the storage paths.

    Attributes
    ----------
    host : str
        The host ``calibrate`` ran on.
    cores : int
        Its cores.
    created : str
        When (ISO 8601).
    task_overhead : float
        Seconds of wall time per no-op task
        (:func:`pangeo_hpc.planning.overhead.task_overhead`).
    overhead_per_worker : float, optional
        Scheduler seconds per task added by each worker
        (:func:`pangeo_hpc.planning.measure.simulated_growth`).
    storage : dict[str, float], optional
        Read rates (bytes/s) by storage kind (``fsx``, ``s3``, ``local``, ``cache``).
    recipes : dict[str, RecipeFit], optional
        The fit of each recipe measured, by name.
    source : str, optional
        Where the figures came from (a file, or the shipped figures), for the plan's
        text.
    starts : dict[str, JobStarts], optional
        The batch jobs' start times of each site measured, by site.

    Examples
    --------
    >>> from pangeo_hpc import config
    >>> from pangeo_hpc.planning.calibration import Calibration
    >>> shipped = Calibration.from_json(config.get("plan.fallback"), "shipped figures")
    >>> shipped.recipe("era5-sst-mean").process_rate > 0  # bytes/s per worker process
    True
    """

    host: str
    cores: int
    created: str
    task_overhead: float
    overhead_per_worker: float = 0.0
    storage: dict[str, float] = field(default_factory=dict)
    recipes: dict[str, RecipeFit] = field(default_factory=dict)
    source: str = ""
    starts: dict[str, JobStarts] = field(default_factory=dict)

    def recipe(self, name: str) -> RecipeFit:
        """The fit of recipe ``name``, or an error telling how to measure it.

        Parameters
        ----------
        name : str
            A recipe's name.

        Returns
        -------
        RecipeFit
            The fit.

        Raises
        ------
        InputError
            If the recipe was never measured (the message gives the ``calibrate``
            call).

        Examples
        --------
        >>> from pangeo_hpc import config
        >>> from pangeo_hpc.planning.calibration import Calibration
        >>> shipped = Calibration.from_json(config.get("plan.fallback"), "shipped figures")
        >>> shipped.recipe("era5-sst-mean").tasks_per_chunk > 0
        True
        >>> shipped.recipe("my-recipe")
        Traceback (most recent call last):
            ...
        pangeo_hpc.errors.InputError: no calibration for recipe 'my-recipe' (calibrated: ...
        """
        if name not in self.recipes:
            call = f"calibrate({name!r})"
            raise InputError(
                f"no calibration for recipe {name!r} (calibrated: {sorted(self.recipes)}): "
                f"measure it with {call}",
                commands={call: ["calibrate", name]},
            )
        return self.recipes[name]

    def describe(self) -> str:
        """Where the figures come from, in one line.

        Returns
        -------
        str
            The line.

        Examples
        --------
        >>> from pangeo_hpc import config
        >>> from pangeo_hpc.planning.calibration import Calibration
        >>> Calibration.from_json(config.get("plan.fallback"), "shipped figures").describe()
        'shipped figures, measured on ... (... cores) ...'
        """
        return f"{self.source}, measured on {self.host} ({self.cores} cores) {self.created[:10]}"

    def to_json(self) -> dict[str, Any]:
        """The file's content.

        Returns
        -------
        dict[str, Any]
            The document.

        Examples
        --------
        >>> from pangeo_hpc import config
        >>> from pangeo_hpc.planning.calibration import Calibration
        >>> shipped = Calibration.from_json(config.get("plan.fallback"), "shipped figures")
        >>> again = Calibration.from_json(shipped.to_json(), "copy")
        >>> again.recipes == shipped.recipes
        True
        """
        doc = asdict(self)
        doc.pop("source")
        return {"version": VERSION, **doc}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], source: str) -> Calibration:
        """Read the file's content (or config ``plan.fallback``).

        Parameters
        ----------
        doc : Mapping[str, Any]
            The document.
        source : str
            Where it came from (for :meth:`describe`).

        Examples
        --------
        >>> from pangeo_hpc import config
        >>> from pangeo_hpc.planning.calibration import Calibration
        >>> shipped = Calibration.from_json(config.get("plan.fallback"), "shipped figures")
        >>> shipped.source, "era5-sst-mean" in shipped.recipes
        ('shipped figures', True)
        """
        try:
            recipes = {k: RecipeFit(**v) for k, v in (doc.get("recipes") or {}).items()}
            starts = {k: JobStarts(**v) for k, v in (doc.get("starts") or {}).items()}
            if any(not (s.queue and s.arrival) for s in starts.values()):
                raise ValueError("a site's job starts without measurements")
            return cls(
                host=str(doc["host"]),
                cores=int(doc["cores"]),
                created=str(doc["created"]),
                task_overhead=float(doc["task_overhead"]),
                overhead_per_worker=float(doc.get("overhead_per_worker", 0.0)),
                storage={str(k): float(v) for k, v in (doc.get("storage") or {}).items()},
                recipes=recipes,
                source=source,
                starts=starts,
            )
        except (KeyError, TypeError, ValueError) as exc:
            call = f"calibrate(path={source!r})"
            raise InputError(
                f"calibration {source!r} cannot be read ({exc!r}): measure again with "
                f"{call}, or delete the file",
                commands={call: ["calibrate", "--calibration", source]},
            ) from None


def calibrate_call(recipe: str, site: str, kind: str) -> tuple[str, list[str]]:
    """The call that measures ``recipe`` on ``site`` (a profile, or a kind such as
    ``slurm``) and the command line's words for it, for messages (``commands``).

    Parameters
    ----------
    recipe : str
        The recipe's name.
    site : str
        A profile, or a cluster kind.
    kind : str
        The cluster's kind.

    Returns
    -------
    (str, list of str)
        The Python call, and the words of ``python -m pangeo_hpc.run calibrate ...``.

    Examples
    --------
    >>> from pangeo_hpc.planning.calibration import calibrate_call
    >>> calibrate_call("era5-sst-mean", "local", "local")
    ("calibrate('era5-sst-mean')", ['calibrate', 'era5-sst-mean'])
    """
    if kind == "local":
        return f"calibrate({recipe!r})", ["calibrate", recipe]
    words = ["calibrate", recipe, "--cluster", kind]
    if site != kind:
        words += ["--profile", site]
    return f"calibrate({recipe!r}, client=<a client of {site}>, profile={site!r})", words


def calibration_path(path: str | Path | None = None) -> Path | str:
    """The calibration file: ``path``, else config ``plan.calibration``; an ``s3://`` URL
    as it is.

    Parameters
    ----------
    path : str or Path, optional
        The file or ``s3://`` URL given, or ``None``.

    Returns
    -------
    Path or str
        A local path (``~`` expanded), or the URL.

    Examples
    --------
    >>> from pangeo_hpc.planning.calibration import calibration_path
    >>> print(calibration_path("figures.json"), calibration_path("s3://bucket/calibration.json"))
    figures.json s3://bucket/calibration.json
    """
    from pangeo_hpc.s3.options import is_s3

    given = str(config.get("plan.calibration", path))
    return given if is_s3(given) else Path(given).expanduser()


def _calibration_text(p: Path | str, s3: S3Options | None = None) -> str | None:
    """The text of the calibration file or object ``p`` (``s3``: how to reach it);
    ``None`` if there is none."""
    if isinstance(p, Path):
        try:
            return p.read_text()
        except FileNotFoundError:
            return None
    import obstore
    from obstore.exceptions import NotFoundError

    from pangeo_hpc.write.s3_guard import S3Target

    target = S3Target.of(p, s3, flag="calibration")
    try:
        return bytes(obstore.get(target.store, target.prefix).bytes()).decode()
    except (NotFoundError, FileNotFoundError):
        return None


def is_calibration_file(p: Path) -> bool:
    """Whether ``p`` is a calibration file this package wrote (marked, or of an earlier
    version: its keys).

    Parameters
    ----------
    p : Path
        An existing file.

    Returns
    -------
    bool
        ``True`` for a calibration file of this package.

    Examples
    --------
    >>> import json
    >>> from pathlib import Path
    >>> from pangeo_hpc import config
    >>> from pangeo_hpc.planning.calibration import Calibration, is_calibration_file
    >>> shipped = Calibration.from_json(config.get("plan.fallback"), "shipped figures")
    >>> _ = Path("old.json").write_text(json.dumps(shipped.to_json()))  # an earlier version's
    >>> _ = Path("notes.json").write_text("{}")
    >>> is_calibration_file(Path("old.json")), is_calibration_file(Path("notes.json"))
    (True, False)
    """
    from pangeo_hpc.write.marks import file_is_ours

    if file_is_ours(p):
        return True
    try:
        doc = json.loads(p.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(doc, dict) and {"version", "host", "task_overhead", "recipes"} <= set(doc)


def calibration_target(
    path: str | Path | None = None,
    data: object = None,
    *,
    flag: str = "path",
    s3: S3Options | None = None,
) -> Path | str:
    """The calibration file ``calibrate`` will update, checked before anything runs: new,
    or a calibration file this package wrote (never a user's file of the same name), and
    not inside the ``data`` it measures. ``flag`` names ``path`` in messages (a parameter,
    or the CLI's flag). An ``s3://bucket/key`` is checked as an object
    (:func:`pangeo_hpc.write.targets.check_output_file`, ``s3``: its endpoint and
    credentials) and returned as its URL.

    Parameters
    ----------
    path : str or Path, optional
        The file or ``s3://`` URL; default config ``plan.calibration``.
    data : object, optional
        The data the calibration measures (the file may not be inside it); default
        config ``data.root``.
    flag : str, optional
        How messages name ``path``.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` target.

    Returns
    -------
    Path or str
        The local path or the URL.

    Raises
    ------
    InputError
        If the target is a folder, a file this package did not write, or inside
        ``data``.

    Examples
    --------
    >>> from pangeo_hpc.planning.calibration import calibration_target
    >>> print(calibration_target("calibration.json", data="data/era5-demo"))  # new: may be written
    calibration.json
    >>> from pathlib import Path
    >>> _ = Path("notes.json").write_text("{}")  # a file of the user's
    >>> calibration_target("notes.json")
    Traceback (most recent call last):
        ...
    pangeo_hpc.errors.InputError: path='notes.json' exists and is not a calibration file...
    """
    from pangeo_hpc.s3.options import is_s3
    from pangeo_hpc.write.guard import check_inputs, local_path
    from pangeo_hpc.write.targets import check_output_file

    given = config.get("plan.calibration", path)
    if is_s3(given):
        return str(check_output_file(given, inputs=[data], flag=flag, s3=s3))
    p = local_path(given, flag)
    check_inputs(p, [data or config.get("data.root")], flag)
    if p.is_dir() or (p.exists() and not is_calibration_file(p)):
        raise InputError(
            f"{named(flag, p)} exists and is not a calibration file pangeo-hpc "
            f"wrote: move it away or pass {named(flag, 'NEW.json')} (nothing was changed)",
            param=flag if flag.isidentifier() else None,
        )
    return p


def read_calibration(p: Path | str, s3: S3Options | None = None) -> Calibration | None:
    """The figures of the calibration file (or object) ``p`` alone, ``None`` if there is
    none.

    Parameters
    ----------
    p : Path or str
        The file, or an ``s3://`` object.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` object.

    Returns
    -------
    Calibration or None
        Its figures, or ``None`` when there is no such file.

    Raises
    ------
    InputError
        If the file is not readable JSON.

    Examples
    --------
    >>> import json
    >>> from pathlib import Path
    >>> from pangeo_hpc import config
    >>> from pangeo_hpc.planning.calibration import Calibration, read_calibration
    >>> read_calibration(Path("no-calibration.json")) is None
    True
    >>> doc = Calibration.from_json(config.get("plan.fallback"), "shipped figures").to_json()
    >>> _ = Path("figures.json").write_text(json.dumps(doc))
    >>> read_calibration(Path("figures.json")).source
    'figures.json'
    """
    return None if _calibration_text(p, s3) is None else _read_calibration_file(p, s3)


def _read_calibration_file(p: Path | str, s3: S3Options | None = None) -> Calibration:
    """The figures of the calibration file (or ``s3://`` object, reached with ``s3``)
    ``p`` alone (no shipped ones)."""
    try:
        text = _calibration_text(p, s3)
        if text is None:
            raise FileNotFoundError(f"no such file: {str(p)!r}")
        doc = json.loads(text)
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(
            f"calibration {str(p)!r} is not readable JSON ({exc}): delete it"
        ) from None
    return Calibration.from_json(doc, str(p))


def load_calibration(path: str | Path | None = None, s3: S3Options | None = None) -> Calibration:
    """The calibration file's figures over the shipped ones (config ``plan.fallback``).

    A recipe or storage kind the file lacks comes from the shipped figures; an explicit
    ``path`` that does not exist is an error.

    Parameters
    ----------
    path : str or Path, optional
        The calibration file, or an ``s3://bucket/key`` object; default config
        ``plan.calibration``.
    s3 : S3Options, optional
        Endpoint and credentials of an ``s3://`` object; default :meth:`S3Options.resolve`.

    Returns
    -------
    Calibration
        The figures per recipe, of the scheduler and of the storage paths.

    Examples
    --------
    >>> from pangeo_hpc.planning.calibrate import load_calibration
    >>> "era5-sst-mean" in load_calibration().recipes  # shipped figures until calibrate ran
    True
    """
    shipped = Calibration.from_json(config.get("plan.fallback"), "shipped figures")
    p = calibration_path(path)
    own = read_calibration(p, s3)
    if own is None:
        if path is not None:
            call = f"calibrate(path={str(p)!r})"
            raise InputError(
                f"calibration {str(p)!r} does not exist: measure it with {call} first, or "
                "give no calibration file (the shipped figures serve)",
                commands={call: ["calibrate", "--calibration", str(p)]},
            )
        return shipped
    return Calibration(
        **{
            **asdict(own),
            "recipes": {**shipped.recipes, **own.recipes},
            "storage": {**shipped.storage, **own.storage},
            "starts": {**shipped.starts, **own.starts},
            "source": str(p),
        }
    )
