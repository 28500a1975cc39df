"""Where the benchmarks keep their data (made once, gitignored) and their results."""

from __future__ import annotations

from tests.support.paths import ROOT

BENCH = ROOT / "benchmarks"
#: demo data made once and reused (gitignored)
DATA = BENCH / "data"
#: ``<case>.json`` of each case, read by the docs' benchmarks page
RESULTS = BENCH / "results"
