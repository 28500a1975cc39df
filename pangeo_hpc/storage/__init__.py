"""Storage: what a path sits on, how much of it is hydrated, warming it up, striping outputs."""

from .detect import FsInfo, detect
from .hydration import FileState, HydrationReport, hydration
from .stripe import prepare_output, stripe_count
from .warmup import WarmupReport, warmup

__all__ = [
    "FileState",
    "FsInfo",
    "HydrationReport",
    "WarmupReport",
    "detect",
    "hydration",
    "prepare_output",
    "stripe_count",
    "warmup",
]
