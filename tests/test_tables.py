"""The one text-table renderer, and the tables drawn with it, line for line."""

from __future__ import annotations

from dataclasses import replace

from pangeo_hpc.planning.plan import Model, Plan, Storage
from pangeo_hpc.storage.inventory import Inventory, PrefixTotals
from pangeo_hpc.storage.survey import ReadSpeed, table
from pangeo_hpc.tables import RULE, text_table

MiB = 1 << 20


def test_columns_as_wide_as_their_widest_cell_or_the_least_width():
    rows = [("name", "n", "note"), RULE, ("a", "1,234", "x"), ("long name", "5", "")]
    assert text_table(rows, right=(False, True, False)) == [
        "name           n  note",
        "---------  -----  ----",
        "a          1,234  x",
        "long name      5",  # no trailing blanks
    ]
    assert text_table([("a", "1")], right=(False, True), widths=(3, 4), sep=[" | "]) == [
        "a   |    1"
    ]
    assert text_table([("a", "b", "c"), RULE], right=(True,) * 3, sep=[" ", " / "]) == [
        "a b / c",
        "- -   -",
    ]


# ----- the tables of the package, as they were printed before they shared the renderer

INVENTORY = """\
s3://bucket/era5
prefix    objects           bytes        size
------  ---------  --------------  ----------
(top)           1              10        10 B
1979/   1,234,000  98,765,000,000   91.98 GiB
2020/         566         432,091  421.96 kiB
------  ---------  --------------  ----------
total   1,234,567  98,765,432,101   91.98 GiB
listed in 3.21 s: 1,300 LIST requests, 2 prefixes in parallel (concurrency 64)
"""

SURVEY = """\
label   kind    files     GB      s   MB/s  cache
------  ------  -----  -----  -----  -----  ------------------
fsx     lustre  1,200  12.35  10.50  1,176  cold
/tmp/x  ext4        3   0.00   0.01    300  warm, 100 % cached
/tmp/x: /tmp/x/a.nc: gone
"""

PLAN = """\
plan for era5-sst-mean: 300.0 GB uncompressed (100.0 GB stored, ratio 3.00), 2,344 chunks of 128 MB
nodes: 36 processes, 72 cores, network 12,500 MB/s, $3.888/node-hour; storage fsx 2,880 MB/s shared
measured: 100 MB/s per process; per task 0.00 ms on its worker, 1.00 ms on the scheduler (+0.00 us per worker); 0.00 s warm-up per worker; 1.00 s per run
range: none measured (calibrate to measure repeated runs)
  calibration: test

 nodes  workers    tasks chunks/proc  chunk s             wall  effic.  tail  bottleneck   read MB/s           cost $
     1       36   11,720       65.11    1.280           85.5 s     97%   99%  CPU decode       1,170           0.0923
     2       72   11,720       32.56    1.280           43.2 s     96%   99%  CPU decode       2,313           0.0934
     8      288   11,720        8.14    3.858           35.7 s     29%   90%  storage          2,799           0.3086
    64    2,304   11,720        1.02   17.361           35.7 s      4%   51%  storage          2,799           2.4691
  1024   36,864   11,720        0.06   34.722           35.7 s      0%    6%  storage          2,799          39.5059

fewest nodes within 10 % of the fastest: 8 (35.7 s, storage-bound, $0.3086)
"""

PLAN_WITHOUT_PRICE = """\
plan for era5-sst-mean: 300.0 GB uncompressed (100.0 GB stored, ratio 3.00), 2,344 chunks of 128 MB
nodes: 36 processes, 72 cores, network 12,500 MB/s; storage fsx 2,880 MB/s shared
measured: 100 MB/s per process; per task 0.00 ms on its worker, 1.00 ms on the scheduler (+0.00 us per worker); 0.00 s warm-up per worker; 1.00 s per run
range: none measured (calibrate to measure repeated runs)
  calibration: test

 nodes  workers    tasks chunks/proc  chunk s             wall  effic.  tail  bottleneck   read MB/s           node-h
     1       36   11,720       65.11    1.280           85.5 s     97%   99%  CPU decode       1,170           0.0237
     2       72   11,720       32.56    1.280           43.2 s     96%   99%  CPU decode       2,313           0.0240
     8      288   11,720        8.14    3.858           35.7 s     29%   90%  storage          2,799           0.0794
    64    2,304   11,720        1.02   17.361           35.7 s      4%   51%  storage          2,799           0.6351
  1024   36,864   11,720        0.06   34.722           35.7 s      0%    6%  storage          2,799          10.1610

fewest nodes within 10 % of the fastest: 8 (35.7 s, storage-bound)
"""


def test_inventory_table():
    inv = Inventory(
        "s3://bucket/era5",
        1234567,
        98765432101,
        [
            PrefixTotals("", 1, 10),
            PrefixTotals("1979/", 1234000, 98765000000),
            PrefixTotals("2020/", 566, 432091),
        ],
        depth=1,
        seconds=3.21,
        requests=1300,
        concurrency=64,
        tasks=2,
    )
    assert inv.to_table() == INVENTORY


def test_survey_table():
    results = [
        ReadSpeed("/fsx/era5", "lustre", 1200, 12_345_678_901, 10.5, True, "8 threads", 8,
                  16 * MiB, cached=0, label="fsx"),
        ReadSpeed("/tmp/x", "ext4", 3, 3_000_000, 0.01, False, "m", 8, MiB, cached=3_000_000,
                  failed=[("/tmp/x/a.nc", "gone")]),
    ]  # fmt: skip
    assert table(results) == SURVEY


def test_plan_table():
    fsx = Storage("fsx", 2880e6, shared=True, over_network=True)
    study = Model(size=300_000_000_000, ratio=3.0, chunk=128_000_000, tasks_per_chunk=5,
                  process_rate=100e6, task_overhead=0.001, fixed=1.0, processes=36, cores=72,
                  storage=fsx, network=12.5e9, price=3.888)  # fmt: skip
    for model, expected in ((study, PLAN), (replace(study, price=None), PLAN_WITHOUT_PRICE)):
        rows = [model.predict(n) for n in (1, 2, 8, 64, 1024)]
        p = Plan("era5-sst-mean", model, rows, {"calibration": "test"})
        assert p.text() + "\n" == expected
