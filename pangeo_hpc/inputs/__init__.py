"""What users type, checked: months and periods, sizes and rates, walltimes, paths."""
