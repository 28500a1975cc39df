"""Recipes: YAML files naming a dataset, a period, the chain of recipe functions and outputs."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from pangeo_hpc import config
from pangeo_hpc.batch.chains import CHAINS
from pangeo_hpc.errors import InputError
from pangeo_hpc.inputs.periods import months

_FORMATS = ("netcdf", "zarr")


@dataclass(frozen=True)
class Recipe:
    """One runnable recipe, as read from ``recipes/NAME.yaml``: ``chain`` names the chain
    of recipe functions it runs (:data:`pangeo_hpc.batch.chains.CHAINS`)."""

    name: str
    description: str
    variable: str
    start: str
    end: str
    chain: str
    options: dict[str, Any] = field(default_factory=dict)
    format: str = "netcdf"
    path: Path | None = None


def search_path() -> list[Path]:
    """Folders searched for recipes: config ``pangeo-hpc.recipes.path``, then the shipped ones."""
    extra = [Path(p).expanduser() for p in config.get("recipes.path") or []]
    here = Path(__file__).resolve().parents[1]  # the package: pangeo_hpc/_specs in a wheel
    return [*extra, here / "_specs", here.parent / "recipes"]


def available() -> dict[str, Path]:
    """Name -> file of every recipe found, first folder winning."""
    found: dict[str, Path] = {}
    for folder in search_path():
        for p in sorted(folder.glob("*.yaml")) if folder.is_dir() else []:
            found.setdefault(p.stem, p)
    return found


def load(name_or_path: str) -> Recipe:
    """Load a recipe by name (``era5-sst-mean``) or by path to a YAML file."""
    p = Path(name_or_path)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        path = p
    else:
        known = available()
        if name_or_path not in known:
            raise InputError(
                f"unknown recipe {name_or_path!r}: choose one of {sorted(known)}, or give "
                "the path of a recipe's YAML file"
            )
        path = known[name_or_path]
    try:
        doc = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise InputError(f"recipe {str(path)!r} is not valid YAML: {exc}") from exc
    return _from_doc(doc, path)


def _from_doc(doc: Any, path: Path) -> Recipe:
    if not isinstance(doc, dict):
        raise InputError(f"recipe {str(path)!r} must be a YAML mapping")
    dataset = doc.get("dataset") or {}
    outputs = doc.get("outputs") or {}
    if "recipe" in doc and "chain" not in doc:  # the key's name until 0.1
        warnings.warn(
            f"recipe {str(path)!r}: the key 'recipe: {doc['recipe']}' is now called "
            f"'chain: {doc['recipe']}'; rename it",
            FutureWarning,
            stacklevel=3,
        )
        doc = {**doc, "chain": doc["recipe"]}
    missing = [k for k in ("name", "chain") if k not in doc] + [
        f"dataset.{k}" for k in ("variable", "start", "end") if k not in dataset
    ]
    if missing:
        raise InputError(f"recipe {str(path)!r} lacks {', '.join(missing)}")
    if doc["chain"] not in CHAINS:
        raise InputError(
            f"recipe {str(path)!r} names chain {doc['chain']!r}: use one of {sorted(CHAINS)}"
        )
    fmt = outputs.get("format", "netcdf")
    if fmt not in _FORMATS:
        raise InputError(f"recipe {str(path)!r}: outputs.format {fmt!r} is not in {_FORMATS}")
    months(dataset["start"], dataset["end"])  # validates the period
    return Recipe(
        name=str(doc["name"]),
        description=str(doc.get("description", "")).strip(),
        variable=str(dataset["variable"]),
        start=str(dataset["start"]),
        end=str(dataset["end"]),
        chain=str(doc["chain"]),
        options=dict(doc.get("options") or {}),
        format=fmt,
        path=path,
    )
