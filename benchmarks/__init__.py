"""The benchmark suite (``make bench``): not a test, not the package.

Each case is a script run as ``python benchmarks/b7_incremental.py`` or
``python -m benchmarks.b7_incremental``; shared helpers are in :mod:`benchmarks.support`.
Its modules import ``benchmarks.`` and ``tests.support.`` by their full names, no
``sys.path`` edit: from the repository's root (``python -m``, the current folder is on the
path) or from anywhere once the package is installed in development mode (``make``'s
``pip install -e``: the editable install puts the repository's root on the path).
"""
