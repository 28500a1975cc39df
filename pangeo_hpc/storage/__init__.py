"""Storage: what a path sits on, how much of it is hydrated, warming it up, striping outputs,
how fast it reads."""

from pangeo_hpc.storage.detect import FsInfo, detect
from pangeo_hpc.storage.hydration import FileState, HydrationReport, hydration
from pangeo_hpc.storage.stripe import prepare_output, stripe_count
from pangeo_hpc.storage.survey import ReadSpeed, read_speed, survey
from pangeo_hpc.storage.warmup import WarmupReport, warmup

__all__ = [
    "FileState",
    "FsInfo",
    "HydrationReport",
    "ReadSpeed",
    "WarmupReport",
    "detect",
    "hydration",
    "prepare_output",
    "read_speed",
    "stripe_count",
    "survey",
    "warmup",
]
