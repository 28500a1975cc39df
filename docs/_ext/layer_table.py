"""The architecture page's layer table, read from ``pyproject.toml``'s import-linter contracts.

The contracts are the enforced statement of the layers (``make lint`` runs
``lint-imports``); this renders them, top layer first, with each layer's comment in the
contract and the summary of each package's or module's own docstring, then the modules
of each package. It is the only place the layers are written out for readers.
"""

from __future__ import annotations

import ast
import re
import tomllib
from pathlib import Path

_ENTRY = re.compile(r'^\s*"(?P<layer>[^"]+)",?\s*(?:#\s*(?P<comment>.*))?$')


def contracts(pyproject: Path) -> list[dict]:
    """The ``layers`` contracts, each with the comment written beside each layer.

    Parameters
    ----------
    pyproject : Path
        The project's ``pyproject.toml``.

    Returns
    -------
    list of dict
        Each contract's ``id``, ``name``, ``containers`` and ``layers``: a list of
        ``(layer, comment)``, top first.
    """
    text = pyproject.read_text()
    out = []
    for contract in tomllib.loads(text)["tool"]["importlinter"]["contracts"]:
        if contract["type"] != "layers":
            continue
        block = text[text.index(f'id = "{contract["id"]}"') :]
        block = block[block.index("layers = [") :]
        block = block[: block.index("\n]")]
        comments = {}
        for line in block.splitlines()[1:]:
            m = _ENTRY.match(line)
            if m:
                comments[m["layer"]] = (m["comment"] or "").strip()
        layers = [(layer, comments.get(layer, "")) for layer in contract["layers"]]
        out.append({**contract, "layers": layers})
    return out


def docstring(path: Path, *, paragraph: bool = True) -> str:
    """The first paragraph (or sentence) of a module's docstring, on one line.

    Parameters
    ----------
    path : Path
        A module's ``.py`` file (a package's ``__init__.py``).
    paragraph : bool
        The first paragraph; False: its first sentence only.

    Returns
    -------
    str
        MyST inline text, roles converted.
    """
    from recipe_table import myst

    doc = ast.get_docstring(ast.parse(path.read_text())) or ""
    first = doc.split("\n\n")[0]
    if not paragraph:
        m = re.search(r"^(.*?[.:])(\s|$)", " ".join(first.split()))
        first = m.group(1) if m else first
    return myst(first)


def _path_of(container: Path, name: str) -> Path:
    folder = container / name
    return folder / "__init__.py" if folder.is_dir() else container / f"{name}.py"


def markdown(root: Path) -> str:
    """The layer tables and the modules of each package, as MyST markdown.

    Parameters
    ----------
    root : Path
        The repository (``pyproject.toml`` and ``pangeo_hpc/``).

    Returns
    -------
    str
        The page fragment that ``docs/architecture.md`` includes.
    """
    out: list[str] = []
    packages: list[Path] = []
    for contract in contracts(root / "pyproject.toml"):
        for container in contract["containers"]:
            base = root / container.replace(".", "/")
            out += [
                f"### `{container}`: {contract['name']}",
                "",
                f"import-linter contract `{contract['id']}`; top layer first.",
                "",
                "| layer | module | in the contract | what it says of itself |",
                "|---|---|---|---|",
            ]
            for i, (layer, comment) in enumerate(contract["layers"], 1):
                for name in (n.strip() for n in layer.split("|")):
                    path = _path_of(base, name)
                    kind = "/" if path.name == "__init__.py" else ".py"
                    if path.name == "__init__.py":
                        packages.append(path.parent)
                    cell = comment.replace("|", r"\|")
                    out.append(f"| {i} | `{name}{kind}` | {cell} | {docstring(path)} |")
            out.append("")
    out += ["### The modules of each package", ""]
    for package in packages:
        dotted = ".".join(package.relative_to(root).parts)
        out += [f"`{dotted}`", ""]
        for module in sorted(package.glob("*.py")):
            if module.name == "__init__.py":
                continue
            out.append(f"- `{module.name}`: {docstring(module, paragraph=False)}")
        for sub in sorted(p for p in package.iterdir() if (p / "__init__.py").is_file()):
            out.append(f"- `{sub.name}/`: {docstring(sub / '__init__.py', paragraph=False)}")
        out.append("")
    return "\n".join(out)
