"""YAML loaded together with the position of every node, to locate errors by field path."""

from __future__ import annotations

from typing import Any

import yaml

from builder.model.errors import Located

Path = tuple[str | int, ...]


def field_path(loc: Path) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


class PositionedYaml:
    def __init__(self, text: str, filename: str) -> None:
        self.filename = filename
        loader = yaml.SafeLoader(text)
        try:
            node = loader.get_single_node()
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
                        Located(
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

    def locate(self, loc: Path, message: str, key_position: bool = False, field_path_of: Path | None = None) -> Located:
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
        return Located(self.filename, line, col, field_path(field_path_of or loc), message)


class DuplicateKey(yaml.YAMLError):
    def __init__(self, located: Located) -> None:
        super().__init__(str(located))
        self.located = located
