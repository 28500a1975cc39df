"""The cost model's arithmetic on fixed inputs, and `plan` from the CLI (no cluster needed)."""

from __future__ import annotations

import json

import pytest

from pangeo_hpc import run
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.sizes import parse_rate
from pangeo_hpc.planning.calibration import Calibration, RecipeFit, load_calibration
from pangeo_hpc.planning.plan import Model, Storage, parse_storage, plan

FSX = Storage("fsx", 2880e6, shared=True, over_network=True)
#: the study's run, with round figures: 300 GB in 128 MB chunks compressed 3x, 100 MB/s per
#: process, 1 ms per task, 36 processes on 72 cores, 100 Gbit/s per node, $3.888/h
STUDY = Model(
    size=300_000_000_000,
    ratio=3.0,
    chunk=128_000_000,
    tasks_per_chunk=5,
    process_rate=100e6,
    task_overhead=0.001,
    fixed=1.0,
    processes=36,
    cores=72,
    storage=FSX,
    network=12.5e9,
    price=3.888,
)


def test_eight_nodes_are_bound_by_the_shared_file_system():
    r = STUDY.predict(8)
    # 2,344 chunks on 288 processes: 9 waves of 1.28 s = 11.52 s of CPU; 100 GB read at
    # 2,880 MB/s = 34.72 s; the network 100 GB / (8 x 12.5 GB/s) = 1 s; the scheduler
    # 11,720 tasks x 1 ms = 11.72 s; plus 1 s fixed
    assert r["tasks"] == 11_720
    assert r["workers"] == 288
    assert r["bottleneck"] == "storage"
    assert r["wall_s"] == pytest.approx(1 + 100e9 / 2880e6)
    assert r["chunk_s"] == pytest.approx((100e9 / 2880e6) / 9)
    assert r["chunks_per_process"] == pytest.approx(2344 / 288)
    assert r["tail_efficiency"] == pytest.approx(2344 / (9 * 288))
    assert r["efficiency"] == pytest.approx(3000 / (288 * r["wall_s"]))
    assert r["read_MB_s"] == pytest.approx(100e9 / r["wall_s"] / 1e6)
    assert r["cost"] == pytest.approx(8 * r["wall_s"] / 3600 * 3.888)


def test_one_node_is_bound_by_decoding_with_its_long_tail():
    r = STUDY.predict(1)
    # 2,344 chunks on 36 processes: 66 waves (65.1), the last one 4 chunks short
    assert r["bottleneck"] == "CPU decode"
    assert r["wall_s"] == pytest.approx(1 + 66 * 1.28)
    assert r["tail_efficiency"] == pytest.approx(2344 / (66 * 36))


def test_more_nodes_past_the_storage_limit_only_cost_more():
    rows = [STUDY.predict(n) for n in (8, 16, 64)]
    assert [r["wall_s"] for r in rows] == [pytest.approx(1 + 100e9 / 2880e6)] * 3
    costs = [r["cost"] for r in rows]
    assert costs == sorted(costs) and costs[-1] == pytest.approx(8 * costs[0])


def test_many_small_tasks_make_the_scheduler_the_limit():
    busy = Model(**{**STUDY.__dict__, "task_overhead": 0.01})
    r = busy.predict(64)
    assert r["bottleneck"] == "scheduler"
    assert r["wall_s"] == pytest.approx(1 + 11_720 * 0.01)
    grows = Model(**{**STUDY.__dict__, "overhead_per_worker": 1e-6})
    assert grows.predict(64)["wall_s"] == pytest.approx(1 + 11_720 * (0.001 + 1e-6 * 2303))


def test_per_node_storage_scales_with_the_nodes_and_skips_the_network_when_local():
    local = Model(**{**STUDY.__dict__, "storage": Storage("local", 500e6, False, False)})
    one, two = local.predict(1), local.predict(2)
    assert one["bottleneck"] == two["bottleneck"] == "storage"
    assert one["wall_s"] == pytest.approx(1 + 100e9 / 500e6)
    assert two["wall_s"] == pytest.approx(1 + 100e9 / 1e9)


def test_the_network_link_limits_storage_reached_over_it():
    slow = Model(
        **{**STUDY.__dict__, "network": 125e6, "storage": Storage("s3", 1e12, False, True)}
    )
    r = slow.predict(2)
    assert r["bottleneck"] == "network"
    assert r["wall_s"] == pytest.approx(1 + 100e9 / (2 * 125e6))


def test_jobs_sharing_one_host_share_its_cores_with_the_scheduler():
    # the validation's one-process jobs on a 2-core host, where the scheduler runs too
    shared = Model(**{**STUDY.__dict__, "processes": 1, "cores": 1, "host_cores": 2})
    r1, r2, r4 = shared.predict(1), shared.predict(2), shared.predict(4)
    assert r1["bottleneck"] == "CPU decode" and r1["wall_s"] == pytest.approx(1 + 2344 * 1.28)
    # two or four jobs: all decoding and the scheduler's 11,720 x 1 ms on two cores
    assert r2["bottleneck"] == r4["bottleneck"] == "host CPU"
    assert r4["wall_s"] == r2["wall_s"] == pytest.approx(1 + (2344 * 1.28 + 11.72) / 2)


def test_the_workers_own_costs_per_task_add_to_each_chunk():
    costly = Model(**{**STUDY.__dict__, "task_cost": 0.002})
    assert costly.predict(1)["wall_s"] == pytest.approx(1 + 66 * (1.28 + 5 * 0.002))


@pytest.mark.parametrize(
    "text, rate",
    [("2880MB/s", 2.88e9), ("100Gbit/s", 12.5e9), ("25Gbps", 3.125e9), ("1.5 GiB/s", 1.5 * 2**30)],
)
def test_rates(text, rate):
    assert parse_rate(text) == pytest.approx(rate)


@pytest.mark.parametrize("text", ["fast", "2880MB", "0MB/s", "-1GB/s", "", "10XB/s"])
def test_bad_rates_name_the_value(text):
    with pytest.raises(InputError, match="rate"):
        parse_rate(text)


def test_storage_kinds_and_measured_rates():
    assert parse_storage("fsx:2880MB/s") == FSX
    assert parse_storage("local", {"local": 5e8}).rate == 5e8
    assert parse_storage("s3:1GB/s", {"s3": 5e8}).rate == 1e9  # given wins
    with pytest.raises(InputError, match=r"fsx:2880MB/s .*200 MB/s per TiB"):
        parse_storage("fsx")
    with pytest.raises(InputError, match="unknown kind 'tape'"):
        parse_storage("tape:1GB/s")


def _calibration(tmp_path):
    cal = Calibration(
        host="test",
        cores=2,
        created="2026-11-23T00:00:00+00:00",
        task_overhead=0.001,
        storage={"local": 5e8},
        recipes={"era5-sst-mean": RecipeFit(100e6, 5, 1.0, 3.0)},
    )
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(cal.to_json()))
    return path


def test_plan_reads_the_profile_and_the_calibration_file(tmp_path):
    p = plan(
        "era5-sst-mean",
        "300GB",
        profile="aws-c5n.18xlarge",
        calibration=_calibration(tmp_path),
        nodes="1,8",
    )
    assert p.model.storage == FSX and p.model.price == 3.888 and p.model.network == 12.5e9
    assert [r["wall_s"] for r in p.rows] == pytest.approx(
        [STUDY.predict(1)["wall_s"], STUDY.predict(8)["wall_s"]]
    )
    assert "fewest nodes within 10 % of the fastest: 8" in p.text()


def test_a_local_plan_starts_its_workers_as_calibrate_measured(tmp_path):
    from pangeo_hpc.planning.calibration import JobStarts

    cal = Calibration(
        host="test", cores=2, created="2026-11-27T00:00:00+00:00", task_overhead=0.001,
        storage={"local": 5e8}, recipes={"era5-sst-mean": RecipeFit(100e6, 5, 1.0, 3.0)},
        starts={"local": JobStarts(queue=[0.0, 0.0], arrival=[1.5, 2.5])},
    )  # fmt: skip
    p = plan("era5-sst-mean", "2GB", profile="local", calibration=cal)
    (row,) = p.rows
    # no queue; the workers' arrival, billed: a plan that omits it starts in 0 s
    assert p.model.queue == (0.0, 0.0) and p.model.arrival == (1.5, 2.5)
    assert (row["start_low_s"], row["start_s"], row["start_high_s"]) == (1.5, 2.0, 2.5)
    assert row["node_hours"] == pytest.approx((2.0 + row["wall_s"]) / 3600)
    text = p.text()
    assert "workers start in 1.5-2.5 s (a local cluster)" in text
    head = next(line for line in text.splitlines() if "chunks/proc" in line)
    assert "start" in head.split()  # the table's column


def test_jobs_beyond_a_shared_hosts_cores_arrive_in_waves(tmp_path):
    """One-core batch jobs on one 2-core host (the scheduler there too): calibrate measured
    two starting at once; four start in two waves (5.5 s measured where one or two took
    2.6 s, docs/scaling.md), so their arrival is billed twice, one or two jobs' once."""
    from pangeo_hpc.planning.calibration import JobStarts

    cal = Calibration(
        host="test", cores=2, created="2026-11-27T00:00:00+00:00", task_overhead=0.001,
        storage={"local": 5e8}, recipes={"era5-sst-mean": RecipeFit(100e6, 5, 1.0, 3.0)},
        starts={"one-node": JobStarts(queue=[0.5, 0.5], arrival=[2.0, 3.0], jobs=2)},
    )  # fmt: skip
    site = {"kind": "slurm", "cores": 1, "processes": 1}
    p = plan("era5-sst-mean", "2GB", profile="one-node", options=site, calibration=cal,
             nodes="1,2,3,4", host_cores=2)  # fmt: skip
    starts = [(r["start_low_s"], r["start_high_s"]) for r in p.rows]
    assert starts == [(2.5, 3.5), (2.5, 3.5), (4.5, 6.5), (4.5, 6.5)]
    # measured with four jobs (two waves already): four are billed as measured
    cal.starts["one-node"] = JobStarts(queue=[0.5, 0.5], arrival=[4.0, 6.0], jobs=4)
    p = plan("era5-sst-mean", "2GB", profile="one-node", options=site, calibration=cal,
             nodes="4", host_cores=2)  # fmt: skip
    assert (p.rows[0]["start_low_s"], p.rows[0]["start_high_s"]) == (4.5, 6.5)
    # nodes of their own (no shared host): every job's workers start at once
    cal.starts["one-node"] = JobStarts(queue=[0.5, 0.5], arrival=[2.0, 3.0], jobs=2)
    p = plan("era5-sst-mean", "2GB", profile="one-node", options=site, calibration=cal,
             nodes="4")  # fmt: skip
    assert (p.rows[0]["start_low_s"], p.rows[0]["start_high_s"]) == (2.5, 3.5)


def test_no_calibration_file_falls_back_to_the_shipped_figures(tmp_path):
    import dask.config

    with dask.config.set({"pangeo-hpc.plan.calibration": str(tmp_path / "none.json")}):
        shipped = load_calibration()
    assert shipped.source == "shipped figures" and "era5-sst-mean" in shipped.recipes


def test_cli_plan_prints_the_table_and_writes_the_plot(tmp_path, capsys):
    png = tmp_path / "plan.png"
    code = run.main(
        ["plan", "era5-sst-mean", "--size", "300GB", "--profile", "aws-c5n.18xlarge",
         "--storage", "fsx:2880MB/s", "--price", "3.888/h", "--nodes", "1,2,4,8",
         "--calibration", str(_calibration(tmp_path)), "--plot", str(png)]
    )  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0, out
    assert png.stat().st_size > 10_000 and not list(tmp_path.glob(".*.tmp"))
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[0] for r in rows] == ["1", "2", "4", "8"]
    assert "storage" in rows[-1] and "bottleneck" in out and "cost $" in out


@pytest.mark.parametrize(
    "args, message",
    [
        (["--size", "lots"], "--size 'lots' is not a size"),
        (["--size", "1GB", "--storage", "fsx"], "has no rate"),
        (["--size", "1GB", "--price", "cheap"], "--price 'cheap'"),
        (["--size", "1GB", "--nodes", "1,x"], "--nodes '1,x'"),
        (["--size", "1GB", "--profile", "nope"], "unknown profile 'nope'"),
        (["--size", "1GB", "--ratio", "0"], "--ratio 0.0"),
        (["--size", "1GB", "--plot", "p.jpg"], "must end in .png"),
    ],
)
def test_cli_plan_bad_input_is_one_line(args, message, tmp_path, capsys):
    code = run.main(["plan", "era5-sst-mean", "--calibration", str(_calibration(tmp_path)), *args])
    err = capsys.readouterr().err
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_the_file_adds_to_the_shipped_figures_and_names_what_is_missing(tmp_path, capsys):
    cal = load_calibration(_calibration(tmp_path))
    assert cal.recipe("era5-sst-mean").process_rate == 100e6  # the file's
    assert cal.recipe("era5-sst-trend").process_rate > 0  # shipped
    code = run.main(
        ["plan", "my-recipe", "--size", "1GB", "--calibration", str(tmp_path / "c.json")]
    )
    err = capsys.readouterr().err
    assert code == 2 and "calibration" in err and "does not exist" in err
    code = run.main(
        ["plan", "my-recipe", "--size", "1GB", "--calibration", str(_calibration(tmp_path))]
    )
    err = capsys.readouterr().err
    assert code == 2 and "no calibration for recipe 'my-recipe'" in err
    assert "python -m pangeo_hpc.run calibrate my-recipe" in err


#: 240 chunks of 8 MB on one one-core process: the validation's 1.9 GB in miniature
FUSABLE = Model(size=240 * 8_000_000, ratio=2.7, chunk=8_000_000, tasks_per_chunk=1.0,
                process_rate=100e6, task_overhead=0.0, task_cost=0.01, fixed=0.0,
                processes=1, cores=1, storage=Storage("cache", 1e15, False, False))  # fmt: skip


def test_fused_reads_count_their_spans_not_the_chunks():
    """An area mean summed as it reads (recipes/fusion.py) runs 32 read tasks of 60 MB,
    not 240 of 8 MB: 32 x (0.6 s + 0.01 s per task) = 19.52 s, not 240 x 0.09 s."""
    fused = Model(**{**FUSABLE.__dict__, "read_tasks": 32}).predict(1)
    assert fused["tasks"] == 32 and fused["chunks_per_process"] == 32
    assert fused["wall_s"] == pytest.approx(32 * (60e6 / 100e6 + 0.01))
    assert FUSABLE.predict(1)["wall_s"] == pytest.approx(240 * (8e6 / 100e6 + 0.01))
    with pytest.raises(InputError, match=r"read_tasks=0 must be a whole number"):
        Model(**{**FUSABLE.__dict__, "read_tasks": 0})


def test_plan_counts_the_fused_spans_of_a_fused_recipe(tmp_path):
    """A calibration that found fused reads: the plan's tasks are the spans
    fusion.task_spans makes (config data.fused-tasks), times the tasks per read task."""
    import dask.config

    from pangeo_hpc.planning.model import fused_read_tasks

    def tasks(fused: bool, **config: object) -> int:
        fit = RecipeFit(100e6, 1.0, 0.0, 3.0, fused=fused)
        cal = Calibration("test", 2, "2026-11-27T00:00:00+00:00", 0.001,
                          recipes={"era5-sst-mean": fit})  # fmt: skip
        with dask.config.set(config):
            p = plan("era5-sst-mean", "1920MB", chunk="8MB", storage="cache:5GB/s", calibration=cal)
            return p.rows[0]["tasks"]

    assert tasks(False) == 240
    # at least 32 spans of at most 60 MB: 7 chunks each (a span ends where a chunk ends)
    assert tasks(True) == fused_read_tasks(1_920_000_000, 8_000_000) == 35
    assert tasks(True, **{"pangeo-hpc.data.fused-tasks": 60}) == 60
