"""Synthetic ERA5: the era5-pds layout with known answers, for demos, tests and benchmarks.

``python -m pangeo_hpc.run demo-data`` writes it; :func:`expected` gives its known answers.
"""

from pangeo_hpc.demo.synthetic import (
    ENSO_BANDS,
    VARIABLE,
    DemoSpec,
    expected,
    generate,
    is_demo_file,
)

__all__ = ["ENSO_BANDS", "VARIABLE", "DemoSpec", "expected", "generate", "is_demo_file"]
