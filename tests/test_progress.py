"""Progress never outlives its computation: a cancelled future ends the wait."""

from __future__ import annotations

import threading
import time

from pangeo_hpc.cli.progress import show_progress


def test_progress_returns_when_the_future_is_cancelled(capsys):
    from distributed import Client, LocalCluster

    with (
        LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster,
        Client(cluster) as client,
    ):
        done = client.submit(sum, [1, 2])
        show_progress(done)
        assert done.result() == 3
        assert "progress: 100%" in capsys.readouterr().out

        slow = client.submit(time.sleep, 6)
        threading.Timer(0.5, slow.cancel).start()
        t0 = time.perf_counter()
        show_progress(slow)  # the bar alone would wait for ever
        assert slow.status == "cancelled"
        assert time.perf_counter() - t0 < 4
