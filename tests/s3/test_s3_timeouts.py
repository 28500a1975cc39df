"""An S3 endpoint that accepts connections and never answers: the wait is said on stderr after
a few seconds, and ends at the configured time-outs with one line naming the endpoint and
the setting to raise (exit code 2). Every S3 client gets the same time-outs from config.

The silent server is a socket of this process (a free port) that accepts and reads nothing;
the time-outs are set small through the environment, as a user would.
"""

from __future__ import annotations

import logging
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import timedelta

import dask
import pytest

from pangeo_hpc.errors import InputError
from pangeo_hpc.s3 import options as s3
from pangeo_hpc.s3.listing import list_objects
from tests.support.paths import ROOT
from tests.support.servers import child_env

#: small time-outs (seconds): a read gives up after 2 s, a request is retried for 1 s more
#: at most, and the wait is said after 0.1 s (well before the first time-out)
FAST = {"read-timeout": 2, "retry-timeout": 1, "connect-timeout": 2, "notice-after": 0.1}


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:PORT`` of a server that accepts every connection and never
    answers (nor closes it) until the test ends."""
    server = socket.create_server(("127.0.0.1", 0))  # a free port, chosen by the kernel
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:  # the server closed: the test is over
                return
            held.append(conn)

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        server.shutdown(socket.SHUT_RDWR)  # wakes accept()
        server.close()
        thread.join(timeout=10)
        for conn in held:
            conn.close()


@pytest.fixture
def fast_timeouts(monkeypatch):
    """:data:`FAST` in this process (dask config) and for the CLIs it starts (environment);
    keys that sign nothing real; obstore stores made afresh."""
    env = {f"DASK_PANGEO_HPC__S3__{k.upper().replace('-', '_')}": str(v) for k, v in FAST.items()}
    env |= {
        "AWS_ACCESS_KEY_ID": "AKIASILENT",
        "AWS_SECRET_ACCESS_KEY": "silent-secret",
        "AWS_REGION": "us-east-1",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with dask.config.set({f"pangeo-hpc.s3.{k}": v for k, v in FAST.items()}):
        yield env


#: the one line that ends the wait (the endpoint, the time-out and the setting to raise)
NO_ANSWER = (
    r"S3 endpoint http://127\.0\.0\.1:\d+ sent no answer within 2 s \(for '{url}'; \d+ "
    r"retries with backoff\): check that the server works, or raise "
    r"pangeo-hpc\.s3\.read-timeout \(e\.g\. DASK_PANGEO_HPC__S3__READ_TIMEOUT=120\)"
)
WAITING = (
    r"waiting for http://127\.0\.0\.1:\d+ \({what}\): no answer in 0\.1 s; a request gives "
    r"up after 2 s without one \(pangeo-hpc\.s3\.read-timeout\) \.\.\."
)


def test_a_listing_from_a_silent_endpoint_ends_at_the_time_out(silent_endpoint, fast_timeouts):
    opts = s3.S3Options.resolve(endpoint_url=silent_endpoint)
    url = "s3://era5-silent/2000"
    with pytest.raises(InputError, match="^" + NO_ANSWER.format(url=re.escape(url)) + "$"):
        list_objects(url, opts)


@pytest.mark.parametrize(
    ("args", "url", "what"),
    [
        (["inventory", "s3://era5-silent"], "s3://era5-silent", "listing s3://era5-silent"),
        (
            ["era5-sst-mean", "--data", "s3://era5-silent", "--start", "2000-01", "--end",
             "2000-01", "--workers", "1", "--no-progress"],
            "s3://era5-silent/2000/01/data/sea_surface_temperature.nc",
            "HEAD of 1 object under s3://era5-silent",
        ),
        (
            ["era5-sst-mean", "--data", "s3://era5-silent/demo", "--workers", "1"],
            "s3://era5-silent/demo",
            "GET of s3://era5-silent/demo/summary.json",
        ),
    ],
    ids=["inventory", "run", "run-of-a-prefix"],
)  # fmt: skip
def test_the_cli_says_what_it_waits_for_then_names_the_time_out(
    silent_endpoint, fast_timeouts, tmp_path, args, url, what
):
    run = subprocess.run(
        [sys.executable, "-m", "pangeo_hpc.run", *args, "--endpoint-url", silent_endpoint],
        env=child_env({"PYTHONPATH": str(ROOT), **fast_timeouts}),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,  # a guard only: the old code waited 244 s
    )
    assert run.returncode == 2, (run.stdout, run.stderr)
    waiting, error = run.stderr.splitlines()  # two lines: the wait, then the error
    assert re.fullmatch(WAITING.format(what=re.escape(what)), waiting), waiting
    assert re.fullmatch("error: " + NO_ANSWER.format(url=re.escape(url)), error), error
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_every_client_gets_the_configured_time_outs(fast_timeouts):
    opts = s3.S3Options.resolve(endpoint_url="http://127.0.0.1:9")
    config_kwargs = opts.storage_options()["config_kwargs"]  # s3fs -> aiobotocore
    assert (config_kwargs["connect_timeout"], config_kwargs["read_timeout"]) == (2, 2)
    store = opts.store("era5-silent")  # obstore
    assert store.client_options["connect_timeout"] in ("2s", timedelta(seconds=2))
    assert store.client_options["read_timeout"] in ("2s", timedelta(seconds=2))
    assert store.retry_config["retry_timeout"] == timedelta(seconds=1)
    assert s3.client_timeouts() == s3.Timeouts(connect=2, read=2, retry=1)


def test_a_time_out_that_is_not_seconds_is_named():
    with (
        dask.config.set({"pangeo-hpc.s3.read-timeout": "1 minute"}),
        pytest.raises(
            InputError,
            match=r"^pangeo-hpc\.s3\.read-timeout '1 minute' is not a positive number of "
            r"seconds: set e\.g\. DASK_PANGEO_HPC__S3__READ_TIMEOUT=30$",
        ),
    ):
        s3.client_timeouts()


class _Said(logging.Handler):
    """Keeps the notices' lines and sets an event at each (the notice's thread logs them)."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []
        self.event = threading.Event()

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())
        self.event.set()


def test_the_notice_is_said_once_unless_an_answer_comes_first():
    from pangeo_hpc.s3.waiting import Notice

    opts = s3.S3Options(endpoint_url="http://127.0.0.1:9/?X-Amz-Signature=5ecret")
    said = _Said()
    logger = logging.getLogger("pangeo_hpc.s3.waiting")
    logger.addHandler(said)
    try:
        with Notice(opts, "listing s3://b", after=60) as notice:
            notice.answered()  # an answer well before the minute: nothing to say
        with Notice(opts, "listing s3://b", after=0.01):
            assert said.event.wait(timeout=60)  # said while still waiting
    finally:
        logger.removeHandler(said)
    assert said.lines == [
        "waiting for http://127.0.0.1:9/?X-Amz-Signature=*** (listing s3://b): no answer in "
        "0.01 s; a request gives up after 30 s without one (pangeo-hpc.s3.read-timeout) ..."
    ]
