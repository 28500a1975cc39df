"""JupyterLab's Dask settings (lab-config) and JupyterLab on this machine (make lab)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import dask
import pytest
import yaml
from distributed.utils import format_dashboard_link

from pangeo_hpc import start_cluster
from pangeo_hpc.errors import InputError
from pangeo_hpc.lab.setup import (
    HUB_LINK,
    PROXY_LINK,
    lab_environment,
    lab_settings,
    write_lab_config,
)
from pangeo_hpc.lab.tunnel import cluster_tunnel, dashboard_port


def test_the_config_file_holds_the_link_the_factory_and_the_data(tmp_path, monkeypatch):
    path = write_lab_config(tmp_path / "dask" / "lab.yaml", data_root=tmp_path, link=HUB_LINK)
    doc = yaml.safe_load(path.read_text())
    assert doc["distributed"]["dashboard"]["link"] == HUB_LINK
    assert doc["pangeo-hpc"]["data"]["root"] == str(tmp_path)
    factory = doc["labextension"]["factory"]
    assert (factory["module"], factory["class"]) == ("dask.distributed", "LocalCluster")
    assert factory["kwargs"]["host"] == "127.0.0.1"  # the sidebar's clusters stay local
    assert factory["kwargs"]["env"]["HDF5_USE_FILE_LOCKING"] == "FALSE"
    assert [p.name for p in path.parent.iterdir()] == ["lab.yaml"]  # no temporary left

    # as Dask reads it, and as distributed fills in the link on JupyterHub
    config = dask.config.collect([str(path.parent)], env={})
    monkeypatch.setenv("JUPYTERHUB_SERVICE_PREFIX", "/user/ana/")
    with dask.config.set(
        {"distributed.dashboard.link": config["distributed"]["dashboard"]["link"]}
    ):
        assert format_dashboard_link("127.0.0.1", 8787) == "/user/ana/proxy/8787/status"


def test_the_cli_writes_it_and_refuses_a_link_without_port(tmp_path, capsys):
    from pangeo_hpc import run

    out = tmp_path / "lab.yaml"
    assert run.main(["lab-config", "--out", str(out), "--data", str(tmp_path)]) == 0
    assert yaml.safe_load(out.read_text())["distributed"]["dashboard"]["link"] == PROXY_LINK
    assert run.main(["lab-config", "--out", str(out), "--link", "/dashboard/status"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "'/dashboard/status' has no {port}" in err
    with pytest.raises(InputError, match="pass path= with a writable file"):
        write_lab_config(tmp_path / "lab.yaml" / "x.yaml")  # a file where a folder should be


def test_environment_variables_give_dask_the_same_settings():
    env = lab_environment(lab_settings("/data/era5"))
    assert env["DASK_DISTRIBUTED__DASHBOARD__LINK"] == PROXY_LINK
    assert env["DASK_PANGEO_HPC__DATA__ROOT"] == "/data/era5"
    config = dask.config.collect([], env=env)
    assert config["labextension"]["factory"]["kwargs"]["processes"] is True
    assert config["pangeo_hpc"]["data"]["root"] == "/data/era5"


def test_a_cluster_gives_its_dashboard_link_through_the_proxy_and_its_tunnel():
    cluster, client = start_cluster(profile="local", workers=1)
    try:
        port = dashboard_port(cluster)
        with dask.config.set({"distributed.dashboard.link": PROXY_LINK}):
            assert cluster.dashboard_link == f"/proxy/{port}/status"
        lines = cluster_tunnel(cluster, login="hpc.example.org", user="ana", lab_port=8888)
        ssh, *urls = lines.splitlines()
        # the dashboard listens on loopback: hop through the login node to this host
        assert ssh.startswith("ssh -N -J ana@hpc.example.org ")
        assert f"-L {port}:127.0.0.1:{port} -L 8888:127.0.0.1:8888" in ssh
        assert urls == [
            f"dashboard: http://localhost:{port}/status",
            "jupyterlab: http://localhost:8888/lab",
        ]
        # on the login host itself: a plain forward to localhost
        assert cluster_tunnel(cluster, login="localhost").startswith(
            f"ssh -N -L {port}:localhost:{port} localhost"
        )
    finally:
        client.close()
        cluster.close()


@pytest.mark.slow
def test_lab_here_starts_jupyterlab_with_a_token_kept_off_the_command_line(demo_tree, tmp_path):
    token = "canary-token-not-for-ps"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pangeo_hpc.run", "lab", "--here", "--data", str(demo_tree),
         "--notebook-dir", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env={**os.environ, "JUPYTER_TOKEN": token, "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path)},
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        lines = [proc.stdout.readline() for _ in range(4)]
        url = lines[0].split()[1]
        assert url.startswith("http://127.0.0.1:") and url.endswith(f"/lab?token={token}")
        assert "ssh -N -L" in lines[2]
        base = url.split("/lab?")[0]
        with urllib.request.urlopen(f"{base}/api/status?token={token}", timeout=10) as r:
            assert r.status == 200
        with pytest.raises(urllib.error.HTTPError) as denied:
            urllib.request.urlopen(f"{base}/api/contents", timeout=10)
        assert denied.value.code == 403  # no token, no access
        listing = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
        assert token not in listing
        log = Path(lines[3].split("log: ")[1].split(";")[0])
        assert log.stat().st_mode & 0o077 == 0  # the log is the user's alone
    finally:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{base}/api/status", timeout=2)


def test_lab_here_refuses_missing_folders(tmp_path, capsys):
    from pangeo_hpc import run

    assert run.main(["lab", "--here", "--notebook-dir", str(tmp_path / "nope")]) == 2
    assert "notebook folder" in capsys.readouterr().err
    args = ["lab", "--here", "--notebook-dir", str(tmp_path), "--data", str(tmp_path / "none")]
    assert run.main(args) == 2
    assert "demo-data" in capsys.readouterr().err
