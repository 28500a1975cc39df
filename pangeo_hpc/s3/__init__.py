"""S3: options and credentials (:class:`~pangeo_hpc.s3.options.S3Options`), error messages, URLs."""
