"""What users type, checked: months and periods, sizes and rates, walltimes, paths; and
the identity of an input file that every cache checks (:mod:`pangeo_hpc.inputs.stamps`)."""
