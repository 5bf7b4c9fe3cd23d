"""A griffe extension (mkdocs.yml loads it for mkdocstrings) that reads ppviz's docstrings as they
are written — reST-flavoured prose — into the Markdown mkdocstrings renders:

- Sphinx roles (``:func:`ppviz.simulate```, ``:class:`~ppviz.core.transfers.Transfers```) become
  code that links to the object's entry where the site has one, and stays plain code where it
  has not (autorefs' optional references);
- a paragraph ending in ``::`` introduces an indented literal block, which becomes a fenced
  Python block (``::`` becomes ``:``, as Sphinx prints it);
- the two numpy-style ``Parameters`` sections write a description where numpy puts a type
  (``devices : p, the number of pipeline ranks.``): the description moves below the name, so
  the type comes from the signature.
"""

from __future__ import annotations

import re
import textwrap

import griffe

ROLE = re.compile(r":(?:func|class|meth|attr|mod|data|exc|obj|const):`(~?)([^`<>]+)`")
PARAMETER = re.compile(r"^(\s*)([A-Za-z_][\w]*(?:\s*,\s*[A-Za-z_]\w*)*) : (.+)$")


class _Roles:
    def __init__(self, obj: griffe.Object):
        self.obj = obj

    def target(self, name: str) -> str:
        name = name.strip().rstrip("()")
        if name.startswith("ppviz."):
            return name
        head, _, rest = name.lstrip(".").partition(".")
        try:
            resolved = self.obj.resolve(head)
        except (griffe.NameResolutionError, AttributeError, KeyError):
            scope = self.obj if self.obj.is_module or self.obj.is_class else self.obj.parent
            return f"{scope.path}.{name}" if scope is not None else name
        return f"{resolved}.{rest}" if rest else resolved

    def __call__(self, match: re.Match) -> str:
        short, name = match.group(1), match.group(2)
        shown = name.rsplit(".", 1)[-1] if short else name
        return f'<autoref identifier="{self.target(name)}" optional><code>{shown}</code></autoref>'


def _literal_blocks(text: str) -> str:
    lines, out, i = text.split("\n"), [], 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            stripped = line.rstrip()[:-2].rstrip()
            out.append(stripped + (":" if stripped else ""))
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block = []
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
                block.append(lines[j])
                j += 1
            while block and not block[-1].strip():
                block.pop()
            if block:
                out += ["", "```python", *textwrap.dedent("\n".join(block)).split("\n"), "```", ""]
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _underline(line: str) -> bool:
    return bool(line.strip()) and set(line.strip()) == {"-"}


def _numpy_parameters(text: str) -> str:
    lines, out, k = text.split("\n"), [], 0
    while k < len(lines):
        if not (lines[k].strip() in ("Parameters", "Attributes") and k + 1 < len(lines) and _underline(lines[k + 1])):
            out.append(lines[k])
            k += 1
            continue
        indent = lines[k][:len(lines[k]) - len(lines[k].lstrip())]
        header = lines[k:k + 2]
        items: list[str] = []
        # a paragraph among the items, which a numpy section has no place for, goes before it
        notes: list[str] = []
        current = items
        k += 2
        while k < len(lines) and not (k + 1 < len(lines) and _underline(lines[k + 1])):
            line = lines[k]
            match = PARAMETER.match(line)
            if match and match.group(1) == indent:
                current = items
                items += [f"{indent}{match.group(2)}", f"{indent}    {match.group(3)}"]
            elif line.strip() and not line.startswith(indent + " "):
                current = notes
                notes.append(line)
            else:
                current.append(line)
            k += 1
        while items and not items[-1].strip():
            items.pop()
        while notes and not notes[-1].strip():
            notes.pop()
        out += (notes + [""] if notes else []) + header + items
    return "\n".join(out)


class ReadDocstrings(griffe.Extension):
    def on_package(self, *, pkg: griffe.Module, **kwargs) -> None:
        seen: set[int] = set()
        stack: list[griffe.Object] = [pkg]
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            if obj.docstring is not None:
                value = _numpy_parameters(obj.docstring.value)
                value = _literal_blocks(value)
                obj.docstring.value = ROLE.sub(_Roles(obj), value)
            stack += [member for member in obj.members.values() if not member.is_alias]
