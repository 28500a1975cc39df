"""JupyterLab here or as a batch job, its Dask settings, and the ``ssh -L`` line to reach it."""

from pangeo_hpc.lab.jupyter import LabJob, instructions, lab_job_script, submit_lab

__all__ = ["LabJob", "instructions", "lab_job_script", "submit_lab"]
