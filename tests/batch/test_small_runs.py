"""A run that reads little or nothing computes with dask's threaded scheduler, without a
distributed cluster or client (``clusters/threads.py``, issue 29 §1): the same outputs as
the in-process cluster it replaces, an incremental run after it, the client's futures and
the chain's laziness guard beside it."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from contextlib import contextmanager

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr

from pangeo_hpc.batch import run_recipe
from pangeo_hpc.batch.chains.recipe_yaml import load
from pangeo_hpc.batch.incremental.state_cache import StateCache
from pangeo_hpc.clusters.threads import ThreadClient, as_completed
from tests.support.paths import ROOT

PERIOD = {"start": "2000-01", "end": "2000-03"}
#: what differs between any two runs: when they ran and how long they took
VOLATILE = ("timings_s", "created", "throughput_MB_per_s")


@contextmanager
def _old_in_process(workers):
    """What ``execute._in_process`` was before: an in-process distributed cluster."""
    from distributed import Client

    from pangeo_hpc.clusters.start import local_cluster

    cl = local_cluster(workers=workers, processes=False)
    try:
        with Client(cl) as client:
            yield cl, client
    finally:
        cl.close()


def _no_cluster(*a, **kw):
    raise AssertionError("a small run started a distributed cluster or client")


#: the figure embedded in report.html
EMBEDDED_PNG = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def _same_figure(a_png, b_png):
    """The same figure: the same size, and pixels equal but for anti-aliasing (at most 2
    levels in at most 20 pixels). The figure is drawn from the in-memory float64 values,
    whose last bits may differ between the two ways of computing where result.nc's float32
    bytes do not: in the full suite, one dashed line sat a fraction of a pixel apart (2
    pixels, 1 level), which a byte comparison failed on."""
    from PIL import Image

    a = np.asarray(Image.open(a_png).convert("RGBA"), dtype=int)
    b = np.asarray(Image.open(b_png).convert("RGBA"), dtype=int)
    assert a.shape == b.shape
    off = np.abs(a - b).max(axis=-1)
    assert off.max() <= 2 and (off > 0).sum() <= 20, (off.max(), (off > 0).sum())


def _same_result(a_dir, b_dir):
    """result.nc: every variable's bytes and every attribute (history aside: it carries
    the time of the run); plot.png: the same figure (:func:`_same_figure`); report.html:
    the same text, its embedded figure aside; summary.json: all but the timings and the
    digests of those two."""
    with (
        xr.open_dataset(a_dir / "result.nc") as a,
        xr.open_dataset(b_dir / "result.nc") as b,
    ):
        assert a.attrs.pop("history") != "" and b.attrs.pop("history") != ""
        xr.testing.assert_identical(a, b)
        for name in a.variables:
            assert a[name].values.tobytes() == b[name].values.tobytes(), name
    sa, sb = (json.loads((d / "summary.json").read_text()) for d in (a_dir, b_dir))
    for key in VOLATILE:
        sa.pop(key, None), sb.pop(key, None)
    for s in (sa, sb):  # result.nc's digest holds its history's time (its bytes: above)
        for name in ("result.nc", "plot.png", "report.html"):
            assert s["files"][name].pop("sha256")
    assert sa == sb
    _same_figure(a_dir / "plot.png", b_dir / "plot.png")
    ra, rb = ((d / "report.html").read_text() for d in (a_dir, b_dir))
    assert EMBEDDED_PNG.sub("", ra) == EMBEDDED_PNG.sub("", rb)


def test_a_cached_run_in_threads_writes_what_the_in_process_cluster_wrote(
    demo_tree, tmp_path, monkeypatch
):
    import distributed

    spec = load("era5-sst-mean")
    store = StateCache(tmp_path / "states")
    where = {"data": demo_tree, "workers": 2, "cache": store}
    first = run_recipe(spec, out=tmp_path / "first", **where, **PERIOD).summary
    assert first["reads"]["files_read"] == 3
    with monkeypatch.context() as m:
        m.setattr("pangeo_hpc.batch.pipeline.execute._in_process", _old_in_process)
        old = run_recipe(spec, out=tmp_path / "old", **where, **PERIOD).summary
    with monkeypatch.context() as m:  # the new way starts neither
        m.setattr(distributed.LocalCluster, "__init__", _no_cluster)
        m.setattr(distributed.Client, "__init__", _no_cluster)
        new = run_recipe(spec, out=tmp_path / "new", **where, **PERIOD).summary
        assert old["reads"]["files_read"] == new["reads"]["files_read"] == 0
        assert new["cluster"]["in_process"].startswith("0 files to read, 0.0 MB, 3 cached")
        _same_result(tmp_path / "old", tmp_path / "new")
        # one more month after it: one file read, in threads, the states kept
        more = run_recipe(spec, out=tmp_path / "more", **where, start="2000-01", end="2000-04")
    assert more.summary["reads"]["files_read"] == 1
    assert more.summary["reads"]["files_reused"] == 3
    assert more.summary["reads"]["states_saved"] >= 1
    run_recipe(spec, out=tmp_path / "whole", data=demo_tree, workers=2, cache=False,
               start="2000-01", end="2000-04")  # fmt: skip
    with (
        xr.open_dataset(tmp_path / "more" / "result.nc") as a,
        xr.open_dataset(tmp_path / "whole" / "result.nc") as b,
    ):
        for name in b.data_vars:  # float32 results; the incremental path sums in float64
            xr.testing.assert_allclose(a[name], b[name], rtol=1e-6)


def test_a_cached_command_line_run_imports_neither_distributed_nor_flox(demo_tree, tmp_path):
    """A cached run starts no scheduler and imports no distributed (not even for xarray's
    question whether a client writes result.nc: ``threads.no_client_lookup``); its
    resampling labels come from xarray's own grouping (flox's numpy_groupies built ~500
    numba wrappers when imported). numba itself still comes, with numbagg, from
    ``dask.array.reductions`` and with this package's kernels (``jit.py``)."""
    code = (
        "import json, sys, threading\n"
        "from pangeo_hpc.cli.main import main\n"
        "NAMES = ('distributed', 'tornado', 'flox', 'numpy_groupies')\n"
        "code = main(sys.argv[1:])\n"
        "names = [t.name for t in threading.enumerate()]\n"
        "mods = sorted(m for m in sys.modules if m.split('.')[0] in NAMES)\n"
        "print(json.dumps({'code': code, 'threads': names, 'modules': mods}), file=sys.stderr)\n"
    )
    # out1 computed from the states, not copied from out0 (batch/pipeline/result_copies.py)
    env = {**os.environ, "PYTHONPATH": str(ROOT),
           "DASK_PANGEO_HPC__CACHE__FOLDER": str(tmp_path / "states"),
           "DASK_PANGEO_HPC__CACHE__COPY_RESULTS": "false"}  # fmt: skip
    args = ["era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01", "--end", "2000-02",
            "--workers", "2", "--no-progress"]  # fmt: skip
    seen = []
    for n in range(2):  # the first fills the cache, the second reads nothing
        out = ["--out", str(tmp_path / f"out{n}")]
        r = subprocess.run([sys.executable, "-c", code, *args, *out], env=env,
                           capture_output=True, text=True, timeout=600)  # fmt: skip
        assert r.returncode == 0, r.stderr
        seen.append((json.loads(r.stderr.strip().splitlines()[-1]), r.stdout))
    (got, stdout) = seen[1]
    assert got["code"] == 0 and got["modules"] == [], got
    assert stdout.startswith("cluster: none started (0 files to read, 0.0 MB, 2 cached: <= ")
    assert not [t for t in got["threads"] if "IO loop" in t or "Dask" in t], got["threads"]


def test_no_client_lookup_holds_back_dask_distributed_only_while_distributed_is_unused():
    """In a process that never imported distributed, ``import dask.distributed`` fails
    inside the block and works after it; once distributed is imported, nothing is held."""
    code = (
        "import sys\n"
        "from pangeo_hpc.clusters.threads import no_client_lookup\n"
        "with no_client_lookup():\n"
        "    try:\n"
        "        from dask.distributed import Client\n"
        "        print('imported')\n"
        "    except ImportError:\n"
        "        print('held')\n"
        "print('distributed' in sys.modules)\n"
        "from dask.distributed import Client\n"
        "with no_client_lookup():\n"
        "    from dask.distributed import Client\n"
        "print('after')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=300)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["held", "False", "after"]


def test_thread_futures_finish_as_their_tasks_do():
    """A Delayed's future is done when its task is, before the rest of the graph: a state
    is saved as it arrives. The second task waits until the first's future says done."""
    client = ThreadClient(2)
    first_done = threading.Event()

    def second(_):
        assert first_done.wait(60), "the first future was not done before the graph ended"
        return "second"

    a = dask.delayed(lambda: "first")()
    b = dask.delayed(second)(dask.delayed(lambda: 0)())
    futures = client.compute([a, b])
    order = []
    for f in as_completed(futures):
        if f is futures[0]:
            first_done.set()
        order.append(f.result())
    assert order == ["first", "second"]
    assert [f.status for f in futures] == ["finished", "finished"]
    assert client.run(lambda: 7) == {"threads": 7}
    assert client.scheduler_info()["workers"] == {"threads": {"nthreads": 2}}


def test_a_failing_task_fails_every_future_it_did_not_finish():
    client = ThreadClient(1)

    def boom():
        raise ValueError("bad chunk")

    futures = client.compute([dask.delayed(boom)(), dask.delayed(np.add)(np.ones(2), 1)])
    with pytest.raises(ValueError, match="bad chunk"):
        futures[0].result(timeout=60)
    assert futures[0].status == "error"


def test_the_chains_laziness_guard_stays_on_beside_a_thread_client():
    """The guard (a scheduler that raises) is what ``dask.config`` says; a ThreadClient
    names its scheduler itself, as a distributed client does, and a plain ``compute``
    still meets the guard."""

    def forbid(*a, **kw):
        raise RuntimeError("computed while building")

    x = da.ones(4, chunks=2).sum()
    with dask.config.set(scheduler=forbid):
        assert ThreadClient(2).compute(x).result(timeout=60) == 4
        with pytest.raises(RuntimeError, match="computed while building"):
            x.compute()
