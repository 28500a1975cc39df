"""JupyterLab here or as a batch job (:mod:`~pangeo_hpc.lab.jupyter`,
:mod:`~pangeo_hpc.lab.setup`), its Dask settings, and the ``ssh -L`` line to reach it
(:mod:`~pangeo_hpc.lab.tunnel`). Nothing is imported here: ``tunnel`` is light, the others
bring JupyterLab's and dask-jobqueue's dependencies."""
