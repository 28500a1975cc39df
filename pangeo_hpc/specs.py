"""Declarative recipe specs: YAML files naming a dataset, a period, a recipe and outputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from . import config
from .errors import InputError
from .periods import months

_FORMATS = ("netcdf", "zarr")


@dataclass(frozen=True)
class RecipeSpec:
    """One runnable recipe, as read from ``recipes/NAME.yaml``."""

    name: str
    description: str
    variable: str
    start: str
    end: str
    recipe: str
    options: dict[str, Any] = field(default_factory=dict)
    format: str = "netcdf"
    path: Path | None = None


def search_path() -> list[Path]:
    """Folders searched for specs: config ``pangeo-hpc.recipes.path``, then the shipped ones."""
    extra = [Path(p).expanduser() for p in config.get("recipes.path") or []]
    here = Path(__file__).resolve().parent
    return [*extra, here / "_specs", here.parent / "recipes"]


def available() -> dict[str, Path]:
    """Name -> file of every spec found, first folder winning."""
    found: dict[str, Path] = {}
    for folder in search_path():
        for p in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            found.setdefault(p.stem, p)
    return found


def load(name_or_path: str) -> RecipeSpec:
    """Load a spec by name (``era5-sst-mean``) or by path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        path = p
    else:
        known = available()
        if name_or_path not in known:
            raise InputError(
                f"unknown recipe {name_or_path!r}: choose one of {sorted(known)} "
                "(python -m pangeo_hpc.run list), or give the path of a YAML spec"
            )
        path = known[name_or_path]
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise InputError(f"recipe spec {str(path)!r} is not valid YAML: {exc}") from exc
    return _from_doc(doc, path)


def _from_doc(doc: Any, path: Path) -> RecipeSpec:
    from .workflows import WORKFLOWS

    if not isinstance(doc, dict):
        raise InputError(f"recipe spec {str(path)!r} must be a YAML mapping")
    dataset = doc.get("dataset") or {}
    outputs = doc.get("outputs") or {}
    missing = [k for k in ("name", "recipe") if k not in doc] + [
        f"dataset.{k}" for k in ("variable", "start", "end") if k not in dataset
    ]
    if missing:
        raise InputError(f"recipe spec {str(path)!r} lacks {', '.join(missing)}")
    if doc["recipe"] not in WORKFLOWS:
        raise InputError(
            f"recipe spec {str(path)!r} names recipe {doc['recipe']!r}: "
            f"use one of {sorted(WORKFLOWS)}"
        )
    fmt = outputs.get("format", "netcdf")
    if fmt not in _FORMATS:
        raise InputError(f"recipe spec {str(path)!r}: outputs.format {fmt!r} is not in {_FORMATS}")
    months(dataset["start"], dataset["end"])  # validates the period
    return RecipeSpec(
        name=str(doc["name"]),
        description=str(doc.get("description", "")).strip(),
        variable=str(dataset["variable"]),
        start=str(dataset["start"]),
        end=str(dataset["end"]),
        recipe=str(doc["recipe"]),
        options=dict(doc.get("options") or {}),
        format=fmt,
        path=path,
    )
