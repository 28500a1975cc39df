"""Parallel S3 listing and the ``inventory`` verb, against a real SeaweedFS server.

Counts and bytes are checked exactly against the keys the tests wrote (a small bucket with
objects at every level, and the 100,228-object bucket of tests/support/bigbucket.py); the LIST
requests are counted by a proxy in between, which also delays requests like a remote S3 and
throttles them with ``503 SlowDown``. Every error a user can meet has its message checked,
from the library and from the command line (exit code 2).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import dask
import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import format_bytes
from pangeo_hpc.s3 import options as s3
from pangeo_hpc.s3.listing import list_objects
from pangeo_hpc.storage.inventory import Inventory, inventory
from tests.support.bigbucket import BUCKET as BIG
from tests.support.bigbucket import layout
from tests.support.paths import ROOT
from tests.support.proxy import DelayProxy
from tests.support.s3env import forget_s3_clients
from tests.support.servers import SeaweedFS, child_env, free_port

pytestmark = pytest.mark.s3

SMALL = "inventory-small"
#: the small bucket: objects at every level, a look-alike prefix (2000-old), a deep chain
TREE = {
    "README.txt": 10,
    "2000/manifest.json": 20,
    "2000/01/data/sst.nc": 1000,
    "2000/01/data/t2m.nc": 2000,
    "2000/02/data/sst.nc": 1500,
    "2000-old/01/data/sst.nc": 7,
    "2001/01/checksums.md5": 33,
    "2001/01/data/sst.nc": 3000,
    "2001/12/data/deep/er/still/x.bin": 5,
    "misc/sp ace/é+x.txt": 3,
}


def expected(tree: dict[str, int], prefix: str = "", depth: int = 1) -> dict[str, list[int]]:
    """Objects and bytes per row, straight from the keys: each key under its first ``depth``
    folders below ``prefix`` ("" for the objects directly there)."""
    rows: dict[str, list[int]] = {}
    for key, size in tree.items():
        if prefix and not key.startswith(prefix + "/"):
            continue
        folders = key.removeprefix(prefix + "/" if prefix else "").split("/")[:-1]
        row = "".join(f + "/" for f in folders[:depth])
        cell = rows.setdefault(row, [0, 0])
        cell[0] += 1
        cell[1] += size
    return dict(sorted(rows.items()))


def rows(inv: Inventory) -> dict[str, list[int]]:
    return {p.prefix: [p.objects, p.bytes] for p in inv.prefixes}


@pytest.fixture
def creds(monkeypatch, tmp_path):
    """The servers' credentials through the AWS chain (environment), and no CA bundle."""

    def use(server: SeaweedFS, *, key: str | None = None) -> None:
        for name in ("CA_BUNDLE", "PROFILE", "SESSION_TOKEN", "ENDPOINT_URL", "ENDPOINT_URL_S3"):
            monkeypatch.delenv(f"AWS_{name}", raising=False)
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", key or server.key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", server.secret)
        monkeypatch.setenv("AWS_REGION", "us-east-1")
        monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
        monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
        forget_s3_clients()

    yield use
    forget_s3_clients()


@pytest.fixture(scope="module")
def small(seaweedfs: SeaweedFS) -> SeaweedFS:
    """s3://inventory-small holding TREE (bytes: the key repeated)."""
    fs = seaweedfs.filesystem()
    fs.mkdir(SMALL)
    fs.pipe({f"{SMALL}/{k}": (k.encode() * n)[:n] for k, n in TREE.items()})
    return seaweedfs


@pytest.fixture
def opts(small, creds) -> s3.S3Options:
    creds(small)
    return s3.S3Options.resolve(endpoint_url=small.endpoint_url)


def list_requests(proxy: DelayProxy) -> list[dict[str, list[str]]]:
    """The query parameters of the LIST requests the proxy saw, in order."""
    out = []
    for line in proxy.request_lines:
        method, target, _ = line.split(" ")
        query = parse_qs(urlsplit(target).query, keep_blank_values=True)
        if method == "GET" and query.get("list-type") == ["2"]:
            out.append(query)
    return out


# --------------------------------------------------------------------------------------------
# the small bucket: exact counts at every depth, prefixes, order of the requests


@pytest.mark.parametrize("concurrency", [1, 2, 64])
def test_list_objects_finds_every_key_once(opts, concurrency):
    found = list_objects(f"s3://{SMALL}", opts, concurrency=concurrency)
    assert [(o.key, o.size) for o in found] == sorted(TREE.items())
    assert all(o.etag and o.last_modified for o in found)


def test_list_objects_below_a_prefix_takes_whole_segments(opts):
    found = list_objects(f"s3://{SMALL}/2000/", opts)
    assert [o.key for o in found] == sorted(k for k in TREE if k.startswith("2000/"))
    assert list_objects(f"s3://{SMALL}/2000/01/data/sst.nc", opts) == []


@pytest.mark.parametrize("depth", [0, 1, 2, 3, 6])
@pytest.mark.parametrize("concurrency", [1, 3, 64])
def test_inventory_counts_each_object_once_per_depth(opts, depth, concurrency):
    inv = inventory(f"s3://{SMALL}", opts, depth=depth, concurrency=concurrency)
    assert (inv.objects, inv.bytes) == (len(TREE), sum(TREE.values()))
    assert rows(inv) == (expected(TREE, depth=depth) if depth else {})
    assert inv.concurrency == concurrency


@pytest.mark.parametrize("prefix", ["2000", "2001/", "2001/12", "misc/sp ace"])
def test_inventory_of_a_prefix(opts, prefix):
    inv = inventory(f"s3://{SMALL}/{prefix}", opts, depth=2)
    want = expected(TREE, prefix.strip("/"), depth=2)
    assert rows(inv) == want
    assert inv.objects == sum(n for n, _ in want.values())
    assert inv.bytes == sum(b for _, b in want.values())


def test_requests_are_counted_and_interleaved(small, creds):
    """With one request at a time the proxy sees the plan: discovery level by level, then the
    prefixes in loop-interchanged order (first months of every year, then second months)."""
    creds(small)
    with DelayProxy(small.endpoint_url, delay=0) as proxy:
        opts = s3.S3Options.resolve(endpoint_url=proxy.endpoint_url)
        inv = inventory(f"s3://{SMALL}", opts, depth=2, concurrency=1)
    seen = list_requests(proxy)
    assert inv.requests == len(seen) == proxy.requests
    delimited = [q.get("prefix", [""])[0] for q in seen if "delimiter" in q]
    assert delimited == ["", "2000/", "2000-old/", "2001/", "misc/"]
    full = [q["prefix"][0] for q in seen if "delimiter" not in q]
    assert full == ["2000/01/", "2000-old/01/", "2001/01/", "misc/sp ace/", "2000/02/", "2001/12/"]
    assert inv.tasks == len(full)
    assert rows(inv) == expected(TREE, depth=2)


def test_progress_reports_objects_so_far(opts):
    seen: list[int] = []
    inv = inventory(f"s3://{SMALL}", opts, concurrency=2, progress=seen.append)
    assert seen == sorted(seen)
    assert seen[-1] == inv.objects == len(TREE)


def test_table_and_json(opts):
    inv = inventory(f"s3://{SMALL}", opts)
    doc = json.loads(inv.to_json())
    assert doc["objects"] == len(TREE) and doc["bytes"] == sum(TREE.values())
    assert doc["prefixes"] == {
        p: {"objects": n, "bytes": b} for p, (n, b) in expected(TREE, depth=1).items()
    }
    table = inv.to_table().splitlines()
    assert table[0] == f"s3://{SMALL}"
    assert table[3].split() == ["(top)", "1", "10", *format_bytes(10).split()]
    assert next(r for r in table if r.startswith("2001/ ")).split() == [
        "2001/",
        "3",
        "3,038",
        *format_bytes(3038).split(),  # 2.97 kiB
    ]
    assert table[-2].split()[:3] == ["total", str(len(TREE)), f"{sum(TREE.values()):,}"]


# --------------------------------------------------------------------------------------------
# errors, from the library


def test_error_no_such_bucket(opts):
    with pytest.raises(
        InputError,
        match=r"bucket of 's3://no-such-bucket' does not exist on http://127\.0\.0\.1:\d+: check the name",
    ):
        inventory("s3://no-such-bucket", opts)


def test_error_wrong_keys(small, creds):
    creds(small, key="not-the-key")
    opts = s3.S3Options.resolve(endpoint_url=small.endpoint_url)
    with pytest.raises(
        InputError,
        match=r"access to 's3://inventory-small' denied \(InvalidAccessKeyId\): check AWS_PROFILE",
    ):
        list_objects(f"s3://{SMALL}", opts)


def test_error_anonymous_access_to_a_private_bucket(small, creds):
    creds(small)
    opts = s3.S3Options.resolve(endpoint_url=small.endpoint_url, anon=True)
    with pytest.raises(
        InputError, match=r"denied \(AccessDenied\): the bucket is not public; drop anon=True"
    ):
        inventory(f"s3://{SMALL}", opts)


def test_error_endpoint_down(small, creds):
    creds(small)
    opts = s3.S3Options.resolve(endpoint_url=f"http://127.0.0.1:{free_port()}")
    with pytest.raises(
        InputError,
        match=r"S3 endpoint http://127\.0\.0\.1:\d+ does not answer \(for 's3://inventory-small'\): check endpoint_url=",
    ):
        inventory(f"s3://{SMALL}", opts)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("inventory-small", r"'inventory-small' is not an S3 URL: write s3://BUCKET\[/PREFIX\]"),
        ("s3://a", r"'a' in 's3://a' is not a bucket name"),
        ("s3://bad bucket/x", r"'bad bucket' in 's3://bad bucket/x' is not a bucket name"),
    ],
)
def test_error_bad_url(opts, url, message):
    with pytest.raises(InputError, match=message):
        inventory(url, opts)


def test_error_bad_depth_and_concurrency(opts):
    with pytest.raises(InputError, match="depth -1 is negative"):
        inventory(f"s3://{SMALL}", opts, depth=-1)
    with pytest.raises(InputError, match="concurrency 0 is not a positive whole number"):
        list_objects(f"s3://{SMALL}", opts, concurrency=0)


def test_throttling_is_retried_then_explained(small, creds):
    creds(small)
    with DelayProxy(small.endpoint_url, delay=0) as proxy:
        opts = s3.S3Options.resolve(endpoint_url=proxy.endpoint_url)
        proxy.throttle(3)
        inv = inventory(f"s3://{SMALL}", opts, depth=2, concurrency=4)
        assert proxy.throttled == 3
        assert rows(inv) == expected(TREE, depth=2)

        proxy.throttle()
        with (
            dask.config.set({"pangeo-hpc.s3.max-retries": 2}),
            pytest.raises(
                InputError,
                match=r"http://127\.0\.0\.1:\d+ kept throttling requests for 's3://inventory-small' \(503 SlowDown\) after 2 retries with backoff: lower the concurrency",
            ),
        ):
            inventory(f"s3://{SMALL}", opts)
        assert proxy.throttled == 3 + 3  # the first request and its two retries


# --------------------------------------------------------------------------------------------
# the command line


def cli(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None):
    """``python -m pangeo_hpc.run inventory ARGS`` in a process of its own."""
    return subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", "inventory", *args],
        env=child_env({"PYTHONPATH": str(ROOT), **(env or {})}),
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def aws_env(server: SeaweedFS, **extra: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": server.key,
        "AWS_SECRET_ACCESS_KEY": server.secret,
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        **extra,
    }


def test_cli_table_and_json_file(small, tmp_path):
    out = tmp_path / "inv.json"
    run = cli(
        f"s3://{SMALL}", "--depth", "2", "--json", str(out),
        "--endpoint-url", small.endpoint_url, env=aws_env(small),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == f"s3://{SMALL}"
    assert f"written {out}" in run.stdout
    doc = json.loads(out.read_text())
    assert doc["objects"] == len(TREE) and doc["bytes"] == sum(TREE.values())
    assert {p: [v["objects"], v["bytes"]] for p, v in doc["prefixes"].items()} == expected(
        TREE, depth=2
    )
    assert [p.name for p in tmp_path.iterdir()] == ["inv.json"]  # no temporary left


def test_cli_json_to_stdout_table_to_stderr(small):
    run = cli(
        f"s3://{SMALL}/2000", "--json", "-", "--no-progress",
        "--endpoint-url", small.endpoint_url, env=aws_env(small),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)
    assert doc["url"] == f"s3://{SMALL}/2000"
    assert {p: [v["objects"], v["bytes"]] for p, v in doc["prefixes"].items()} == expected(
        TREE, "2000"
    )
    assert run.stderr.splitlines()[0] == f"s3://{SMALL}/2000"


def test_cli_uses_endpoint_from_config(small):
    run = cli(
        f"s3://{SMALL}", "--depth", "0",
        env=aws_env(small, DASK_PANGEO_HPC__S3__ENDPOINT_URL=small.endpoint_url),
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-2].split()[:2] == ["total", str(len(TREE))]


@pytest.mark.parametrize(
    ("case", "message"),
    [
        (
            "no-bucket",
            r"error: bucket of 's3://no-such-bucket' does not exist on http://127\.0\.0\.1:\d+: check the name",
        ),
        (
            "wrong-keys",
            r"error: access to 's3://inventory-small' denied \(InvalidAccessKeyId\): check AWS_PROFILE / AWS_ACCESS_KEY_ID, or pass --anon",
        ),
        (
            "wrong-secret",
            r"error: access to 's3://inventory-small' denied \(SignatureDoesNotMatch\)",
        ),
        (
            "down",
            r"error: S3 endpoint http://127\.0\.0\.1:\d+ does not answer \(for 's3://inventory-small'\): check --endpoint-url and that the server runs",
        ),
        (
            "no-scheme",
            r"error: --endpoint-url '127\.0\.0\.1:\d+' needs a scheme: write e\.g\. http://127\.0\.0\.1:8333",
        ),
        ("bad-url", r"error: 's3:/inventory-small' is not an S3 URL: write s3://BUCKET\[/PREFIX\]"),
        (
            "bad-depth",
            r"error: argument --depth: 'two' is not a whole number >= 0, e\.g\. 1 \(see `python -m pangeo_hpc\.run inventory --help`\)",
        ),
        (
            "bad-json",
            r"error: folder '/no/such/folder' of --json '/no/such/folder/x\.json' does not exist",
        ),
    ],
)
def test_cli_errors(small, case, message):
    url, endpoint, env, extra = f"s3://{SMALL}", small.endpoint_url, aws_env(small), []
    if case == "no-bucket":
        url = "s3://no-such-bucket"
    elif case == "wrong-keys":
        env["AWS_ACCESS_KEY_ID"] = "not-the-key"
    elif case == "wrong-secret":
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
    elif case == "down":
        endpoint = f"http://127.0.0.1:{free_port()}"
    elif case == "no-scheme":
        endpoint = endpoint.removeprefix("http://")
    elif case == "bad-url":
        url = f"s3:/{SMALL}"
    elif case == "bad-depth":
        extra = ["--depth", "two"]
    elif case == "bad-json":
        extra = ["--json", "/no/such/folder/x.json"]
    run = cli(url, "--endpoint-url", endpoint, *extra, env=env)
    assert run.returncode == 2, (run.stdout, run.stderr)
    assert run.stderr.count("\n") == 1, run.stderr  # one line, no traceback
    assert re.fullmatch(message + r".*\n", run.stderr), run.stderr


def test_cli_throttling(small):
    with DelayProxy(small.endpoint_url, delay=0) as proxy:
        proxy.throttle()
        run = cli(
            f"s3://{SMALL}", "--endpoint-url", proxy.endpoint_url,
            env=aws_env(small, DASK_PANGEO_HPC__S3__MAX_RETRIES="1"),
        )  # fmt: skip
    assert run.returncode == 2, run.stderr
    assert re.fullmatch(
        r"error: http://127\.0\.0\.1:\d+ kept throttling requests for 's3://inventory-small' "
        r"\(503 SlowDown\) after 1 retries with backoff: lower the concurrency "
        r"\(pangeo-hpc\.s3\.list-concurrency\) or try again later\n",
        run.stderr,
    ), run.stderr
    assert proxy.throttled == 2


# --------------------------------------------------------------------------------------------
# the 100,228-object bucket


@pytest.fixture
def big(big_bucket, creds) -> SeaweedFS:
    creds(big_bucket)
    return big_bucket


@pytest.mark.slow
@pytest.mark.parametrize("depth", [1, 2])
def test_inventory_of_100k_objects_is_exact(big, depth):
    tree = layout()
    assert len(tree) >= 100_000
    opts = s3.S3Options.resolve(endpoint_url=big.endpoint_url)
    inv = inventory(f"s3://{BIG}", opts, depth=depth)
    assert (inv.objects, inv.bytes) == (len(tree), sum(tree.values()))
    assert rows(inv) == expected(tree, depth=depth)
    # discovery reached the 300 months (25 years < 64 in flight), one page each
    assert inv.tasks == 300
    assert inv.requests == 1 + 25 + 300


@pytest.mark.slow
def test_list_objects_of_100k_objects(big):
    tree = layout()
    opts = s3.S3Options.resolve(endpoint_url=big.endpoint_url)
    found = list_objects(f"s3://{BIG}", opts)
    assert [(o.key, o.size) for o in found] == sorted(tree.items())
    assert len({o.etag for o in found}) > 1


@pytest.mark.slow
def test_100k_through_a_slow_throttling_proxy(big):
    """20 ms per request and five 503 SlowDown answers: retried, still exact, and the LIST
    requests seen match the count reported; in flight, the months of different years."""
    tree = layout()
    with DelayProxy(big.endpoint_url, delay=0.02) as proxy:
        opts = s3.S3Options.resolve(endpoint_url=proxy.endpoint_url)
        proxy.throttle(5)
        inv = inventory(f"s3://{BIG}", opts, depth=2, concurrency=32)
    assert proxy.throttled == 5
    assert (inv.objects, inv.bytes) == (len(tree), sum(tree.values()))
    assert rows(inv) == expected(tree, depth=2)
    assert inv.requests == proxy.requests - proxy.throttled == 326
    full = [q["prefix"][0] for q in list_requests(proxy) if "delimiter" not in q]
    assert sorted(set(full)) == sorted(
        f"{y}/{m:02d}/" for y in range(1995, 2020) for m in range(1, 13)
    )
    # interleaved: the 32 listings in flight first (sent within a few ms; none can end before
    # the proxy's 20 ms) are the 25 Januaries and the first 7 Februaries, not 1995/01..1997/08
    first = [f"{y}/01/" for y in range(1995, 2020)] + [f"{y}/02/" for y in range(1995, 2002)]
    assert sorted(full[:32]) == sorted(first), full[:32]


@pytest.mark.slow
def test_cli_on_100k_objects(big):
    """Not a terminal: progress lines (every ten seconds, if it takes that long) on stderr."""
    run = cli(f"s3://{BIG}", "--endpoint-url", big.endpoint_url, env=aws_env(big))
    assert run.returncode == 0, run.stderr
    for line in run.stderr.splitlines():
        assert re.fullmatch(rf"listing s3://{BIG}: [\d,]+ objects, [\d,]+/s", line), line
    assert run.stdout.splitlines()[-2].split()[:2] == ["total", f"{len(layout()):,}"]


def _peak_rss(args: list[str], env: dict[str, str]) -> tuple[subprocess.CompletedProcess, int]:
    """Run the CLI, sampling its resident memory every 20 ms; returns the run and the peak."""
    import psutil

    proc = subprocess.Popen(
        [sys.executable, "-m", "pangeo_hpc.run", "inventory", *args],
        env=child_env({"PYTHONPATH": str(ROOT), **env}),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    peak = 0
    watched = psutil.Process(proc.pid)
    while proc.poll() is None:
        try:
            peak = max(peak, watched.memory_info().rss)
        except psutil.NoSuchProcess:
            break
        time.sleep(0.02)  # sampling interval
    out, err = proc.communicate(timeout=300)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), peak


def test_memory_of_a_100k_inventory_is_bounded(big):
    """Listing 100,228 objects keeps per-prefix totals, not the objects: the peak memory is
    that of the interpreter and its libraries, about as for 3 objects."""
    full, peak = _peak_rss([f"s3://{BIG}", "--endpoint-url", big.endpoint_url], aws_env(big))
    small, base = _peak_rss(
        [f"s3://{BIG}/1995/01/data/var00", "--endpoint-url", big.endpoint_url], aws_env(big)
    )
    assert full.returncode == 0 and small.returncode == 0, full.stderr + small.stderr
    print(f"\npeak RSS: {peak / 2**20:.0f} MiB for 100,228 objects, {base / 2**20:.0f} MiB for 10")
    assert peak < 400 * 2**20
    assert peak - base < 100 * 2**20  # what 100k objects add
