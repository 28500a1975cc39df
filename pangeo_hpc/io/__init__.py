"""Bytes to lazy xarray: :func:`~pangeo_hpc.io.era5.open_era5` over local trees, S3 objects
(h5py, kerchunk byte ranges) and Zarr stores; file layouts, HDF5 metadata, chunk decoding."""
