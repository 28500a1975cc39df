"""Everything pangeo-hpc writes: atomic outputs guarded against replacing what it did not
write (:mod:`~pangeo_hpc.write.outputs`, :mod:`~pangeo_hpc.write.guard`), Zarr stores, figures."""
