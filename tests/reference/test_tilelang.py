import pytest
from tilelang import TileLangError, parse, parse_file

from tests.conftest import REFERENCE

MATMUL = REFERENCE / "tilelang" / "examples" / "matmul.tl"


def test_matmul_ir() -> None:
    ir = parse_file(MATMUL)
    assert ir["kernel"] == "matmul"
    assert ir["inputs"] == [{"name": "A", "shape": ["M", "K"]}, {"name": "B", "shape": ["K", "N"]}]
    assert ir["output"] == {"name": "C", "shape": ["M", "N"]}
    assert ir["loops"] == {"i": "M", "j": "N", "k": "K"}
    assert ir["reductions"] == ["k"]
    assert ir["tiling"] == {"i": 16, "j": 16, "k": 32}
    assert ir["memory"] == {"A": "L1", "B": "L1", "C": "DDR"}
    (stmt,) = ir["body"]
    assert stmt["target"] == {"tensor": "C", "index": ["i", "j"]}
    assert stmt["op"] == "+="
    assert stmt["value"]["op"] == "*"


GOOD = MATMUL.read_text()


@pytest.mark.parametrize(
    ("source", "line", "col", "message"),
    [
        (GOOD.replace("-> C", "$ C"), 2, 34, "unexpected character '$'"),
        (GOOD.replace("B: [K, N])", "B: [K, N]"), 2, 33, "expected ')', found '->'"),
        (GOOD.replace("A[i, k] *", "A[i, k, j] *"), 3, 16, "'A' has 2 dimensions but is indexed with 3"),
        (GOOD.replace("B[k, j]", "D[k, j]"), 3, 26, "unknown tensor 'D'"),
        (GOOD.replace("B[k, j]", "B[j, k]"), 3, 28, "index 'j' ranges over N elsewhere but over K in 'B'"),
        (GOOD.replace("k: 32}", "q: 32}"), 6, 24, "tiling names 'q', which is not an index variable"),
        (GOOD.replace("k: 32}", "k: 0}"), 6, 27, "tile size of 'k' must be a positive integer"),
        (GOOD.replace("B: L1", "B: L2"), 7, 20, "unknown memory space 'L2'"),
        (GOOD.replace("tiling:", "tilling:"), 6, 1, "unknown section 'tilling'"),
        (GOOD.replace("    C[i, j] +=", "    A[i, k] +="), 3, 5, "only the output 'C' can be assigned, not 'A'"),
        (GOOD.replace("}\n\ntiling", "\ntiling"), 5, 7, "expected '[', found ':'"),
        (GOOD.replace("}\n\ntiling", "}\n\ntiling: {i: 16}\ntiling"), 7, 1, "section 'tiling' given twice"),
    ],
)
def test_parse_errors_have_line_and_column(source: str, line: int, col: int, message: str) -> None:
    with pytest.raises(TileLangError) as info:
        parse(source, "matmul.tl")
    err = info.value
    assert (err.line, err.col) == (line, col), str(err)
    assert message in err.message
    assert str(err).startswith(f"matmul.tl:{line}:{col}: error: ")
