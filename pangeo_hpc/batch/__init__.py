"""Recipes run end to end: the YAML files (:mod:`~pangeo_hpc.batch.recipe_yaml`), the chains
of recipe functions they name (:mod:`~pangeo_hpc.batch.chains`), runs
(:mod:`~pangeo_hpc.batch.execute`) and the conversion to Zarr."""
