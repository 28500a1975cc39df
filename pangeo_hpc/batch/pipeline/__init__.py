"""A recipe run end to end: open the inputs and compute (:mod:`.steps`), write the result,
figure and summary (:mod:`.results`, with :mod:`.headlines` and :mod:`.provenance`), the
composition (:mod:`.execute`: ``run_recipe``) and the conversion to Zarr (:mod:`.convert`)."""
