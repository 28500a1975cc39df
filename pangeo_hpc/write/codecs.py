"""The compressors ``convert`` offers for Zarr stores, by name (no Zarr or NumPy imported:
the command line's flags list them)."""

#: Blosc compressors, fastest to decode last; ``zstd`` (the default) compresses best
CODECS = ("zstd", "lz4hc", "lz4")
