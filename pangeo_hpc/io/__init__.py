"""Bytes to lazy xarray: :func:`~pangeo_hpc.io.era5.open_era5` over local trees, S3 objects
(h5py, kerchunk byte ranges) and Zarr stores, :func:`~pangeo_hpc.io.files.open_files` over
any CF NetCDF files; file layouts, HDF5 metadata, chunk decoding."""
