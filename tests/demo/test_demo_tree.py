"""A demo tree holds several variables: one manifest, shared settings, months kept."""

from __future__ import annotations

import json

import pytest

from pangeo_hpc.cli.main import main
from pangeo_hpc.demo import DemoSpec, generate, read_manifest, variables
from pangeo_hpc.errors import InputError

SST = "sea_surface_temperature"
T2M = "air_temperature_at_2_metres"
PRECIP = "precipitation_amount_1hour_Accumulation"
U10, V10 = "eastward_wind_at_10_metres", "northward_wind_at_10_metres"


def _spec(start, end, names, **kw):
    return DemoSpec(resolution=10.0, start=start, end=end, variables=names, **kw)


def test_variables_join_an_sst_tree_with_one_manifest(tmp_path):
    sst = generate(tmp_path, _spec("2000-01", "2001-12", SST), workers=1)
    mtimes = [p.stat().st_mtime_ns for p in sst]
    # as `make demo` does: daily SST for years, hourly precipitation for one of them
    pr = generate(tmp_path, _spec("2001-01", "2001-12", PRECIP), workers=1)
    assert [p.parts[-4:] for p in pr[:2]] == [
        ("2001", "01", "data", f"{PRECIP}.nc"),
        ("2001", "02", "data", f"{PRECIP}.nc"),
    ]
    assert all(p.is_file() for p in pr) and len(pr) == 12
    generate(tmp_path, _spec("2000-06", "2000-07", f"{T2M},{SST}"), workers=1)
    assert [p.stat().st_mtime_ns for p in sst] == mtimes  # months already there are kept
    doc = json.loads((tmp_path / "demo-manifest.json").read_text())
    assert list(doc["variables"]) == [SST, T2M, PRECIP]
    assert doc["variables"][SST] == {
        "units": "K",
        "periods": [["2000-01", "2001-12"], ["2000-06", "2000-07"]],
    }
    assert doc["variables"][PRECIP] == {"units": "m", "periods": [["2001-01", "2001-12"]]}
    assert doc["variables"][T2M]["periods"] == [["2000-06", "2000-07"]]
    assert doc["settings"]["resolution"] == 10.0 and doc["settings"]["t2m_trend_land"] == 0.35
    assert "variables" not in doc["settings"] and "start" not in doc["settings"]
    # one set of settings for every variable
    with pytest.raises(InputError, match="other settings.*another out=, or pass overwrite=True"):
        generate(tmp_path, _spec("2000-01", "2000-01", U10, seed=1), workers=1)
    with pytest.raises(InputError, match="other settings"):
        generate(tmp_path, _spec("2000-01", "2000-01", T2M, t2m_trend_land=0.5), workers=1)


def test_a_tree_of_an_earlier_version_takes_new_variables(tmp_path):
    generate(tmp_path, _spec("2000-01", "2000-02", SST), workers=1)
    path = tmp_path / "demo-manifest.json"
    doc = json.loads(path.read_text())
    old_settings = {
        k: v for k, v in doc["settings"].items() if k not in ("t2m_trend_land", "t2m_trend_ocean")
    }
    old = {
        "written_by": doc["written_by"],
        "variable": SST,
        "settings": old_settings,
        "periods": [["2000-01", "2000-02"]],
    }
    path.write_text(json.dumps(old))
    assert read_manifest(path)["variables"] == {
        SST: {"units": "K", "periods": [["2000-01", "2000-02"]]}
    }
    generate(tmp_path, _spec("2000-02", "2000-02", f"{U10},{V10}"), workers=1)
    doc = json.loads(path.read_text())
    assert list(doc["variables"]) == [SST, U10, V10]
    assert doc["variables"][SST]["periods"] == [["2000-01", "2000-02"]]
    assert doc["settings"] == {**old_settings, "t2m_trend_land": 0.35, "t2m_trend_ocean": 0.15}


def test_cli_writes_all_or_a_list_of_variables(tmp_path, capsys):
    out = tmp_path / "tree"
    words = ["demo-data", "--out", str(out), "--resolution", "10", "--workers", "1"]
    assert main([*words, "--start", "2001-01", "--end", "2001-01", "--variables", "all"]) == 0
    assert "5 monthly files" in capsys.readouterr().out
    assert sorted(p.stem for p in out.glob("2001/01/data/*.nc")) == sorted(variables())
    words += ["--start", "2001-02", "--end", "2001-02", "--variables", f"{V10},{T2M}"]
    assert main(words) == 0
    assert sorted(p.stem for p in out.glob("2001/02/data/*.nc")) == [T2M, V10]
    assert main([*words[:-1], "t2m"]) != 0
    assert "demo variables t2m unknown: give 'all' or some of" in capsys.readouterr().err


def test_cli_help_names_every_variable(capsys):
    assert main(["demo-data", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    for name in variables():
        assert name in text
