"""Tokenizer, recursive-descent parser and checks of the TileLang seed syntax.

    def NAME(T: [D, ...], ...) -> OUT: [D, ...] { OUT[i, ...] (+=|=) expr ... }
    tiling: {i: 16, ...}
    memory: {T: L1|DDR, ...}

Errors carry the line and column of the offending token.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Node = dict[str, Any]
Section = tuple["Token", list[tuple["Token", "Token"]]]

IR_VERSION = 1
MEMORY_SPACES = ("L1", "DDR")
SECTIONS = ("tiling", "memory")
TOKEN_RE = re.compile(
    r"(?P<ws>[ \t\r]+)|(?P<nl>\n)|(?P<comment>#[^\n]*)|(?P<num>\d+(?:\.\d+)?)"
    r"|(?P<name>[A-Za-z_]\w*)|(?P<op>->|\+=|[-+*/()\[\]{}:,=])"
)


class TileLangError(Exception):
    def __init__(self, message: str, line: int, col: int, source: str = "<input>") -> None:
        super().__init__(f"{source}:{line}:{col}: error: {message}")
        self.message, self.line, self.col, self.source = message, line, col, source


@dataclass(frozen=True)
class Token:
    kind: str
    text: str
    line: int
    col: int


def tokenize(text: str, source: str) -> list[Token]:
    tokens, pos, line, line_start = [], 0, 1, 0
    while pos < len(text):
        match = TOKEN_RE.match(text, pos)
        if not match:
            raise TileLangError(f"unexpected character {text[pos]!r}", line, pos - line_start + 1, source)
        kind = match.lastgroup or ""
        if kind == "nl":
            line, line_start = line + 1, match.end()
        elif kind not in ("ws", "comment"):
            tokens.append(Token(kind, match.group(), line, pos - line_start + 1))
        pos = match.end()
    tokens.append(Token("eof", "end of file", line, pos - line_start + 1))
    return tokens


class Parser:
    def __init__(self, text: str, source: str) -> None:
        self.source = source
        self.tokens = tokenize(text, source)
        self.pos = 0

    def error(self, message: str, token: Token | None = None) -> TileLangError:
        token = token or self.peek()
        return TileLangError(message, token.line, token.col, self.source)

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def next(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def expect(self, text: str) -> Token:
        token = self.peek()
        if token.text != text or token.kind == "eof":
            raise self.error(f"expected '{text}', found '{token.text}'")
        return self.next()

    def name(self, what: str) -> Token:
        token = self.peek()
        if token.kind != "name":
            raise self.error(f"expected {what}, found '{token.text}'")
        return self.next()

    def shape(self) -> list[str]:
        self.expect("[")
        dims = [self.name("a dimension name").text]
        while self.peek().text == ",":
            self.next()
            dims.append(self.name("a dimension name").text)
        self.expect("]")
        return dims

    def access(self) -> dict[str, Any]:
        tensor = self.name("a tensor name")
        self.expect("[")
        index = [self.name("an index variable")]
        while self.peek().text == ",":
            self.next()
            index.append(self.name("an index variable"))
        self.expect("]")
        return {"tensor": tensor, "index": index}

    def factor(self) -> dict[str, Any]:
        token = self.peek()
        if token.kind == "num":
            self.next()
            return {"const": float(token.text)}
        if token.text == "(":
            self.next()
            inner = self.expr()
            self.expect(")")
            return inner
        if token.kind == "name":
            return {"access": self.access()}
        raise self.error(f"expected a tensor access, a number or '(', found '{token.text}'")

    def binary(self, operators: tuple[str, ...], operand: Callable[[], Node]) -> Node:
        node = operand()
        while self.peek().text in operators:
            op = self.next().text
            node = {"op": op, "lhs": node, "rhs": operand()}
        return node

    def term(self) -> dict[str, Any]:
        return self.binary(("*", "/"), self.factor)

    def expr(self) -> dict[str, Any]:
        return self.binary(("+", "-"), self.term)

    def section(self) -> tuple[Token, list[tuple[Token, Token]]]:
        header = self.name("a section name (tiling or memory)")
        if header.text not in SECTIONS:
            raise self.error(f"unknown section '{header.text}' (expected one of: {', '.join(SECTIONS)})", header)
        self.expect(":")
        self.expect("{")
        entries = []
        while self.peek().text != "}":
            key = self.name("a name")
            self.expect(":")
            value = self.next()
            if value.kind not in ("name", "num"):
                raise self.error(f"expected a value, found '{value.text}'", value)
            entries.append((key, value))
            if self.peek().text != ",":
                break
            self.next()
        self.expect("}")
        return header, entries

    def program(self) -> dict[str, Any]:
        keyword = self.peek()
        if keyword.text != "def":
            raise self.error(f"expected 'def', found '{keyword.text}'")
        self.next()
        kernel = self.name("a kernel name").text
        self.expect("(")
        params: list[tuple[Token, list[str]]] = []
        while self.peek().text != ")":
            pname = self.name("a parameter name")
            self.expect(":")
            params.append((pname, self.shape()))
            if self.peek().text != ",":
                break
            self.next()
        self.expect(")")
        self.expect("->")
        out_name = self.name("the output tensor name")
        self.expect(":")
        out_shape = self.shape()
        self.expect("{")
        body = []
        while self.peek().text != "}":
            if self.peek().kind == "eof":
                raise self.error("unterminated kernel body: expected '}'")
            target = self.access()
            op = self.peek()
            if op.text not in ("+=", "="):
                raise self.error(f"expected '+=' or '=', found '{op.text}'")
            self.next()
            body.append((target, op.text, self.expr()))
        self.expect("}")
        sections: dict[str, tuple[Token, list[tuple[Token, Token]]]] = {}
        while self.peek().kind != "eof":
            header, entries = self.section()
            if header.text in sections:
                raise self.error(f"section '{header.text}' given twice", header)
            sections[header.text] = (header, entries)
        return Checker(self).check(kernel, params, (out_name, out_shape), body, sections)


class Checker:
    """Semantic checks: tensors declared, ranks match, index variables bound consistently."""

    def __init__(self, parser: Parser) -> None:
        self.parser = parser
        self.tensors: dict[str, list[str]] = {}
        self.loops: dict[str, str] = {}

    def bind(self, access: dict[str, Any]) -> dict[str, Any]:
        tensor: Token = access["tensor"]
        if tensor.text not in self.tensors:
            raise self.parser.error(f"unknown tensor '{tensor.text}'", tensor)
        shape = self.tensors[tensor.text]
        index: list[Token] = access["index"]
        if len(index) != len(shape):
            raise self.parser.error(
                f"'{tensor.text}' has {len(shape)} dimensions but is indexed with {len(index)}", tensor
            )
        for var, dim in zip(index, shape, strict=False):
            bound = self.loops.setdefault(var.text, dim)
            if bound != dim:
                raise self.parser.error(
                    f"index '{var.text}' ranges over {bound} elsewhere but over {dim} in '{tensor.text}'", var
                )
        return {"tensor": tensor.text, "index": [v.text for v in index]}

    def expression(self, node: dict[str, Any]) -> dict[str, Any]:
        if "access" in node:
            return {"access": self.bind(node["access"])}
        if "const" in node:
            return node
        return {"op": node["op"], "lhs": self.expression(node["lhs"]), "rhs": self.expression(node["rhs"])}

    @staticmethod
    def entries(sections: dict[str, Section], name: str) -> list[tuple[Token, Token]]:
        return sections[name][1] if name in sections else []

    def check(
        self,
        kernel: str,
        params: list[tuple[Token, list[str]]],
        output: tuple[Token, list[str]],
        body: list[tuple[Node, str, Node]],
        sections: dict[str, Section],
    ) -> Node:
        for pname, shape in params:
            if pname.text in self.tensors:
                raise self.parser.error(f"parameter '{pname.text}' declared twice", pname)
            self.tensors[pname.text] = shape
        out_name, out_shape = output
        if out_name.text in self.tensors:
            raise self.parser.error(f"output '{out_name.text}' is also a parameter", out_name)
        self.tensors[out_name.text] = out_shape
        if not body:
            raise self.parser.error("kernel body is empty")
        statements: list[Node] = []
        for target, op, rhs in body:
            if target["tensor"].text != out_name.text:
                raise self.parser.error(
                    f"only the output '{out_name.text}' can be assigned, not '{target['tensor'].text}'",
                    target["tensor"],
                )
            statements.append({"target": self.bind(target), "op": op, "value": self.expression(rhs)})
        output_vars = {v for s in statements for v in s["target"]["index"]}
        ir: dict[str, Any] = {
            "version": IR_VERSION,
            "kernel": kernel,
            "inputs": [{"name": p.text, "shape": s} for p, s in params],
            "output": {"name": out_name.text, "shape": out_shape},
            "loops": self.loops,
            "reductions": [v for v in self.loops if v not in output_vars],
            "body": statements,
            "tiling": {},
            "memory": {},
        }
        for key, value in self.entries(sections, "tiling"):
            if key.text not in self.loops:
                raise self.parser.error(
                    f"tiling names '{key.text}', which is not an index variable "
                    f"(index variables: {', '.join(self.loops)})",
                    key,
                )
            if value.kind != "num" or "." in value.text or int(value.text) <= 0:
                raise self.parser.error(f"tile size of '{key.text}' must be a positive integer", value)
            ir["tiling"][key.text] = int(value.text)
        for key, value in self.entries(sections, "memory"):
            if key.text not in self.tensors:
                raise self.parser.error(f"memory names '{key.text}', which is not a tensor", key)
            if value.text not in MEMORY_SPACES:
                raise self.parser.error(
                    f"unknown memory space '{value.text}' (expected one of: {', '.join(MEMORY_SPACES)})", value
                )
            ir["memory"][key.text] = value.text
        return ir


def parse(text: str, source: str = "<input>") -> dict[str, Any]:
    """Parse TileLang source into its IR (a JSON-serialisable dict)."""
    return Parser(text, source).program()


def parse_file(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    return parse(path.read_text(), str(path))
