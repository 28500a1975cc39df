"""Profiles, job scripts, walltimes and tunnel lines: everything looked at without a scheduler."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

import dask
import pytest

from pangeo_hpc.clusters import profiles
from pangeo_hpc.clusters import start as cl
from pangeo_hpc.clusters.jobqueue import cluster_kwargs, log_directory, processes_per_job
from pangeo_hpc.clusters.start import get_cluster, resolve_kind
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.walltime import format_walltime, lifetime, parse_walltime
from pangeo_hpc.lab.tunnel import tunnel_command


def test_shipped_profiles():
    assert {"local", "aws-c5n.18xlarge", "sdsc-comet", "pbs-generic", "sge-generic"} <= set(
        profiles.names()
    )
    aws = profiles.resolve("aws-c5n.18xlarge")
    assert (aws["kind"], aws["cores"], aws["processes"], aws["memory"]) == (
        "slurm",
        72,
        36,
        "150GB",
    )
    assert aws["data_root"] == "/fsx/era5-pds"
    assert profiles.resolve("sdsc-comet")["interface"] == "ib0"


def test_user_profiles_and_overrides_via_dask_config():
    with dask.config.set(
        {"pangeo-hpc.profiles.mysite": {"kind": "pbs", "cores": 4, "memory": "8GB"}}
    ):
        assert profiles.resolve("mysite", memory="16GB", queue=None) == {
            "kind": "pbs",
            "cores": 4,
            "memory": "16GB",
        }


def test_unknown_profile_lists_the_known_ones():
    with pytest.raises(
        InputError, match=r"unknown profile 'nope': choose one of \[.*'aws-c5n.18xlarge'"
    ):
        profiles.resolve("nope")


def _script(kind: str, profile: str, **overrides) -> str:
    c = get_cluster(kind, profile=profile, preview=True, **overrides)
    try:
        return c.job_script()
    finally:
        c.close()


def test_slurm_job_script_of_the_study_profile():
    s = _script("auto", "aws-c5n.18xlarge")
    assert "#SBATCH --cpus-per-task=72" in s and "#SBATCH --mem=140G" in s  # 150 GB in GiB
    assert "#SBATCH -t 02:00:00" in s
    assert "export HDF5_USE_FILE_LOCKING=FALSE" in s and "export OMP_NUM_THREADS=1" in s
    # the job's nanny leaves glibc's mmap threshold adaptive (jobqueue.NO_MALLOC_TRIM)
    assert (
        """export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON='{"MALLOC_TRIM_THRESHOLD_": None}'"""
        in s
    )
    assert "--nworkers 36 " in s and "--nthreads 2 " in s
    assert "--lifetime 6600s --lifetime-stagger 300s --lifetime-restart" in s
    assert "--interface ens5" in s and "--local-directory /tmp" in s


def test_pbs_and_sge_job_scripts_as_text():
    pbs = _script("pbs", "pbs-generic", walltime="45m", queue="workq")
    assert "#PBS -l select=1:ncpus=8:mem=30GB" in pbs and "#PBS -l walltime=00:45:00" in pbs
    assert "#PBS -q workq" in pbs and "export HDF5_USE_FILE_LOCKING=FALSE" in pbs
    sge = _script("sge", "sge-generic")
    assert "#$ -q all.q" in sge and "#$ -l h_rt=01:00:00" in sge
    assert "--nworkers 4" in sge and "export OPENBLAS_NUM_THREADS=1" in sge


@pytest.mark.parametrize(
    ("kind", "profile", "overrides", "processes"),
    [
        ("slurm", "aws-c5n.18xlarge", {}, 36),
        ("sge", "sge-generic", {}, 4),
        ("pbs", "pbs-generic", {"processes": 1}, 1),
    ],
)
def test_workers_per_job_and_log_folder_from_the_job_script(
    kind, profile, overrides, processes, tmp_path
):
    logs = tmp_path / "job logs"
    with dask.config.set({"pangeo-hpc.cluster.log-directory": str(logs)}):
        c = get_cluster(kind, profile=profile, preview=True, **overrides)
    try:
        assert processes_per_job(c) == processes
        assert cl.worker_count(c, 3) == 3 * processes
        assert log_directory(c) == str(logs)
    finally:
        c.close()
    assert processes_per_job(object()) == 1 and log_directory(object()) is None


def test_hdf5_locking_can_be_kept_on():
    with dask.config.set({"pangeo-hpc.cluster.hdf5-file-locking": True}):
        kw = cluster_kwargs("slurm", {"cores": 2, "memory": "4GB"})
    assert "export HDF5_USE_FILE_LOCKING=TRUE" in kw["job_script_prologue"]
    assert kw["processes"] == 2  # one single-threaded process per core by default


@pytest.mark.parametrize(
    ("profile", "match"),
    [
        ({"memory": "4GB"}, "needs cores per job"),
        ({"cores": 2}, "needs memory per job"),
        ({"cores": 2, "processes": 4, "memory": "4GB"}, "processes=4 exceeds cores=2"),
        ({"cores": "two", "memory": "4GB"}, "cores='two' must be a positive whole number"),
        ({"cores": 2, "memory": "lots"}, "memory='lots' is not a size: write it like 150GB"),
        (
            {"cores": 2, "memory": "4GB", "walltime": "forever"},
            "walltime 'forever' is not a duration",
        ),
    ],
)
def test_bad_batch_options(profile, match):
    with pytest.raises(InputError, match=match):
        cluster_kwargs("slurm", profile)


def test_a_missing_interface_is_named_with_the_ones_there():
    with pytest.raises(
        InputError, match=r"interface='ib0' does not exist on this host \(it has \[.*'lo'"
    ):
        get_cluster("slurm", profile="sdsc-comet")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("02:00:00", 7200),
        ("1-00:30:00", 88200),
        ("30", 1800),
        ("10:30", 630),
        ("2-12", 216000),
        ("90m", 5400),
        ("1.5h", 5400),
        ("45s", 45),
        (120, 7200),
    ],
)
def test_walltime(text, seconds):
    assert parse_walltime(text) == seconds


def test_lifetime_ends_before_the_walltime():
    assert lifetime("01:00:00") == (3240, 180)  # 6 min margin, 3 min stagger
    assert lifetime("10:00:00") == (35400, 300)  # margin capped at 10 min
    assert lifetime("00:02:00") == (60, 30)
    assert format_walltime(90061) == "25:01:01"
    with pytest.raises(InputError, match="must be longer than zero"):
        parse_walltime("00:00:00")


def test_auto_is_local_without_slurm(monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setattr(cl.shutil, "which", lambda name: None)
    assert resolve_kind("auto", None) == ("local", {"kind": "local"})


def test_auto_is_slurm_inside_an_allocation(monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "1234")
    monkeypatch.setattr(
        cl, "slurm_node_profile", lambda: {"kind": "slurm", "cores": 24, "memory": "100GB"}
    )
    assert resolve_kind("auto", None)[0] == "slurm"
    assert resolve_kind("auto", "local")[0] == "local"  # a named profile wins
    with pytest.raises(InputError, match="cluster kind 'k8s' is unknown"):
        resolve_kind("k8s", None)


def test_tunnel_lines():
    text = tunnel_command(
        login="hpc.example.org",
        user="ana",
        node="cn042",
        ports={"dashboard": 8787, "jupyterlab": 8888},
    )
    assert text.splitlines() == [
        "ssh -N -L 8787:cn042:8787 -L 8888:cn042:8888 ana@hpc.example.org",
        "dashboard: http://localhost:8787/status",
        "jupyterlab: http://localhost:8888/lab",
    ]
    jump = tunnel_command(
        login="login1", node="cn7", ports={"jupyterlab": 41234}, local_base=8888, jump=True
    )
    assert jump.splitlines()[0] == "ssh -N -J login1 -L 8888:127.0.0.1:41234 cn7"
    assert tunnel_command(login="login1", node="login1", ports={"dashboard": 8787}).startswith(
        "ssh -N -L 8787:localhost:8787 login1"
    )
    with pytest.raises(InputError, match="port 70000 must be a whole number from 1 to 65535"):
        tunnel_command(login="x", node="y", ports={"dashboard": 70000})


def test_making_a_batch_cluster_keeps_the_sigint_handler():
    """dask_jobqueue.runner sets SIGINT to sys.exit() on import; Ctrl-C must still interrupt.
    A fresh interpreter, so that the import really happens inside get_cluster."""
    code = (
        "import signal\n"
        "def mine(signum, frame): raise KeyboardInterrupt\n"
        "signal.signal(signal.SIGINT, mine)\n"
        "from pangeo_hpc.clusters.start import get_cluster\n"
        "get_cluster('slurm', profile='pbs-generic', preview=True).close()\n"
        "assert signal.getsignal(signal.SIGINT) is mine, signal.getsignal(signal.SIGINT)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_lab_job_script_keeps_the_token_out(tmp_path):
    from pangeo_hpc.lab.jupyter import lab_job_script

    s = lab_job_script(folder=tmp_path, walltime="90m", memory="8G", queue="gpu", ip="0.0.0.0")
    assert "#SBATCH -t 01:30:00" in s and "#SBATCH --mem=8G" in s and "#SBATCH -p gpu" in s
    assert f'JUPYTER_TOKEN="$(cat {tmp_path}/token)"' in s  # read from a user-only file
    assert "--IdentityProvider.token" not in s and "--ip=0.0.0.0" in s
    assert "DASK_DISTRIBUTED__DASHBOARD__LINK='/proxy/{port}/status'" in s
    assert "export HDF5_USE_FILE_LOCKING=FALSE" in s and "umask 077" in s


def test_local_workers_get_the_environment():
    import os

    from pangeo_hpc.clusters.start import running_cluster

    with running_cluster("local", workers=1) as (_cluster, client):
        (env,) = client.run(
            lambda: {
                k: os.environ.get(k)
                for k in ("HDF5_USE_FILE_LOCKING", "OMP_NUM_THREADS", "MALLOC_TRIM_THRESHOLD_")
            }
        ).values()
    assert env == {
        "HDF5_USE_FILE_LOCKING": "FALSE",
        "OMP_NUM_THREADS": "1",
        "MALLOC_TRIM_THRESHOLD_": None,
    }


def test_bad_job_counts():
    from pangeo_hpc.clusters.start import running_cluster

    with pytest.raises(InputError, match=r"adapt=\(3, 1\) needs 1 <= minimum <= maximum"):
        with running_cluster("slurm", adapt=(3, 1)):
            pass
    with pytest.raises(InputError, match="jobs=0 must be a positive"):
        with running_cluster("slurm", jobs=0):
            pass


def test_slurm_without_a_profile_says_why_when_sinfo_fails(tmp_path, monkeypatch):
    """sinfo failing (the controller down, say) is a ClusterError naming it, not a traceback."""
    from pangeo_hpc.clusters.start import slurm_node_profile
    from pangeo_hpc.errors import ClusterError

    sinfo = tmp_path / "sinfo"
    sinfo.write_text(
        "#!/bin/sh\necho 'slurm_load_partitions: Unable to contact slurm controller' >&2\nexit 1\n"
    )
    sinfo.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")
    with pytest.raises(ClusterError, match=r"which failed \(slurm_load_partitions: Unable to"):
        slurm_node_profile()


def test_a_local_cluster_leaves_no_gc_callback_where_ctrl_c_would_be_lost():
    """A KeyboardInterrupt raised in a gc callback is dropped by Python (first half: why);
    a local cluster's scheduler in this process added distributed's GCDiagnosis callback,
    which a Ctrl-C could land in (the next test once waited 120 s on a run that went on)."""
    import gc

    def interrupted(phase, info):
        raise KeyboardInterrupt

    dropped, hook = [], sys.unraisablehook
    sys.unraisablehook = lambda unraisable: dropped.append(unraisable.exc_type)
    gc.callbacks.append(interrupted)
    try:
        gc.collect()  # no KeyboardInterrupt comes out: "Exception ignored in: ..."
    finally:
        gc.callbacks.remove(interrupted)
        sys.unraisablehook = hook
    assert set(dropped) == {KeyboardInterrupt}

    with cl.local_cluster(workers=1, processes=False) as cluster:
        assert cluster.scheduler.status.name == "running"
        assert not [cb for cb in gc.callbacks if "GCDiagnosis" in repr(cb)], gc.callbacks


_INTERRUPTED = """
import sys
import time

import dask.array as da

from pangeo_hpc.clusters.start import running_cluster

if __name__ == "__main__":
    try:
        with running_cluster("local", workers=2) as (cluster, client):
            x = da.random.random((4000, 4000), chunks=(250, 250))
            print("computing", flush=True)
            while True:  # every block of x.T comes from the other worker: transfers
                (x + x.T).sum().compute()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
"""


@pytest.mark.slow
def test_ctrl_c_closes_a_local_cluster_without_its_workers_noise(tmp_path):
    """Ctrl-C while workers exchange data: the terminal shows nothing of the teardown
    (workers fetching from peers that left logged ``CommClosedError`` tracebacks and an
    atexit ``AssertionError: Status.init``: measured 6 of 6 times before the fix)."""
    script = tmp_path / "interrupted.py"
    script.write_text(_INTERRUPTED)
    p = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        assert p.stdout is not None and p.stdout.readline() == "computing\n"
        time.sleep(3)  # into the transfers: any moment of them shows the noise
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=120)
    finally:
        p.kill()
    assert err.strip() == "interrupted", err
