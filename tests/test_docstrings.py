"""The public API's docstrings are numpydoc, checked by numpydoc's own validation.

Public is what the API reference documents: ``docs/_ext/public_api.py`` (the package's
``__all__``, every recipe function and combine step, the packages that export a surface,
and the library function of each command-line verb). Each function and class among them
must pass these checks of :func:`numpydoc.validate.validate`:

* ``GL08`` a docstring, ``SS01`` a summary line;
* ``PR01`` every parameter documented, ``PR02`` no parameter documented that it lacks;
* ``RT01`` a Returns section when it returns something, ``YD01`` Yields when it yields;
* and, for the reference's objects only, ``EX01``: an Examples section.

A class whose parameters are its fields (a dataclass, a NamedTuple) may list them under
``Attributes`` instead of ``Parameters``; parameters whose names start with ``_`` are
internal (``Inputs._lazy``) and need no entry.

Beyond the reference, every public module-level function and class of the folders in
:data:`FOLDERS` (``tests/support/public_names.py`` finds them) passes the same checks: a
name used only inside its own module is made private instead.
"""

from __future__ import annotations

import ast
import inspect
import sys
import types

import pytest
from numpydoc.docscrape import NumpyDocString
from numpydoc.validate import validate

from tests.support.paths import ROOT
from tests.support.public_names import public_methods, public_names, public_object

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from public_api import objects

#: the numpydoc error codes enforced (see the module's docstring)
CODES = ("GL08", "SS01", "PR01", "PR02", "RT01", "YD01")
#: ... and for the objects of the API reference
REFERENCE_CODES = (*CODES, "EX01")


def _undocumented(obj: object) -> set[str]:
    """The parameters of ``obj`` that neither its Parameters nor (a class) its Attributes
    name, ``_internal`` ones left out."""
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        return set()  # a typing.Protocol is never called: (*args, **kwargs) is no parameter list
    sig = inspect.signature(obj)
    params = {
        ("*" if p.kind is p.VAR_POSITIONAL else "**" if p.kind is p.VAR_KEYWORD else "") + n
        for n, p in sig.parameters.items()
        if not n.startswith("_") and n != "self"
    }
    text = inspect.getdoc(obj) or ""
    documented = set()
    parsed = NumpyDocString(text)
    for section in ("Parameters", "Other Parameters", "Attributes"):
        for item in parsed[section]:
            for name in item.name.split(","):
                documented.add(name.strip().replace("\\*", "*"))
    return params - documented


def problems(obj: object, codes: tuple[str, ...] = CODES) -> list[str]:
    """numpydoc's errors among ``codes`` for ``obj``, as ``CODE message`` lines."""
    name = f"{obj.__module__}.{obj.__qualname__}"
    out = []
    for code, message in validate(name)["errors"]:
        if code not in codes:
            continue
        if code == "PR01":  # re-checked below: Attributes count for a class, _names do not
            missing = _undocumented(obj)
            if missing:
                out.append(f"PR01 parameters {sorted(missing)} not documented")
            continue
        out.append(f"{code} {message}")
    return out


PUBLIC = {f"{o.__module__}.{o.__qualname__}": o for o in objects().values()}


def test_the_public_api_is_what_the_reference_lists():
    assert len(PUBLIC) > 80, sorted(PUBLIC)  # 93 names, some of them exported twice
    assert "pangeo_hpc.recipes.means.area_mean" in PUBLIC
    assert "pangeo_hpc.planning.plan.plan" in PUBLIC  # the verb plan's function


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring(name):
    assert problems(PUBLIC[name], REFERENCE_CODES) == [], f"{name}: fix its docstring"


#: folders of pangeo_hpc/ whose every public module-level name is validated
FOLDERS = ["batch", "cli", "clusters", "demo", "inputs", "io", "lab", "planning", "recipes", "s3", "storage", "write"]  # fmt: skip
#: folders of pangeo_hpc/ whose public classes' public methods are validated as well
METHOD_FOLDERS = FOLDERS
#: folders whose public names and methods must also have an Examples section (EX01; each
#: runs in tests/test_examples.py)
EXAMPLE_FOLDERS: list[str] = FOLDERS  # every folder


def _codes(folder: str) -> tuple[str, ...]:
    return REFERENCE_CODES if folder in EXAMPLE_FOLDERS else CODES


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_public_name_of_a_folder_is_documented(folder):
    names = public_names(folder)
    assert names, f"pangeo_hpc/{folder}/ has no public name"
    bad = {name: problems(public_object(name), _codes(folder)) for name in names}
    bad = {name: found for name, found in bad.items() if found}
    assert bad == {}, f"{len(bad)} of {len(names)} public names of {folder}/: fix their docstrings"


@pytest.mark.parametrize("folder", METHOD_FOLDERS)
def test_every_public_method_of_a_folder_is_documented(folder):
    names = public_methods(folder)
    assert names, f"pangeo_hpc/{folder}/ has no public method"
    bad = {name: problems(public_object(name), _codes(folder)) for name in names}
    bad = {name: found for name, found in bad.items() if found}
    assert bad == {}, f"{len(bad)} of {len(names)} public methods of {folder}/: fix them"


def test_a_folder_walk_finds_an_undocumented_parameter(tmp_path, monkeypatch):
    """The folder walk is not vacuous: in a probe package, the public function whose second
    parameter is missing from its docstring is found and fails PR01 naming it, and so does
    a public class's method; the private function without any docstring and the property
    are not walked."""
    folder = tmp_path / "docprobe_pkg" / "sub"
    folder.mkdir(parents=True)
    (folder.parent / "__init__.py").write_text("")
    (folder / "__init__.py").write_text("")
    (folder / "mod.py").write_text(
        "def forgot(x, y):\n"
        '    """Add.\n\n    Parameters\n    ----------\n    x : int\n        One.\n\n'
        '    Returns\n    -------\n    int\n        The sum.\n    """\n'
        "    return x + y\n\n\n"
        "def _private(z):\n"
        "    return z\n\n\n"
        "class Box:\n"
        '    """A box."""\n\n'
        "    def put(self, item):\n"
        '        """Put ``item`` in."""\n\n'
        "    @property\n"
        "    def size(self):\n"
        "        return 0\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        names = public_names("sub", package="docprobe_pkg", root=tmp_path)
        assert names == ["docprobe_pkg.sub.mod.Box", "docprobe_pkg.sub.mod.forgot"]
        assert problems(public_object(names[0])) == []
        found = problems(public_object(names[1]))
        assert [p[:4] for p in found] == ["PR01"] and "'y'" in found[0], found
        methods = public_methods("sub", package="docprobe_pkg", root=tmp_path)
        assert methods == ["docprobe_pkg.sub.mod.Box.put"]
        found = problems(public_object(methods[0]))
        assert [p[:4] for p in found] == ["PR01"] and "'item'" in found[0], found
    finally:
        for name in [m for m in sys.modules if m.startswith("docprobe_pkg")]:
            del sys.modules[name]


def test_a_parameter_left_out_of_a_docstring_is_found(monkeypatch):
    """The check is not vacuous: ``time_mean`` with its parameter's entry cut out of its
    Parameters fails PR01, naming that parameter; and a function without Returns fails."""
    from pangeo_hpc.recipes import means

    original = means.time_mean
    doc = original.__doc__
    assert problems(original) == []
    entry = "    da : DataArray\n        Data with a time dimension (any CF name).\n"
    assert entry in doc
    cut = doc.replace(entry, "")

    def time_mean(*args, **kwargs):
        return original(*args, **kwargs)

    time_mean.__signature__ = inspect.signature(original)
    time_mean.__doc__ = cut
    time_mean.__module__ = means.__name__
    time_mean.__qualname__ = "time_mean"
    monkeypatch.setattr(means, "time_mean", time_mean)
    assert any(p.startswith("PR01") and "'da'" in p for p in problems(time_mean))

    module = types.ModuleType("pangeo_hpc._docstring_probe")

    def answer(x: int) -> int:
        """The answer.

        Parameters
        ----------
        x : int
            Anything.
        """
        return 42

    answer.__module__, answer.__qualname__ = module.__name__, "answer"
    module.answer = answer
    monkeypatch.setitem(sys.modules, module.__name__, module)
    assert [p[:4] for p in problems(answer)] == ["RT01"]


def _top_level_names() -> list[str]:
    """The public functions and classes of the package's top-level modules
    (``pangeo_hpc/*.py``: :func:`public_names` of ``""`` would walk every folder), and the
    public methods of those classes, as dotted names."""
    out = []
    for path in sorted((ROOT / "pangeo_hpc").glob("*.py")):
        module = "pangeo_hpc" if path.stem == "__init__" else f"pangeo_hpc.{path.stem}"
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            kinds = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            if not isinstance(node, kinds) or node.name.startswith("_"):
                continue
            out.append(f"{module}.{node.name}")
            if isinstance(node, ast.ClassDef):
                out += [
                    f"{module}.{node.name}.{item.name}"
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                    and not item.name.startswith("_")
                ]
    return out


def test_every_public_name_of_the_top_level_modules_is_documented():
    names = _top_level_names()
    assert "pangeo_hpc.errors.InputError" in names and "pangeo_hpc.config.get" in names
    bad = {name: problems(public_object(name), REFERENCE_CODES) for name in names}
    assert {name: found for name, found in bad.items() if found} == {}


def test_a_real_function_with_an_undocumented_parameter_fails_its_folder(monkeypatch):
    """On the package itself: ``recipes.units.spell`` given a parameter its docstring leaves
    out makes the check of ``recipes`` name exactly that parameter; a ``Protocol``'s
    ``(*args, **kwargs)`` is not taken for parameters."""
    from pangeo_hpc.recipes import folds, units

    def spell(q: object, extra: int = 0) -> str:
        """UDUNITS spelling of the units ``q``.

        Parameters
        ----------
        q : pint.Quantity
            Units.

        Returns
        -------
        str
            UDUNITS text.
        """
        return ""

    spell.__module__, spell.__qualname__ = units.__name__, "spell"
    monkeypatch.setattr(units, "spell", spell)
    found = {n: problems(public_object(n)) for n in public_names("recipes")}
    assert {n: f for n, f in found.items() if f} == {
        "pangeo_hpc.recipes.units.spell": ["PR01 parameters ['extra'] not documented"]
    }
    assert problems(folds.Aggregation) == []  # a Protocol
