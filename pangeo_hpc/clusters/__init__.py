"""Dask clusters: local, or Slurm, PBS and SGE through dask-jobqueue with site profiles;
diagnostics of workers that do not come."""

from pangeo_hpc.clusters.start import get_cluster, running_cluster, start_cluster

__all__ = ["get_cluster", "running_cluster", "start_cluster"]
