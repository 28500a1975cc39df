"""Incremental runs from per-file partial states: where a chain can be split
(:mod:`.splitting`), the plan on the data and the cache keys (:mod:`.plan`), what a run
reuses, reads and does not need (:mod:`.read_plan`), the states of pieces and roll-ups
(:mod:`.states`, :mod:`.rollups`), the run (:mod:`.run`) and the state store
(:mod:`.state_cache`)."""
