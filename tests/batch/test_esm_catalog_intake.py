"""Our reading of an ESM collection catalog (``datasets: {catalog:, query:, by:}``, read
without intake-esm: pangeo_hpc/batch/chains/esm_catalog.py) selects exactly the files that
intake-esm's own ``esm_datastore(...).search(...)`` selects, grouped by ``by``, on a
catalog this test writes: single values, lists, a query column with missing values (a
string column, and an integer column that missing values make float), a query for the
missing value itself, wildcard patterns (intake-esm takes ``*``, ``?``, ``^``, ``$`` as a
regular expression), a ``by`` column with missing values; and both refuse a query
column the catalog lacks, and keep nothing for values no row has. One difference, on
purpose: an unquoted number (``version: 20190101``) matches its text here, where
intake-esm (whose columns are all text) wants it quoted."""

from __future__ import annotations

import json
import re
from pathlib import Path

import intake_esm  # the test extra: never skipped
import pandas as pd
import pytest

from pangeo_hpc.batch.chains.esm_catalog import catalog_datasets
from pangeo_hpc.errors import InputError

SOURCES = ("MODEL-A", "MODEL-B", "OTHER-C")


def rows() -> list[dict]:
    """Three sources x two experiments x two members x two variables; grid_label missing
    for one source's second member, version missing for every ssp585 row."""
    out = []
    for s in SOURCES:
        for e in ("historical", "ssp585"):
            for m in ("r1i1p1f1", "r2i1p1f1"):
                for v in ("tas", "pr"):
                    grid = None if (s == "MODEL-B" and m == "r2i1p1f1") else "gn"
                    version = None if e == "ssp585" else 20190101 + SOURCES.index(s)
                    path = f"{s}/{e}/{m}/{v}_Amon_{s}_{e}_{m}.nc"
                    out.append({
                        "activity_id": "CMIP", "source_id": s, "experiment_id": e,
                        "member_id": m, "table_id": "Amon", "variable_id": v,
                        "grid_label": grid, "version": version, "path": path,
                    })  # fmt: skip
    # a member without a name: the by column's missing value
    out.append({**out[0], "member_id": None, "path": "MODEL-A/historical/unnamed/tas.nc"})
    return out


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("esm-catalog")
    table = pd.DataFrame(rows()).astype({"version": "Int64"})  # 20190101, or empty
    table.to_csv(folder / "cat.csv", index=False)
    columns = ["activity_id", "source_id", "experiment_id", "member_id", "table_id",
               "variable_id", "grid_label", "version"]  # fmt: skip
    doc = {
        "esmcat_version": "0.1.0",
        "id": "test",
        "description": "written by tests/batch/test_esm_catalog_intake.py",
        "catalog_file": "cat.csv",
        "attributes": [{"column_name": c, "vocabulary": ""} for c in columns],
        "assets": {"column_name": "path", "format": "netcdf"},
        "aggregation_control": {
            "variable_column_name": "variable_id",
            "groupby_attrs": ["source_id", "experiment_id", "table_id"],
            "aggregations": [{"type": "union", "attribute_name": "variable_id"}],
        },
    }
    path = folder / "cat.json"
    path.write_text(json.dumps(doc))
    return path


def theirs(catalog: Path, query: dict, by: str) -> dict[str, list[str]]:
    """intake-esm's selection, grouped by ``by`` as we name datasets."""
    found = intake_esm.esm_datastore(str(catalog)).search(**query).df
    return {
        re.sub(r"\W", "_", str(key)): sorted(str(catalog.parent / p) for p in group["path"])
        for key, group in found.groupby(by, sort=True)
    }


def ours(catalog: Path, query: dict, by: str) -> dict[str, list[str]]:
    made = catalog_datasets({"catalog": str(catalog), "query": query, "by": by}, None, "here")
    return {name: ds["files"] for name, ds in made.items()}


QUERIES = {
    "single values": ({"variable_id": "tas", "experiment_id": "historical"}, "source_id"),
    "lists": (
        {
            "variable_id": "pr",
            "experiment_id": ["historical", "ssp585"],
            "source_id": ["MODEL-A", "OTHER-C"],
        },
        "source_id",
    ),
    "string column with missing values": ({"variable_id": "tas", "grid_label": "gn"}, "source_id"),
    "integer column with missing values": (
        {"variable_id": "tas", "version": ["20190101", "20190103"]},
        "member_id",
    ),
    "the missing value itself": ({"variable_id": "tas", "grid_label": None}, "experiment_id"),
    "a wildcard pattern": ({"variable_id": "tas", "source_id": "MODEL-*"}, "source_id"),
    "an anchored pattern": ({"variable_id": "tas", "source_id": "^OTHER"}, "experiment_id"),
    "by a column with missing values": (
        {"variable_id": "tas", "source_id": "MODEL-A"},
        "member_id",
    ),
}


@pytest.mark.parametrize("case", list(QUERIES))
def test_our_selection_is_intake_esms(catalog, case):
    query, by = QUERIES[case]
    expected = theirs(catalog, query, by)
    assert expected, "the query must select something for the comparison to count"
    assert ours(catalog, query, by) == expected


def test_a_query_column_the_catalog_lacks_is_refused_by_both(catalog):
    query = {"variable_id": "tas", "frequency": "mon"}
    with pytest.raises(ValueError, match="Column frequency not in columns"):
        intake_esm.esm_datastore(str(catalog)).search(**query)
    with pytest.raises(InputError, match=r"has no column\(s\) \['frequency'\]") as info:
        ours(catalog, query, "source_id")
    assert "\n" not in str(info.value)


def test_values_no_row_has_select_nothing_in_both(catalog):
    query = {"variable_id": "tas", "experiment_id": "ssp245"}
    assert intake_esm.esm_datastore(str(catalog)).search(**query).df.empty
    with pytest.raises(InputError, match=r"no row of catalog 'cat.json' matches query"):
        ours(catalog, query, "source_id")


def test_an_unquoted_number_selects_what_intake_esm_selects_for_its_text(catalog):
    query = {"variable_id": "tas", "version": 20190102}
    assert intake_esm.esm_datastore(str(catalog)).search(**query).df.empty  # text columns
    expected = theirs(catalog, {**query, "version": "20190102"}, "source_id")
    assert list(expected) == ["MODEL_B"]
    assert ours(catalog, query, "source_id") == expected


@pytest.fixture(scope="module")
def list_catalog(tmp_path_factory) -> Path:
    """A catalog whose ``variable_id`` cells are lists (one file, several variables), read
    by intake-esm with ``columns_with_iterables=["variable_id"]``."""
    folder = tmp_path_factory.mktemp("esm-list-catalog")
    held = {"MODEL-A": ["tas", "pr"], "MODEL-B": ["tas"], "OTHER-C": ["pr", "tasmax"]}
    table = pd.DataFrame([
        {"source_id": s, "experiment_id": e, "variable_id": str(v),
         "path": f"{s}/{e}/Amon_{s}_{e}.nc"}
        for s, v in held.items() for e in ("historical", "ssp585")
    ])  # fmt: skip
    table.to_csv(folder / "cat.csv", index=False)
    doc = {
        "esmcat_version": "0.1.0",
        "id": "lists",
        "description": "written by tests/batch/test_esm_catalog_intake.py",
        "catalog_file": "cat.csv",
        "attributes": [{"column_name": c, "vocabulary": ""} for c in table.columns[:-1]],
        "assets": {"column_name": "path", "format": "netcdf"},
        "aggregation_control": {
            "variable_column_name": "variable_id",
            "groupby_attrs": ["source_id", "experiment_id"],
            "aggregations": [{"type": "union", "attribute_name": "variable_id"}],
        },
    }
    (folder / "cat.json").write_text(json.dumps(doc))
    return folder / "cat.json"


LIST_QUERIES = {
    "a value some lists hold": ({"variable_id": "tas"}, "source_id"),
    "a value one list holds": ({"variable_id": "tasmax", "experiment_id": "ssp585"}, "source_id"),
    "a value that is a prefix of another": ({"variable_id": "tas"}, "experiment_id"),
}


@pytest.mark.parametrize("case", list(LIST_QUERIES))
def test_list_valued_columns_select_the_rows_holding_the_value_as_intake_esm(list_catalog, case):
    query, by = LIST_QUERIES[case]
    store = intake_esm.esm_datastore(str(list_catalog), columns_with_iterables=["variable_id"])
    try:
        found = store.search(**query).df
    except AttributeError:  # 2025.12.12 on pandas 3: ``.str.contains`` refuses list cells
        # intake-esm's own path for lists (its require_all_on): one row per item, then its
        # search on the unpacked table, back to the catalog's rows by path
        from intake_esm._search import search, unpack_iterable_column

        flat = unpack_iterable_column(store.df, "variable_id")
        lists = {k: v if isinstance(v, list) else [v] for k, v in query.items()}
        paths = set(search(df=flat, query=lists, columns_with_iterables=set())["path"])
        found = store.df[store.df["path"].isin(paths)]
    expected = {
        re.sub(r"\W", "_", str(key)): sorted(str(list_catalog.parent / p) for p in g["path"])
        for key, g in found.groupby(by, sort=True)
    }
    assert expected
    spec = {"catalog": str(list_catalog), "query": query, "by": by,
            "columns_with_iterables": ["variable_id"]}  # fmt: skip
    made = catalog_datasets(spec, None, "here")
    assert {name: ds["files"] for name, ds in made.items()} == expected
    assert {ds["variable"] for ds in made.values()} == {query["variable_id"]}


def test_list_valued_columns_refusals(list_catalog):
    spec = {"catalog": str(list_catalog), "by": "source_id"}
    # without columns_with_iterables, the text "['tas', 'pr']" is no match: say why
    with pytest.raises(InputError, match=r"columns_with_iterables: \['variable_id'\]") as info:
        catalog_datasets({**spec, "query": {"variable_id": "tas"}}, None, "here")
    assert "\n" not in str(info.value)
    iterable = {**spec, "columns_with_iterables": ["variable_id"]}
    with pytest.raises(InputError, match=r"holds variables \['pr', 'tas'\] .* query one"):
        catalog_datasets({**iterable, "query": {"experiment_id": "historical"}}, None, "here")
    with pytest.raises(InputError, match="by: variable_id is a column of lists"):
        catalog_datasets({**iterable, "by": "variable_id", "query": {}}, None, "here")
    with pytest.raises(InputError, match="cell 'historical' of the catalog is not a list"):
        catalog_datasets({**iterable, "columns_with_iterables": ["experiment_id"],
                          "query": {"experiment_id": "historical"}}, None, "here")  # fmt: skip
