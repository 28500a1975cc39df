"""B9's comparison of the answers of ``regrid`` and xarray-regrid (``b9_regrid.py``)."""

from __future__ import annotations

from typing import Any

from benchmarks.support.data import VAR

#: the answers agree where both are valid to this, relative (the data are ~300 K). Not
#: 1e-6: xarray-regrid weights a source row that overlaps a target row in part by the
#: overlap in degrees times the whole row's sin(lat) difference (``apply_spherical_correction``),
#: where ``regrid`` takes the sin(lat) difference of the overlap itself (exact); on a
#: 1-year run that differs by 7.5e-6 relative (2e-3 K). Missing values: both give the
#: mean over the valid overlapping area and a missing cell where none is valid (CDO's
#: ``remapcon``; xarray-regrid's ``skipna=True, nan_threshold=1.0``), and both time means
#: skip missing days.
TOLERANCE = 2e-5


def agreement(ours: Any, other: Any) -> dict[str, Any]:
    """How our answer and xarray-regrid's compare: the largest difference where both are
    valid (everywhere and away from the polar rows), and the cells valid in one only."""
    import numpy as np

    a = ours[VAR] if hasattr(ours, "data_vars") else ours
    b = other.sortby("lat").sortby("lon")
    a = a.sortby("lat").sortby("lon")
    av, bv = np.asarray(a.values, "f8"), np.asarray(b.values, "f8")
    if av.shape != bv.shape:
        return {"shape_ours": av.shape, "shape_theirs": bv.shape, "met": False}
    both = np.isfinite(av) & np.isfinite(bv)
    diff = np.where(both, np.abs(av - bv), 0.0)
    lat = np.asarray(a["lat"].values)
    inner = (np.abs(lat) < 85)[:, None] & both
    worst = np.unravel_index(int(np.argmax(diff)), diff.shape)
    out = {
        "tolerance_relative": TOLERANCE,
        "max_abs_diff_K": float(diff.max()),
        "max_abs_diff_within_85_K": float(np.where(inner, diff, 0.0).max()),
        "max_rel_diff": float((diff / np.maximum(np.abs(bv), 1e-30))[both].max()),
        "where_max": {"lat": float(lat[worst[0]]), "lon": float(a["lon"].values[worst[1]])},
        "valid_both": int(both.sum()),
        "valid_ours_only": int((np.isfinite(av) & ~np.isfinite(bv)).sum()),
        "valid_theirs_only": int((~np.isfinite(av) & np.isfinite(bv)).sum()),
        "cells": int(av.size),
    }
    out["met"] = bool(out["max_rel_diff"] <= TOLERANCE)
    return out
