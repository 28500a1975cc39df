"""``python -m pangeo_hpc.run`` and the ``pangeo-hpc`` command: see :mod:`pangeo_hpc.cli.main`."""

import sys

from pangeo_hpc.cli.main import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
