"""The public API's docstrings are numpydoc, checked by numpydoc's own validation.

Public is what the API reference documents: ``docs/_ext/public_api.py`` (the package's
``__all__``, every recipe function and combine step, the packages that export a surface,
and the library function of each command-line verb). Each function and class among them
must pass these checks of :func:`numpydoc.validate.validate`:

* ``GL08`` a docstring, ``SS01`` a summary line;
* ``PR01`` every parameter documented, ``PR02`` no parameter documented that it lacks;
* ``RT01`` a Returns section when it returns something, ``YD01`` Yields when it yields.

A class whose parameters are its fields (a dataclass, a NamedTuple) may list them under
``Attributes`` instead of ``Parameters``; parameters whose names start with ``_`` are
internal (``Inputs._lazy``) and need no entry; a :class:`typing.Protocol` is never
called, so its signature is no parameter list.

Beyond the API reference, every public name of the package folders in :data:`FOLDERS`
(module-level functions and classes whose names do not start with ``_``, and the public
methods of those classes: :func:`tests.support.public_names.public_names`) passes the
same checks.
"""

from __future__ import annotations

import inspect
import sys
import types

import pytest
from numpydoc.docscrape import NumpyDocString
from numpydoc.validate import validate

from tests.support.paths import ROOT
from tests.support.public_names import public_names

sys.path.insert(0, str(ROOT / "docs" / "_ext"))
from public_api import objects

#: the numpydoc error codes enforced (see the module's docstring)
CODES = ("GL08", "SS01", "PR01", "PR02", "RT01", "YD01")


def _undocumented(obj: object) -> set[str]:
    """The parameters of ``obj`` that neither its Parameters nor (a class) its Attributes
    name, ``_internal`` ones left out."""
    if inspect.isclass(obj) and getattr(obj, "_is_protocol", False):
        return set()
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


def problems(obj: object) -> list[str]:
    """numpydoc's errors among :data:`CODES` for ``obj``, as ``CODE message`` lines."""
    name = f"{obj.__module__}.{obj.__qualname__}"
    out = []
    for code, message in validate(name)["errors"]:
        if code not in CODES:
            continue
        if code == "PR01":  # re-checked below: Attributes count for a class, _names do not
            missing = _undocumented(obj)
            if missing:
                out.append(f"PR01 parameters {sorted(missing)} not documented")
            continue
        out.append(f"{code} {message}")
    return out


PUBLIC = {f"{o.__module__}.{o.__qualname__}": o for o in objects().values()}

#: the package folders whose every public name is validated (``""``: ``pangeo_hpc/*.py``)
FOLDERS = [
    *("", "recipes", "io", "storage", "s3", "lab", "inputs"),
]


def folder_problems(folder: str) -> list[str]:
    """:func:`problems` of every public name of ``folder``, as ``name: CODE message`` lines."""
    return [f"{n}: {p}" for n, obj in public_names(folder).items() for p in problems(obj)]


def test_the_public_api_is_what_the_reference_lists():
    assert len(PUBLIC) > 80, sorted(PUBLIC)  # 93 names, some of them exported twice
    assert "pangeo_hpc.recipes.means.area_mean" in PUBLIC
    assert "pangeo_hpc.planning.plan.plan" in PUBLIC  # the verb plan's function


@pytest.mark.parametrize("name", sorted(PUBLIC))
def test_docstring(name):
    assert problems(PUBLIC[name]) == [], f"{name}: fix its docstring"


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


@pytest.mark.parametrize("folder", FOLDERS)
def test_every_public_name_of_a_folder(folder):
    assert folder_problems(folder) == [], f"pangeo_hpc/{folder}: fix these docstrings"


def test_the_folder_walk_finds_functions_classes_and_methods():
    """Module-level names where they are defined, public methods, no ``_`` names."""
    found = public_names("recipes")
    assert "pangeo_hpc.recipes.means.time_mean" in found
    assert "pangeo_hpc.recipes.aggregations.Aggregation.combine" in found
    assert "pangeo_hpc.recipes.regrid_weights.Weights.from_arrays" in found  # a classmethod
    assert not [n for n in found if n.rsplit(".", 1)[1].startswith("_")]
    assert "pangeo_hpc.recipes.time_mean" not in found  # re-exported, checked where defined
    assert "pangeo_hpc.errors.InputError" in public_names("")


def test_a_folder_with_an_undocumented_parameter_fails(monkeypatch):
    """The folder check is not vacuous: a public function of ``recipes`` with a parameter
    its docstring leaves out is named, with that parameter."""
    from pangeo_hpc.recipes import units

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
    assert folder_problems("recipes") == [
        "pangeo_hpc.recipes.units.spell: PR01 parameters ['extra'] not documented"
    ]
