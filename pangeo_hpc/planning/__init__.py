"""How long and how much: the time/cost model (:mod:`~pangeo_hpc.planning.plan`), its
calibration file and measurements, and checks of the model against real runs."""
