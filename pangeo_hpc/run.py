"""``python -m pangeo_hpc.run`` and the ``pangeo-hpc`` command: see :mod:`pangeo_hpc.cli.main`."""

from pangeo_hpc.cli.main import console, main

__all__ = ["main"]

if __name__ == "__main__":
    console()
