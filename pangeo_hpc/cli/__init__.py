"""The verbs of ``python -m pangeo_hpc.run``, one module per area; main.py parses and dispatches."""
