"""Storage: what a path sits on, how much of it is hydrated, warming it up, striping outputs,
how fast it reads."""

from .detect import FsInfo, detect
from .hydration import FileState, HydrationReport, hydration
from .stripe import prepare_output, stripe_count
from .survey import ReadSpeed, read_speed, survey
from .warmup import WarmupReport, warmup

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
