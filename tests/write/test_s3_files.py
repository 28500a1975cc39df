"""Single-file outputs and the demo tree written to S3 (a real SeaweedFS): ``survey
--json/--plot``, ``inventory --json``, ``plan --plot`` and ``lab-config`` PUT one marked
object, never over a user's object; ``demo-data --out s3://`` is one run under the prefix
(a manifest last) that a recipe reads with ``--data``; ``stage`` refuses an S3 destination.

Wrong writers these tests were seen to fail on: an unconditional PUT after the second
check (test_an_object_put_between_the_check_and_the_put_is_never_overwritten: the user's
object was replaced), and a check that accepts any object carrying the mark, whatever its
kind (test_an_object_of_a_run_is_never_replaced_by_a_single_file).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import xarray as xr

from pangeo_hpc.cli import main as run
from pangeo_hpc.errors import InputError
from pangeo_hpc.write import targets
from tests.support.s3env import ensure_bucket

pytestmark = pytest.mark.s3

BUCKET = "files-out"
FILE = "2000/01/data/sea_surface_temperature.nc"


@pytest.fixture
def aws(aws_chain, monkeypatch, tmp_path):
    """The server through the AWS chain, its endpoint too (verbs without --endpoint-url
    find it there), the bucket, the CLI in this process; yields a boto3 client."""
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws_chain.endpoint_url)
    monkeypatch.setattr(run, "_interruptible", lambda: None)
    monkeypatch.chdir(tmp_path)
    return ensure_bucket(aws_chain, BUCKET)


@pytest.fixture
def data(demo_tree: Path, tmp_path: Path) -> Path:
    """One month of the demo tree (what survey reads)."""
    out = tmp_path / "data"
    (out / FILE).parent.mkdir(parents=True)
    (out / FILE).write_bytes((demo_tree / FILE).read_bytes())
    return out


#: verb -> argv with {out} (a local file or an s3:// key) and {data}; what is compared
#: between the local file and the object: the whole bytes, or (for measurements, which
#: differ from run to run) the JSON without its timings, or the figure's kind alone
SINGLE = {
    "survey --json": (["survey", "{data}", "--bytes", "1MB", "--json", "{out}"], "json", "s.json"),
    "survey --plot": (["survey", "{data}", "--bytes", "1MB", "--plot", "{out}"], "svg", "s.svg"),
    "inventory --json": (["inventory", f"s3://{BUCKET}/inv", "--json", "{out}"], "json", "i.json"),
    "plan --plot": (
        ["plan", "era5-sst-mean", "--size", "1GB", "--plot", "{out}"],
        "bytes",
        "p.png",
    ),
    "lab-config": (["lab-config", "--data", "{data}", "--out", "{out}"], "bytes", "lab.yaml"),
}
#: what differs between two runs of a measuring verb by design
TIMINGS = {"seconds", "mb_per_s", "rate", "elapsed", "first_byte", "mbps", "requests"}


def _argv(verb: str, out: str, data: Path) -> list[str]:
    return [a.format(out=out, data=data) for a in SINGLE[verb][0]]


def _without_timings(doc: object) -> object:
    if isinstance(doc, dict):
        return {k: _without_timings(v) for k, v in doc.items() if k not in TIMINGS}
    if isinstance(doc, list):
        return [_without_timings(v) for v in doc]
    return doc


def _get(client, key: str) -> tuple[bytes, dict[str, str], str]:
    got = client.get_object(Bucket=BUCKET, Key=key)
    return got["Body"].read(), got["Metadata"], got["ETag"]


@pytest.mark.parametrize("verb", SINGLE)
def test_a_single_file_lands_marked_and_equals_the_local_one(verb, aws, data, tmp_path, capsys):
    _, compare, name = SINGLE[verb]
    aws.put_object(Bucket=BUCKET, Key="inv/a/x.bin", Body=b"12345")  # what inventory counts
    where = verb.replace(" --", "-")  # a prefix per case
    key = f"reports/{where}/{name}"
    local = tmp_path / name
    for out in (str(local), f"s3://{BUCKET}/{key}"):
        code = run.main(_argv(verb, out, data))
        assert code == 0, capsys.readouterr().err
    body, meta, _ = _get(aws, key)
    assert meta["pangeo-hpc"].startswith("written-by pangeo-hpc") and meta["pangeo-hpc"].endswith(
        "kind file"
    )
    here = local.read_bytes()
    if compare == "bytes":
        assert body == here
    elif compare == "json":
        theirs, ours = json.loads(body), json.loads(here)
        assert theirs["written_by"].startswith("pangeo-hpc")
        assert _without_timings(theirs) == _without_timings(ours)
    else:
        assert body.startswith(b"<?xml") and b"written by pangeo-hpc" in body
    # the object is ours: a second run replaces it (no other object appears)
    assert run.main(_argv(verb, f"s3://{BUCKET}/{key}", data)) == 0, capsys.readouterr().err
    listed = aws.list_objects_v2(Bucket=BUCKET, Prefix=f"reports/{where}/")
    assert [o["Key"] for o in listed["Contents"]] == [key]


#: every verb that writes one file, with where it goes: calibrate's is checked before its
#: cluster starts
REFUSED = {
    **{verb: (argv, name) for verb, (argv, _, name) in SINGLE.items()},
    "calibrate": (["calibrate", "--data", "{data}", "--calibration", "{out}"], "c.json"),
}


@pytest.mark.parametrize("verb", REFUSED)
def test_a_users_object_at_the_key_is_refused_untouched(verb, aws, data, capsys):
    argv, name = REFUSED[verb]
    key = f"mine/{verb.replace(' --', '-')}/{name}"
    aws.put_object(Bucket=BUCKET, Key=key, Body=b"my own report")
    before = aws.head_object(Bucket=BUCKET, Key=key)["ETag"]
    capsys.readouterr()
    code = run.main([a.format(out=f"s3://{BUCKET}/{key}", data=data) for a in argv])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert f"s3://{BUCKET}/{key}" in lines[0] and "not written by pangeo-hpc" in lines[0]
    assert "nothing was changed" in lines[0]
    assert _get(aws, key)[::2] == (b"my own report", before)


@pytest.mark.slow
def test_calibrate_updates_an_object_plan_then_reads(aws, demo_tree, capsys):
    """calibrate merges its recipe into the calibration object there (a site's other
    recipe kept), PUTs it marked over its own object, and plan predicts from it."""
    from pangeo_hpc import config
    from pangeo_hpc.planning.calibrate import calibrate
    from pangeo_hpc.planning.calibration import load_calibration
    from pangeo_hpc.write.s3_guard import S3Target
    from pangeo_hpc.write.s3_outputs import put_marked

    url, key = f"s3://{BUCKET}/site/calibration.json", "site/calibration.json"
    earlier = dict(config.get("plan.fallback"), version=1, written_by="pangeo-hpc 0.9")
    earlier["recipes"] = {"my-recipe": earlier["recipes"]["era5-sst-trend"]}
    put_marked(S3Target.of(url), key, json.dumps(earlier).encode(), kind="file")
    cal = calibrate("era5-sst-mean", data=demo_tree, amount="16MB", repeat=1, tasks=200, path=url)
    body, meta, _ = _get(aws, key)
    doc = json.loads(body)
    assert meta["pangeo-hpc"].endswith("kind file") and doc["written_by"].startswith("pangeo-hpc")
    assert set(doc["recipes"]) == {"era5-sst-mean", "my-recipe"}
    kept = doc["recipes"]["my-recipe"]  # the figures read, and defaults of newer fields
    assert {k: kept[k] for k in earlier["recipes"]["my-recipe"]} == earlier["recipes"]["my-recipe"]
    assert load_calibration(url).recipe("era5-sst-mean") == cal.recipe("era5-sst-mean")
    assert cal.source == url
    capsys.readouterr()
    code = run.main(["plan", "my-recipe", "--size", "2GB", "--calibration", url, "--no-plot"])
    out = capsys.readouterr().out
    assert code == 0 and f"calibration: {url}, measured on" in out, out


def test_a_key_holding_objects_is_a_folder_and_refused(aws, data, capsys):
    aws.put_object(Bucket=BUCKET, Key="folder/p.png/inside.txt", Body=b"mine")
    code = run.main(_argv("plan --plot", f"s3://{BUCKET}/folder/p.png", data))
    err = capsys.readouterr().err
    assert code == 2 and "is a prefix holding objects (a folder)" in err, err
    listed = aws.list_objects_v2(Bucket=BUCKET, Prefix="folder/")["Contents"]
    assert [o["Key"] for o in listed] == ["folder/p.png/inside.txt"]


def test_an_object_of_a_run_is_never_replaced_by_a_single_file(aws, seaweedfs):
    """A run's object carries the mark too (kind result): a single file must not replace
    it, or the run's manifest would name an object that changed."""
    from pangeo_hpc.write.s3_guard import S3Target
    from pangeo_hpc.write.s3_outputs import put_marked

    url = f"s3://{BUCKET}/runs/r/run-1/plot.png"
    put_marked(S3Target.of(url), "runs/r/run-1/plot.png", b"a run's figure", kind="result")
    before = aws.head_object(Bucket=BUCKET, Key="runs/r/run-1/plot.png")["ETag"]
    with pytest.raises(InputError, match=r"is an object of a result output of pangeo-hpc"):
        targets.check_output_file(url, flag="--plot")
    assert aws.head_object(Bucket=BUCKET, Key="runs/r/run-1/plot.png")["ETag"] == before


def test_an_object_put_between_the_check_and_the_put_is_never_overwritten(aws, monkeypatch):
    """The key was free when checked; a user's upload lands just before the PUT (the
    second check is made to miss it, as a race would): the conditional PUT (If-None-Match)
    fails, the key is checked again, and the user's object is refused and kept."""
    url, key = f"s3://{BUCKET}/race/r.json", "race/r.json"
    real = targets.check_key
    calls = []

    def racing(dest, **kwargs):
        calls.append(dest.url)
        if len(calls) == 2:  # the check just before the PUT: the upload is not seen yet
            aws.put_object(Bucket=BUCKET, Key=key, Body=b"a user's upload")
            return None
        return real(dest, **kwargs)

    monkeypatch.setattr(targets, "check_key", racing)
    with (
        pytest.raises(InputError, match=r"exists and was not written by pangeo-hpc"),
        targets.output_file(url, flag="--json") as dest,
    ):
        dest.write_text('{"written_by": "pangeo-hpc"}\n')
    assert len(calls) == 3, calls
    assert _get(aws, key)[0] == b"a user's upload"


def test_stage_refuses_an_s3_destination_before_reading(aws, data, capsys):
    code = run.main(["stage", str(data), f"s3://{BUCKET}/staged"])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "is an S3 URL: stage copies to a local or Lustre folder" in lines[0]
    assert "Contents" not in aws.list_objects_v2(Bucket=BUCKET, Prefix="staged")


DEMO = ["--start", "2000-01", "--end", "2000-02", "--resolution", "10", "--workers", "1"]


@pytest.mark.slow
def test_demo_data_to_s3_is_one_run_a_recipe_reads(aws, seaweedfs, tmp_path, capsys):
    url = f"s3://{BUCKET}/demo"
    local = tmp_path / "demo"
    for out in (str(local), url):
        assert run.main(["demo-data", "--out", out, *DEMO]) == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    manifest = json.loads(_get(aws, "demo/summary.json")[0])
    location = manifest["location"]
    assert manifest["kind"] == "demo" and f"--data {location}" in printed, printed
    # every file of the local tree is an object of the run, marked, with the same data
    files = sorted(p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file())
    keys = sorted(k.removeprefix(f"demo/{manifest['run']}/") for k in manifest["objects"])
    assert keys == files
    for key in manifest["objects"]:
        assert _get(aws, key)[1]["pangeo-hpc"].endswith("kind demo")
    body = _get(aws, f"demo/{manifest['run']}/{FILE}")[0]
    (tmp_path / "got.nc").write_bytes(body)
    with xr.open_dataset(tmp_path / "got.nc") as there, xr.open_dataset(local / FILE) as here:
        xr.testing.assert_identical(there.load(), here.load())
    # a recipe reads the tree on S3 (the location printed) as it reads the local one
    answers = []
    for tree, out, *index in ((location, "from-s3", "--index", "never"), (str(local), "from-disk")):
        argv = ["era5-sst-mean", "--data", tree, "--start", "2000-01", "--end", "2000-02", *index]
        argv += ["--out", str(tmp_path / out), "--workers", "1", "--no-progress", "--no-cache"]
        assert run.main(argv) == 0, capsys.readouterr().err
        answers.append(json.loads((tmp_path / out / "summary.json").read_text())["answer"])
    assert answers[0] == answers[1]


def test_demo_data_refuses_a_prefix_holding_a_users_object(aws, capsys):
    aws.put_object(Bucket=BUCKET, Key="their-demo/notes.txt", Body=b"mine")
    before = aws.head_object(Bucket=BUCKET, Key="their-demo/notes.txt")["ETag"]
    code = run.main(["demo-data", "--out", f"s3://{BUCKET}/their-demo", *DEMO])
    lines = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(lines) == 1, lines
    assert "holds objects that pangeo-hpc did not write" in lines[0]
    listed = aws.list_objects_v2(Bucket=BUCKET, Prefix="their-demo/")["Contents"]
    assert [(o["Key"], o["ETag"]) for o in listed] == [("their-demo/notes.txt", before)]
