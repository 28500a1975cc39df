"""What the benchmark cases share, one module per job: ``data`` (the demo trees, made once),
``pagecache`` (cold and warm runs), ``timing`` (interleaved repetitions, medians),
``memory`` (workers' peak RSS), ``cluster`` (the local Dask cluster), ``rows`` (ratios
and texts a case reports), ``results`` (the result files), ``options`` (the common
flags), ``paths``. The servers (SeaweedFS, rclone mounts) are the tests' own:
``tests.support.servers``."""
