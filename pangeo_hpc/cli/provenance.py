"""Verb ``provenance``: what a result was made of, and whether that still holds."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pangeo_hpc.cli.common import Verb, add_s3_args, s3_options_from
from pangeo_hpc.errors import InputError


def _args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "result",
        help="a result folder (results/RECIPE) or its summary.json, or an s3:// --out",
    )
    p.add_argument("--files", action="store_true", help="list every input file and its stamp")
    p.add_argument("--json", action="store_true", help="print the record as JSON")
    add_s3_args(p)


def _load(where: str, s3: object = None) -> dict:
    from pangeo_hpc.s3.options import is_s3

    if is_s3(where):  # the run its manifest names, checked (io.results)
        from pangeo_hpc.io.results import result_summary

        return _record(result_summary(where, s3), where)  # type: ignore[arg-type]
    path = Path(where)
    summary = path / "summary.json" if path.is_dir() else path
    try:
        doc = json.loads(summary.read_text())
    except FileNotFoundError:
        raise InputError(
            f"result {where!r} has no summary.json: give a result folder a run wrote "
            "(results/RECIPE, or its --out)"
        ) from None
    except (OSError, ValueError) as exc:
        raise InputError(
            f"{str(summary)!r} cannot be read as JSON ({exc}): give a result's summary.json"
        ) from None
    return _record(doc, str(summary))


def _record(doc: object, summary: str) -> dict:
    prov = doc.get("provenance") if isinstance(doc, dict) else None
    if not isinstance(prov, dict):
        raise InputError(
            f"{summary!r} has no provenance record (written by pangeo-hpc before it "
            "kept one): run the recipe again"
        )
    return prov


def _step(name: str, options: dict) -> str:
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in options.items())})"


def _provenance(a: argparse.Namespace) -> int:
    from pangeo_hpc.batch.pipeline.provenance import check

    prov = _load(a.result, s3_options_from(a, a.result))
    if a.json:
        print(json.dumps(prov, indent=1))
        return 0
    now = check(prov)
    files = prov["inputs"]["files"]
    print(f"command: {prov['command']}")
    digest = prov["inputs"]["sha256"][:16]
    print(f"inputs: {len(files)} files under {prov['inputs']['root']} (sha256 {digest})")
    if prov["inputs"].get("store"):  # a Zarr store or Icechunk repository: which version
        store = prov["inputs"]["store"]
        version = f", snapshot {store['snapshot']}" if store.get("snapshot") else ""
        print(f"store: {store['kind']} {store['url']}{version}")
    for name, steps in prov["steps"].items():
        print(f"steps of {name}: {' -> '.join(_step(s, o) for s, o in steps)}")
    user = ", ".join(f"{n} {h[:12]}" for n, h in prov["code"]["user"].items())
    print(f"code: pangeo-hpc {prov['code']['pangeo-hpc'][:12]}" + (f"; {user}" if user else ""))
    states = prov.get("states")
    if states:
        print(f"states: {states['cached']} files' from the cache, {states['computed']} computed")
    if a.files:
        for doc in files:
            rest = ", ".join(f"{k}={v}" for k, v in doc.items() if k != "path")
            print(f"  {doc['path']}: {rest}")
    changed, gone = len(now["changed"]), len(now["missing"])
    same = not changed + gone
    line = "now: inputs " + ("the same" if same else f"{changed} changed, {gone} gone")
    if now["s3_not_checked"]:
        line += f" ({now['s3_not_checked']} S3 objects not checked)"
    if now.get("store_not_checked"):
        store = prov["inputs"].get("store") or {}
        at = f" at snapshot {store['snapshot']}" if store.get("snapshot") else ""
        line += (
            f" ({now['store_not_checked']} months of the store {store.get('url')}{at} not checked)"
        )
    code = "the same" if now["code_same"] else "changed (pangeo-hpc or its libraries)"
    print(f"{line}; code {code}")
    for path in now["changed"]:
        print(f"  changed since: {path}")
    for path in now["missing"]:
        print(f"  gone since: {path}")
    return 0


VERBS = [
    Verb(
        "provenance",
        "what a result was made of (inputs, steps, code) and whether that still holds",
        "The provenance record of a result (its summary.json): the command that reproduces "
        "it, its input files with their stamps, each result's steps with their options, the "
        "hashes of pangeo-hpc's code and of your functions, how many files' states came "
        "from the cache; then whether the input files and the code are still the same "
        "(local files are stamped again; S3 objects are not checked).",
        _args,
        _provenance,
    ),
]
