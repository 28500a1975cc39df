"""The time model behind :func:`pangeo_hpc.planning.plan.plan`: storage kinds and the
bound-and-waves :class:`Model` of one recipe on one cluster shape (see that module's
docstring for the model in words)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import parse_rate

__all__ = ["STORAGE_KINDS", "Model", "Storage", "fused_read_tasks", "parse_storage"]

#: storage kinds: (shared by all nodes, reached over the node's network link)
STORAGE_KINDS: dict[str, tuple[bool, bool]] = {
    "fsx": (True, True),  # FSx for Lustre: its rated throughput is shared by every client
    "lustre": (True, True),
    "nfs": (True, True),
    "gpfs": (True, True),
    "s3": (False, True),  # S3 scales out: the figure is per node
    "local": (False, False),  # each node's own disk
    "cache": (False, False),  # files already in the nodes' page cache (a second run)
}


@dataclass(frozen=True)
class Storage:
    """Where the bytes come from: ``rate`` bytes/s in all (shared) or per node.

    Attributes
    ----------
    kind : str
        ``fsx``, ``s3``, ``local``, ``cache``, ...
    rate : float
        Bytes/s.
    shared : bool
        Whether ``rate`` is shared by all nodes (else per node).
    over_network : bool
        Whether the bytes cross the network.

    Examples
    --------
    >>> from pangeo_hpc.planning.model import Storage
    >>> Storage("fsx", rate=2.88e9, shared=True, over_network=True).describe()
    'fsx 2,880 MB/s shared'
    """

    kind: str
    rate: float
    shared: bool
    over_network: bool

    def describe(self) -> str:
        """E.g. ``fsx 2,880 MB/s shared``.

        Returns
        -------
        str
            The description.

        Examples
        --------
        >>> from pangeo_hpc.planning.model import parse_storage
        >>> parse_storage("fsx:2880MB/s").describe()
        'fsx 2,880 MB/s shared'
        """
        return f"{self.kind} {self.rate / 1e6:,.0f} MB/s {'shared' if self.shared else 'per node'}"


def parse_storage(text: str, measured: dict[str, float] | None = None) -> Storage:
    """``fsx:2880MB/s``, ``s3``, ``local``, ``cache:3GB/s``: a kind, and a rate unless measured.

    ``measured`` holds the rates ``calibrate`` found (bytes/s by kind); a rate given in the
    text wins.

    Parameters
    ----------
    text : str
        ``KIND`` or ``KIND:RATE``.
    measured : dict[str, float], optional
        Rates by kind that ``calibrate`` measured.

    Returns
    -------
    Storage
        The storage.

    Raises
    ------
    InputError
        If ``text`` is empty, of an unknown kind, has a bad rate, or has no rate when
        none was measured.

    Examples
    --------
    >>> from pangeo_hpc.planning.model import parse_storage
    >>> parse_storage("fsx:2880MB/s")
    Storage(kind='fsx', rate=2880000000.0, shared=True, over_network=True)
    >>> parse_storage("s3", measured={"s3": 5e8}).rate
    500000000.0
    """
    if not isinstance(text, str) or not text.strip():
        raise InputError(
            f"storage={text!r} is not a storage: use e.g. 'fsx:2880MB/s', 's3', 'local'",
            param="storage",
        )
    kind, _, rate = text.strip().partition(":")
    kind = kind.lower()
    if kind not in STORAGE_KINDS:
        raise InputError(
            f"storage={text!r}: unknown kind {kind!r}; use one of {', '.join(STORAGE_KINDS)}, "
            "with the rate after a colon, e.g. fsx:2880MB/s",
            param="storage",
        )
    shared, over_network = STORAGE_KINDS[kind]
    if rate:
        try:
            value = parse_rate(rate, name="")
        except InputError as exc:
            raise InputError(f"storage={text!r}: {exc}", param="storage") from None
    elif measured and kind in measured:
        value = float(measured[kind])
    else:
        hint = " (FSx for Lustre scratch: 200 MB/s per TiB of capacity)" if kind == "fsx" else ""
        call = f"calibrate(storage={{{kind!r}: PATH}})"
        raise InputError(
            f"storage={text!r} has no rate and calibrate measured none for {kind!r}: "
            f"give it, e.g. {kind}:2880MB/s{hint}, or measure it with {call}",
            param="storage",
            commands={call: ["calibrate", "--storage-path", f"{kind}=PATH"]},
        )
    return Storage(kind, value, shared, over_network)


def fused_read_tasks(size: int, chunk: int) -> int:
    """Read tasks of ``size`` uncompressed bytes in chunks of ``chunk`` bytes when the
    reads are fused with an area mean: the spans
    :func:`pangeo_hpc.recipes.fusion.task_spans` makes of them (config
    ``data.fused-task-mb`` and ``data.fused-tasks``, read now), 0 for no bytes.

    Parameters
    ----------
    size : int
        Uncompressed bytes.
    chunk : int
        Bytes per chunk.

    Returns
    -------
    int
        Read tasks.

    Examples
    --------
    >>> fused_read_tasks(1_900_000_000, 8_000_000)  # 238 chunks: 34 tasks of 7, at least 32
    34
    """
    from pangeo_hpc.recipes.fusion import task_spans

    blocks = math.ceil(size / chunk) if size > 0 else 0
    return len(task_spans((1,) * blocks, float(chunk))) if blocks else 0


@dataclass(frozen=True)
class Model:
    """Every input of the prediction, in bytes, seconds and dollars.

    Attributes
    ----------
    size : int
        Uncompressed bytes the recipe reads (what xarray's ``nbytes`` says); 0 when it
        reads nothing (every file's partial state cached): the fixed cost alone.
    ratio : float
        Uncompressed / stored bytes (compression ratio of the files).
    chunk : int
        Uncompressed bytes per read task.
    tasks_per_chunk : float
        Tasks in the recipe's graph per read task (reads, reductions, combines).
    process_rate : float
        Uncompressed bytes/s one busy worker process decodes and reduces.
    task_cost : float
        Worker seconds per task besides decoding (receiving, bookkeeping, sending).
    warmup : float
        Worker CPU seconds of a fresh worker process before its first chunk (imports, JIT
        compilation, first file opens): every run of the command line starts new workers.
    load_slowdown : float
        A chunk's CPU time with every core of a node busy over that with one busy process;
        in between, it grows linearly with the busy processes.
    task_overhead : float
        Scheduler CPU seconds per task (one scheduler process: its tasks run one by one).
    overhead_per_worker : float
        Extra scheduler seconds per task for each further worker.
    fixed : float
        Seconds per run independent of the size (graph submission, gathering results).
    processes, cores : int
        Worker processes and cores per node; at most ``min(processes, cores)`` decode at once.
    storage : Storage
        Where the bytes come from.
    network : float or None
        Bytes/s of one node's network link; None: not a limit.
    price : float or None
        Dollars per node-hour; None: no cost column.
    startup : float
        Seconds billed per node besides the run (boot, workers joining).
    host_cores : int or None
        The workers and the scheduler all share one host of this many cores (a local
        cluster, or batch jobs on one node with the scheduler on it); None: the scheduler
        has its own core and each node its own cores (a real cluster).
    spread : (float, float)
        Low and high factors on the measured CPU costs (a chunk's, the warm-up, the
        scheduler's per task): the spread of the calibration's repeated runs around their
        median; ``(1, 1)``: none measured.
    queue : (float, float)
        Seconds from a job's submission to its start, lowest and highest measured (batch
        clusters; not billed). ``(0, 0)``: none (a local cluster, or not measured).
    arrival : (float, float)
        Seconds from a job's start to its workers connected, lowest and highest measured
        (billed: the node is the job's); on a local cluster, from its start to its
        workers connected (their processes' start and imports on the host's cores).
    arrival_workers : int or None
        Worker processes whose start ``arrival`` measured (all started at once). On a
        shared host (``host_cores``) workers start on its cores in waves of at most
        ``host_cores``: the arrival of more workers is scaled by their waves over the
        measured ones' (four one-core Slurm jobs on two cores took 5.5 s to arrive where
        one or two took 2.6 s). None: one wave.
    read_tasks : int or None
        Read tasks of the whole data when the recipe's reads are fused with its area mean
        (:func:`pangeo_hpc.recipes.fusion.task_spans`: fewer, larger tasks than chunks,
        from :func:`fused_read_tasks`); they take the place of the chunks, each of
        ``size / read_tasks`` bytes. None: one read task per ``chunk``.

    Examples
    --------
    >>> from pangeo_hpc.planning.model import Model, parse_storage
    >>> m = Model(size=300 * 10**9, ratio=2.73, chunk=128 * 10**6, tasks_per_chunk=5.0,
    ...           process_rate=185e6, task_overhead=0.0025, fixed=0.0, processes=36, cores=72,
    ...           storage=parse_storage("fsx:2880MB/s"), price=3.888)
    >>> row = m.predict(2)
    >>> row["workers"], row["bottleneck"], round(row["wall_s"], 1)
    (72, 'storage', 38.2)
    """

    size: int
    ratio: float
    chunk: int
    tasks_per_chunk: float
    process_rate: float
    task_overhead: float
    fixed: float
    processes: int
    cores: int
    storage: Storage
    task_cost: float = 0.0
    warmup: float = 0.0
    load_slowdown: float = 1.0
    overhead_per_worker: float = 0.0
    network: float | None = None
    price: float | None = None
    startup: float = 0.0
    host_cores: int | None = None
    spread: tuple[float, float] = (1.0, 1.0)
    queue: tuple[float, float] = (0.0, 0.0)
    arrival: tuple[float, float] = (0.0, 0.0)
    read_tasks: int | None = None
    arrival_workers: int | None = None

    def __post_init__(self) -> None:
        positive = ("size", "ratio", "chunk", "tasks_per_chunk", "process_rate", "processes")
        for name in (*positive, "cores"):
            value = getattr(self, name)
            if name == "size" and value == 0 and not isinstance(value, bool):
                continue  # nothing to read
            if not isinstance(value, int | float) or not value > 0 or not math.isfinite(value):
                raise InputError(f"{name}={value!r} must be a number above 0", param=name)
        seconds = ("task_cost", "warmup", "task_overhead", "overhead_per_worker", "fixed")
        for name in (*seconds, "startup"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or not value >= 0:
                raise InputError(
                    f"{name}={value!r} must be a number of seconds, 0 or more", param=name
                )
        if self.read_tasks is not None and (
            not isinstance(self.read_tasks, int) or isinstance(self.read_tasks, bool)
            or self.read_tasks < 1
        ):  # fmt: skip
            raise InputError(
                f"read_tasks={self.read_tasks!r} must be a whole number of tasks, 1 or more, "
                "or None (one per chunk)",
                param="read_tasks",
            )
        for name in ("spread", "queue", "arrival"):
            lo, hi = getattr(self, name)
            least = lo > 0 if name == "spread" else lo >= 0
            if not (math.isfinite(lo) and math.isfinite(hi) and least and lo <= hi):
                raise InputError(
                    f"{name}={(lo, hi)!r} must be (low, high) with low <= high"
                    + (", above 0" if name == "spread" else ", 0 or more"),
                    param=name,
                )

    def predict(self, nodes: int) -> dict[str, Any]:
        """One row of the plan: ``nodes`` nodes.

        ``wall_s`` is the run's time once its workers are there, from the calibration's
        medians (what the validation compares); ``wall_low_s`` and ``wall_high_s`` take the
        calibration's spread (:attr:`spread`). ``start_low_s``/``start_high_s``: the jobs'
        queue and their workers' arrival before it (:attr:`queue`, :attr:`arrival`);
        ``start_s`` the one compared with a run's cluster start: the middle of the measured
        ranges for one node, their high end for more (the run waits for its last job).
        Billed per node: arrival + run + ``startup``; with more than one node, the high
        end also bills the queue's spread (the first job started waits for the last).

        Parameters
        ----------
        nodes : int
            Nodes.

        Returns
        -------
        dict[str, Any]
            The row.

        Examples
        --------
        >>> from pangeo_hpc.planning.model import Model, parse_storage
        >>> m = Model(size=300 * 10**9, ratio=2.73, chunk=128 * 10**6, tasks_per_chunk=5.0,
        ...           process_rate=185e6, task_overhead=0.0025, fixed=0.0, processes=36, cores=72,
        ...           storage=parse_storage("fsx:2880MB/s"))
        >>> [(n, m.predict(n)["bottleneck"]) for n in (1, 2)]
        [(1, 'CPU decode'), (2, 'storage')]
        """
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            raise InputError(f"nodes={nodes!r} must be a whole number of nodes, 1 or more")
        row = self._run(nodes, 1.0)
        low, high = (self._run(nodes, f)["wall_s"] for f in self.spread)
        return {**row, **self.billed(nodes, row["wall_s"], low, high)}

    def arrival_waves(self, nodes: int) -> float:
        """The factor on the measured arrival for ``nodes`` nodes: on a shared host, the
        waves of at most ``host_cores`` workers their start takes over the waves of the
        measured start (:attr:`arrival_workers`), at least 1; elsewhere 1.

        Parameters
        ----------
        nodes : int
            Nodes (batch jobs).

        Returns
        -------
        float
            The factor.

        Examples
        --------
        >>> from pangeo_hpc.planning.model import Model, parse_storage
        >>> m = Model(size=10**9, ratio=3.0, chunk=10**8, tasks_per_chunk=2.0,
        ...           process_rate=2e8, task_overhead=0.001, fixed=0.0, processes=1, cores=1,
        ...           storage=parse_storage("local:1GB/s"), host_cores=2, arrival=(2.5, 3.0))
        >>> [m.arrival_waves(n) for n in (1, 2, 3, 4)]  # one-core jobs on a 2-core host
        [1.0, 1.0, 2.0, 2.0]
        """
        if self.host_cores is None:
            return 1.0
        waves = math.ceil(nodes * self.processes / self.host_cores)
        measured = math.ceil((self.arrival_workers or 1) / self.host_cores)
        return float(max(1.0, waves / measured))

    def billed(self, nodes: int, wall: float, low: float, high: float) -> dict[str, Any]:
        """What ``nodes`` nodes that compute for ``wall`` seconds (``low`` to ``high``)
        after one start of their jobs are billed: the wall times, the jobs' start, the
        node-hours and the cost, each with its low and high end (the keys of a row of
        :meth:`predict` beyond the run's own). Several runs on one cluster (a recipe over
        several datasets) are billed once with their summed wall times.

        Parameters
        ----------
        nodes : int
            Nodes.
        wall : float
            Seconds of computing (median).
        low : float
            Its low end.
        high : float
            Its high end.

        Returns
        -------
        dict[str, Any]
            The row's billing keys.

        Examples
        --------
        >>> from pangeo_hpc.planning.model import Model, parse_storage
        >>> m = Model(size=300 * 10**9, ratio=2.73, chunk=128 * 10**6, tasks_per_chunk=5.0,
        ...           process_rate=185e6, task_overhead=0.0025, fixed=0.0, processes=36, cores=72,
        ...           storage=parse_storage("fsx:2880MB/s"), price=4.0)
        >>> bill = m.billed(2, wall=1800.0, low=1700.0, high=2000.0)  # 2 nodes for half an hour
        >>> bill["node_hours"], bill["cost"]
        (1.0, 4.0)
        """
        (q_lo, q_hi), (a_lo, a_hi) = self.queue, self.arrival
        waves = self.arrival_waves(nodes)
        a_lo, a_hi = a_lo * waves, a_hi * waves
        wait = q_hi - q_lo if nodes > 1 else 0.0
        row: dict[str, Any] = {
            "wall_low_s": low,
            "wall_high_s": high,
            "start_low_s": q_lo + a_lo,
            "start_s": q_hi + a_hi if nodes > 1 else (q_lo + q_hi + a_lo + a_hi) / 2,
            "start_high_s": q_hi + a_hi,
            "node_hours_low": nodes * (a_lo + low + self.startup) / 3600,
            "node_hours": nodes * ((a_lo + a_hi) / 2 + wall + self.startup) / 3600,
            "node_hours_high": nodes * (a_hi + high + self.startup + wait) / 3600,
        }
        for end in ("_low", "", "_high"):
            hours = row[f"node_hours{end}"]
            row[f"cost{end}"] = None if self.price is None else hours * self.price
        return row

    def _run(self, nodes: int, factor: float) -> dict[str, Any]:
        """The run once its workers are there, with the CPU costs times ``factor``."""
        chunks, chunk = math.ceil(self.size / self.chunk), self.chunk
        if self.read_tasks is not None and chunks:  # fused reads: fewer, larger tasks
            chunks = min(chunks, self.read_tasks)
            chunk = math.ceil(self.size / chunks)
        tasks = math.ceil(chunks * self.tasks_per_chunk)
        per_node = min(self.processes, self.cores)
        slots = nodes * per_node
        if self.host_cores is not None:
            slots = min(slots, self.host_cores)
        active = min(slots, chunks)  # processes decoding at once
        active_nodes = max(1, min(nodes, math.ceil(active / per_node)))  # 1 reading nothing
        stored = self.size / self.ratio  # bytes read in all
        waves = math.ceil(chunks / slots)
        workers = nodes * self.processes
        per_task = (self.task_overhead + self.overhead_per_worker * (workers - 1)) * factor
        warmup = self.warmup * factor
        # a chunk's time on its process: decoding plus its tasks' own costs, longer when
        # the node's other cores are busy too
        together = min(per_node, active) if self.host_cores is None else active
        cores = self.cores if self.host_cores is None else self.host_cores
        load = (together - 1) / (cores - 1) if cores > 1 else 0.0
        chunk_cpu = (
            (chunk / self.process_rate + self.tasks_per_chunk * self.task_cost)
            * (1 + (self.load_slowdown - 1) * min(1.0, load))
            * factor
        )
        # the CPU works in waves (the last may leave processes idle: the long tail); the
        # storage and the network links share their bandwidth among the chunks in flight,
        # so a short last wave goes faster there: bytes over bandwidth; the scheduler
        # handles one task at a time
        limits = {"CPU decode": warmup + waves * chunk_cpu}
        storage_rate = self.storage.rate * (1 if self.storage.shared else active_nodes)
        limits["storage"] = stored / storage_rate
        if self.network is not None and self.storage.over_network:
            limits["network"] = stored / (self.network * active_nodes)
        limits["scheduler"] = tasks * per_task
        if self.host_cores is not None:  # workers and scheduler take turns on the cores
            cpu = workers * warmup + chunks * chunk_cpu + tasks * per_task
            limits["host CPU"] = cpu / self.host_cores
        if chunks == 0:  # nothing to read: no worker warms up, the fixed cost alone
            limits = {"none": 0.0}
        bound = max(limits, key=lambda k: limits[k])
        compute_s = limits[bound]
        wall = self.fixed + compute_s
        busy = self.size / self.process_rate  # process-seconds of decoding, all chunks
        return {
            "nodes": nodes,
            "workers": workers,
            "tasks": tasks,
            "chunks_per_process": chunks / slots,
            "chunk_s": compute_s / waves if waves else 0.0,
            "wall_s": wall,
            "efficiency": busy / (slots * wall),
            "tail_efficiency": chunks / (waves * slots) if waves else 1.0,
            "bottleneck": bound,
            "read_MB_s": self.size / self.ratio / wall / 1e6,
        }
