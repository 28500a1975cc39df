"""The configuration reference, read from the commented ``pangeo_hpc/pangeo-hpc.yaml``.

Each key's default and its comment (the inline one and the lines that continue it, a
comment block above a key prefacing it) become one row, with the environment variable
that overrides it; the site profiles and the plan's shipped figures, which are data,
are shown as the YAML they are. Nothing here is copied by hand.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: subtrees shown as YAML rather than as rows of keys
AS_YAML = ("pangeo-hpc.plan.fallback", "pangeo-hpc.profiles")

_KEY = re.compile(r"^(?P<indent> *)(?P<key>[A-Za-z0-9_.$-]+):(?P<rest>.*)$")


@dataclass
class Key:
    """One key of the file.

    Attributes
    ----------
    path : str
        Dotted, ``pangeo-hpc.data.root``.
    value : str
        The default as written (empty for a mapping).
    comment : list of str
        Its comment's lines.
    """

    path: str
    value: str
    comment: list[str] = field(default_factory=list)


def _split_comment(rest: str) -> tuple[str, str | None, int]:
    """(value, comment or None, the comment's column in ``rest``) of a key line's rest."""
    quote = None
    for i, ch in enumerate(rest):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or rest[i - 1] == " "):
            return rest[:i].strip(), rest[i + 1 :].strip(), i
    return rest.strip(), None, -1


def parse(path: Path) -> list[Key]:
    """Every key of the YAML file at ``path`` with its default and comment.

    Parameters
    ----------
    path : Path
        ``pangeo_hpc/pangeo-hpc.yaml``.

    Returns
    -------
    list of Key
        In the file's order, mappings included (with an empty ``value``).
    """
    keys: list[Key] = []
    stack: list[tuple[int, str]] = []
    preface: list[str] = []
    last: Key | None = None
    last_column = last_indent = -1
    flow_depth = 0
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if flow_depth:  # inside a { ... } spanning lines: part of the value above
            flow_depth += line.count("{") - line.count("}")
            continue
        if not stripped:
            continue
        if stripped.startswith("#"):
            column = line.index("#")
            if last is not None and last_column >= 0 and column > last_indent + 2:
                last.comment.append(stripped[1:].strip())
            else:
                preface.append(stripped[1:].strip())
                last = None
            continue
        m = _KEY.match(line)
        if not m:
            continue
        indent = len(m["indent"])
        while stack and stack[-1][0] >= indent:
            stack.pop()
        value, comment, at = _split_comment(m["rest"])
        dotted = ".".join([*(k for _, k in stack), m["key"]])
        key = Key(dotted, value, [*preface, *([comment] if comment else [])])
        keys.append(key)
        preface = []
        last, last_column, last_indent = key, (at if comment else -1), indent
        flow_depth = value.count("{") - value.count("}")
        stack.append((indent, m["key"]))
    return keys


def env_name(dotted: str) -> str:
    """The environment variable that overrides a key.

    Parameters
    ----------
    dotted : str
        ``pangeo-hpc.data.root``.

    Returns
    -------
    str
        ``DASK_PANGEO_HPC__DATA__ROOT`` (Dask reads ``__`` as one level down and treats
        ``_`` and ``-`` alike).
    """
    return "DASK_" + "__".join(p.upper().replace("-", "_") for p in dotted.split("."))


def _yaml_block(text: str, dotted: str) -> str:
    """The lines of the subtree ``dotted`` of the file's ``text``, as written."""
    lines = text.splitlines()
    parts = dotted.split(".")
    depth, start = 0, None
    for i, line in enumerate(lines):
        m = _KEY.match(line)
        if m and len(m["indent"]) == 2 * depth and m["key"] == parts[depth]:
            depth += 1
            if depth == len(parts):
                start = i
                break
    assert start is not None, dotted
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    return "\n".join(line[indent:] for line in lines[start:end]).rstrip()


def markdown(path: Path) -> str:
    """The configuration reference as MyST markdown, one section per group.

    Parameters
    ----------
    path : Path
        ``pangeo_hpc/pangeo-hpc.yaml``.

    Returns
    -------
    str
        The page fragment that ``docs/user-guide/configuration.md`` includes.
    """
    keys = parse(path)
    text = path.read_text()
    out: list[str] = []
    groups = [k for k in keys if k.path.count(".") == 1]
    for group in groups:
        out += [f"## `{group.path}`", ""]
        if group.comment:
            out += [" ".join(group.comment), ""]
        if group.path in AS_YAML or any(group.path.startswith(p + ".") for p in AS_YAML):
            out += ["```yaml", _yaml_block(text, group.path), "```", ""]
            continue
        out += ["| key | default | what | environment variable |", "|---|---|---|---|"]
        for key in keys:
            if not key.path.startswith(group.path + "."):
                continue
            if any(key.path == p for p in AS_YAML):
                out.append(f"| `{key.path}` | (below) | {_cell(' '.join(key.comment))} | |")
                continue
            if any(key.path.startswith(p + ".") for p in AS_YAML):
                continue
            value = f"`{key.value}`" if key.value else "(a mapping)"
            out.append(
                f"| `{key.path}` | {_cell(value)} | {_cell(' '.join(key.comment))} "
                f"| `{env_name(key.path)}` |"
            )
        out.append("")
        for special in AS_YAML:
            if special.startswith(group.path + "."):
                out += [f"`{special}`:", "", "```yaml", _yaml_block(text, special), "```", ""]
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
