"""The generated parts of the docs (docs/_ext/): each holds what its source holds.

The configuration reference against the YAML parsed by PyYAML, the layer table against the
import-linter contract and the package's folders, the recipe-function table against the
registry, the gallery's copies against the notebooks, and the user guide's toctree
against the pages present. A fast check; ``make docs`` builds the whole site.
"""

from __future__ import annotations

import json
import sys
import tomllib

import yaml

from tests.support.paths import ROOT

sys.path.insert(0, str(ROOT / "docs" / "_ext"))

import config_keys
import gallery
import generated
import layer_table
import recipe_table

YAML = ROOT / "pangeo_hpc" / "pangeo-hpc.yaml"


def _leaves(tree: dict, prefix: str = "") -> dict[str, object]:
    out = {}
    for key, value in tree.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, dict) and value and dotted not in config_keys.AS_YAML:
            out.update(_leaves(value, dotted + "."))
        else:
            out[dotted] = value
    return out


def test_every_configuration_key_is_a_row_with_its_default():
    page = config_keys.markdown(YAML)
    leaves = _leaves(yaml.safe_load(YAML.read_text()))
    assert len(leaves) > 60
    for dotted, value in leaves.items():
        if dotted in config_keys.AS_YAML:
            assert f"`{dotted}`" in page, dotted  # shown as the YAML it is
            continue
        row = next((line for line in page.splitlines() if line.startswith(f"| `{dotted}` |")), None)
        assert row is not None, f"{dotted} has no row"
        default = row.split(" | ")[1].strip("`")
        assert yaml.safe_load(default) == value, (dotted, default, value)
        assert config_keys.env_name(dotted) in row


def test_a_comment_continued_on_the_next_lines_stays_with_its_key():
    keys = {k.path: " ".join(k.comment) for k in config_keys.parse(YAML)}
    assert keys["pangeo-hpc.cache.folder"].endswith("and the chain's steps and code")
    assert keys["pangeo-hpc.cache.max-size"] == "least recently used entries evicted beyond it"
    assert keys["pangeo-hpc.gateway.environment-option"].startswith("--cluster gateway")


def test_the_layer_table_is_the_contract_top_first_and_covers_every_module():
    contract = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in contract["contracts"] if c["id"] == "layers")["layers"]
    page = layer_table.markdown(ROOT)
    rows = [line for line in page.splitlines() if line.startswith("| ") and "`" in line]
    numbered = {}
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        if cells[0].isdigit():
            numbered.setdefault(cells[1].strip("`").rstrip("/").removesuffix(".py"), int(cells[0]))
    for i, layer in enumerate(layers, 1):
        for name in layer.split("|"):
            assert numbered[name.strip()] == i, (name, numbered.get(name.strip()), i)
    top = {p.stem for p in (ROOT / "pangeo_hpc").iterdir()}
    top = {n for n in top if (ROOT / "pangeo_hpc" / n / "__init__.py").is_file()}
    top |= {p.stem for p in (ROOT / "pangeo_hpc").glob("*.py") if p.stem != "__init__"}
    assert top <= set(numbered), top - set(numbered)


def test_every_recipe_function_has_a_row_naming_its_cdo_operator():
    from pangeo_hpc import recipes

    page = recipe_table.markdown()
    for name in [*recipes.__all__, *recipes.COMBINE]:
        row = next(line for line in page.splitlines() if f"{{func}}`{name} <" in line)
        assert "CDO" in row, f"{name}: its docstring's summary names no CDO operator"
    area = next(line for line in page.splitlines() if "`area_mean <" in line)
    assert "step by step" in area
    mean = next(line for line in page.splitlines() if "`time_mean <" in line)
    assert "reduction (state:" in mean


def test_the_gallery_sets_its_parameters_after_the_parameters_cell(tmp_path):
    notebook = ROOT / "notebooks" / "08-model-vs-era5.ipynb"
    copy = gallery.prepare(notebook)
    cells = copy["cells"]
    at = next(i for i, c in enumerate(cells) if "parameters" in c["metadata"].get("tags", []))
    assert cells[at + 1]["source"].endswith("END = '2009-12'")
    original = json.loads(notebook.read_text())["cells"]
    assert len(cells) == len(original) + 1
    warmup = gallery.prepare(ROOT / "notebooks" / "02-fsx-warmup.ipynb")
    assert warmup["metadata"]["mystnb"] == {"execution_mode": "off"}


def test_a_gallery_page_short_of_its_figures_is_named(tmp_path):
    """The check ``make docs`` runs after the build (an executed page with fewer images
    than its notebook draws fails it): pages built with MPLBACKEND=Agg lost their pyplot
    figures unnoticed. Images are ``<img`` tags, not any mention of "img"."""
    folder = tmp_path / "gallery"
    folder.mkdir()
    for prefix, expected in gallery.IMAGES.items():
        page = folder / f"{prefix}-some-notebook.html"
        page.write_text('<p class="img">x</p>' + '<img src="a.png"/>' * expected)
    assert gallery.missing_figures(tmp_path) == []
    page = folder / "04-some-notebook.html"
    page.write_text('<img src="a.png"/><div class="img"></div><imgx>')
    assert gallery.missing_figures(tmp_path) == [
        f"04-some-notebook.html: 1 images, expected at least {gallery.IMAGES['04']}"
    ]


def test_the_user_guide_lists_the_pages_that_exist(tmp_path):
    for page in ("recipes", "stores", "errors"):
        (tmp_path / f"{page}.md").write_text(f"# {page}\n")
    toctree = generated.user_guide_toctree(tmp_path)
    assert toctree.splitlines()[3:6] == ["recipes", "stores", "errors"]
    assert "explore" not in toctree and "regrid" not in toctree


def test_the_benchmarks_page_is_made_from_every_committed_result():
    """Every file of benchmarks/results/ goes into the page (a B9 row whose ``cache`` is
    ``memory`` stopped ``make docs`` once): each case named there appears in it."""
    import bench_page

    page = bench_page.markdown(ROOT)
    for path in sorted((ROOT / "benchmarks" / "results").glob("B[0-9]*.json")):
        case = json.loads(path.read_text()).get("case")
        if case and not path.stem.endswith("-quick"):
            assert case in page, f"{path.name}: case {case!r} is not on the benchmarks page"
