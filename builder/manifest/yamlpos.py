"""YAML loaded together with the position of every node, to locate errors by field path.

Reading is bounded: a file over 1 MB, nesting deeper than 50 levels, or aliases that expand
to more than 100,000 nodes (an "alias bomb") is refused with one located line instead of
hanging or exhausting the stack.
"""

from __future__ import annotations

import pathlib
from typing import Any

import yaml

from builder.model.errors import LocatedProblem, ManifestError

Path = tuple[str | int, ...]
MAX_BYTES = 1_000_000
MAX_DEPTH = 50
MAX_NODES = 100_000
# libyaml's loader when PyYAML has it (it keeps node positions too); it is many times faster.
FastSafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class TooComplex(yaml.YAMLError):
    def __init__(self, message: str, node: yaml.Node) -> None:
        super().__init__(message)
        self.message, self.node = message, node


def _expanded_size(node: yaml.Node, depth: int, sizes: dict[int, int]) -> int:
    """Nodes the document has once aliases are expanded (memoised, so a bomb is counted, not walked)."""
    if id(node) in sizes:
        return sizes[id(node)]
    if depth > MAX_DEPTH:
        raise TooComplex(f"is nested more than {MAX_DEPTH} levels deep", node)
    children: list[yaml.Node] = []
    if isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    size = 1 + sum(_expanded_size(child, depth + 1, sizes) for child in children)
    if size > MAX_NODES:
        raise TooComplex(f"expands to more than {MAX_NODES} values (repeated YAML aliases?)", node)
    sizes[id(node)] = size
    return size


def field_path(loc: Path) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class PositionedYaml:
    def __init__(self, text: str, filename: str) -> None:
        self.filename = filename
        loader = FastSafeLoader(text)
        try:
            node = loader.get_single_node()
            if node is not None:
                _expanded_size(node, 0, {})
            self.data: Any = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
        self.root = node
        if node is not None:
            self._check_duplicates(node, ())

    def _check_duplicates(self, node: yaml.Node, loc: Path) -> None:
        if isinstance(node, yaml.MappingNode):
            seen: set[str] = set()
            for key, value in node.value:
                name = str(key.value)
                if name in seen:
                    raise DuplicateKey(
                        LocatedProblem(
                            self.filename,
                            key.start_mark.line + 1,
                            key.start_mark.column + 1,
                            field_path((*loc, name)),
                            f"key '{name}' is given twice",
                        )
                    )
                seen.add(name)
                self._check_duplicates(value, (*loc, name))
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._check_duplicates(item, (*loc, i))

    def locate(
        self, loc: Path, message: str, key_position: bool = False, field_path_of: Path | None = None
    ) -> LocatedProblem:
        """The deepest node on loc that exists (its key's position if key_position)."""
        node = self.root
        mark = node.start_mark if node is not None else None
        for part in loc:
            child = None
            if isinstance(node, yaml.MappingNode):
                for key, value in node.value:
                    if str(key.value) == str(part):
                        child, mark = value, (key.start_mark if key_position else value.start_mark)
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                child = node.value[part]
                mark = child.start_mark
            if child is None:
                break
            node = child
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        return LocatedProblem(self.filename, line, col, field_path(field_path_of or loc), message)


class DuplicateKey(yaml.YAMLError):
    def __init__(self, located: LocatedProblem) -> None:
        super().__init__(str(located))
        self.located = located


def _located_yaml_error(err: yaml.YAMLError, filename: str) -> LocatedProblem:
    if isinstance(err, TooComplex):
        mark = err.node.start_mark
        return LocatedProblem(filename, mark.line + 1, mark.column + 1, "", f"the YAML {err.message}")
    mark = getattr(err, "problem_mark", None)
    line, col = (mark.line + 1, mark.column + 1) if mark else (0, 0)
    problem = getattr(err, "problem", None) or str(err)
    return LocatedProblem(filename, line, col, "", f"invalid YAML: {problem}")


def read(path: pathlib.Path) -> PositionedYaml:
    """A YAML file with positions; ManifestError (one located line) for anything unreadable."""
    name = str(path)
    try:
        if path.is_file() and path.stat().st_size > MAX_BYTES:
            raise ManifestError(
                [LocatedProblem(name, 0, 0, "", f"larger than {MAX_BYTES // 1_000_000} MB: not a manifest")]
            )
        text = path.read_bytes().decode("utf-8")
    except OSError as err:
        raise ManifestError([LocatedProblem(name, 0, 0, "", f"cannot read: {err.strerror}")]) from err
    except UnicodeDecodeError as err:
        raise ManifestError([LocatedProblem(name, 0, 0, "", f"not UTF-8 text (byte {err.start})")]) from err
    try:
        return PositionedYaml(text, name)
    except DuplicateKey as err:
        raise ManifestError([err.located]) from err
    except yaml.YAMLError as err:
        raise ManifestError([_located_yaml_error(err, name)]) from err
    except RecursionError as err:
        raise ManifestError([LocatedProblem(name, 0, 0, "", "the YAML is nested too deeply")]) from err
