"""Lower a 2-D contraction (C[i, j] += A[i, k] * B[k, j]) to a tiled Ascend C kernel.

The tiled loop nest walks output tiles block by block (get_block_idx/get_block_num),
moves L1-placed input tiles with ascendc_copy_in, and spreads each tile's elements over
the block's lanes. Kernel metadata (tiling, memory, block dims, target) is stated in
`#pragma ascendc` lines, which ascendcc records in the object's ELF sections.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from importlib import resources
from pathlib import Path
from typing import Any

from tilelang import TileLangError, parse_file

DTYPES = {"float32": "float"}
DEFAULT_TILE = 16
ASCENDC_API_VERSION = 1
ELEMENT_BYTES = 4


class CompileError(Exception):
    pass


def load_target(name: str) -> dict[str, Any]:
    targets = resources.files("tilelang_compiler") / "targets"
    known = sorted(p.name[: -len(".json")] for p in targets.iterdir() if p.name.endswith(".json"))
    if name not in known:
        raise CompileError(f"unknown target '{name}' (known: {', '.join(known)})")
    data: dict[str, Any] = json.loads((targets / f"{name}.json").read_text())
    return data


def ascend_c_include(environ: Mapping[str, str]) -> str | None:
    """Where the Ascend C headers are: ASCEND_C_INCLUDE when set (an override), else the devkit inside
    the toolkit, $ASCEND_HOME_PATH/ascendc/include (set_env.sh sets ASCEND_HOME_PATH; CANN ships its
    Ascend C devkit inside the toolkit), else None."""
    if environ.get("ASCEND_C_INCLUDE"):
        return environ["ASCEND_C_INCLUDE"]
    if environ.get("ASCEND_HOME_PATH"):
        return f"{environ['ASCEND_HOME_PATH']}/ascendc/include"
    return None


def check_ascend_c(include_dir: str | None) -> Path:
    """The Ascend C header the generated code includes, checked for its API version."""
    if not include_dir:
        raise CompileError(
            "neither ASCEND_C_INCLUDE nor ASCEND_HOME_PATH is set: source the toolkit's set_env.sh "
            "(the Ascend C headers are in $ASCEND_HOME_PATH/ascendc/include) or point ASCEND_C_INCLUDE at them"
        )
    header = Path(include_dir) / "ascendc" / "kernel_operator.h"
    if not header.is_file():
        raise CompileError(f"{include_dir} has no ascendc/kernel_operator.h: no Ascend C devkit there")
    match = re.search(r"#define\s+ASCENDC_API_VERSION\s+(\d+)", header.read_text())
    if not match or int(match.group(1)) != ASCENDC_API_VERSION:
        found = match.group(1) if match else "none"
        raise CompileError(f"{header}: Ascend C API version {found}, this compiler needs {ASCENDC_API_VERSION}")
    return header


def contraction(ir: dict[str, Any]) -> tuple[str, str, str, str, str, str]:
    """(A, B, C, i, j, k) of a C[i, j] += A[i, k] * B[k, j] kernel, or CompileError."""
    unsupported = CompileError(f"kernel '{ir['kernel']}': only C[i, j] += A[i, k] * B[k, j] contractions are supported")
    if len(ir["body"]) != 1:
        raise unsupported
    stmt = ir["body"][0]
    value = stmt["value"]
    if stmt["op"] != "+=" or value.get("op") != "*" or "access" not in value["lhs"] or "access" not in value["rhs"]:
        raise unsupported
    lhs, rhs, target = value["lhs"]["access"], value["rhs"]["access"], stmt["target"]
    if len(target["index"]) != 2 or len(ir["reductions"]) != 1:
        raise unsupported
    (i, j), k = target["index"], ir["reductions"][0]
    if lhs["index"] != [i, k] or rhs["index"] != [k, j]:
        raise unsupported
    return lhs["tensor"], rhs["tensor"], target["tensor"], i, j, k


def generate(ir: dict[str, Any], target: dict[str, Any], kernel_name: str, dtype: str, source: str) -> str:
    if dtype not in DTYPES:
        raise CompileError(f"unsupported dtype '{dtype}' (supported: {', '.join(DTYPES)})")
    ctype = DTYPES[dtype]
    a, b, c, i, j, k = contraction(ir)
    tiles = {v: ir["tiling"].get(v, DEFAULT_TILE) for v in (i, j, k)}
    memory = {t: ir["memory"].get(t, "DDR") for t in (a, b, c)}
    if memory[c] != "DDR":
        raise CompileError(f"output '{c}' must live in DDR, not {memory[c]}")
    l1_use = {a: tiles[i] * tiles[k] * ELEMENT_BYTES, b: tiles[k] * tiles[j] * ELEMENT_BYTES}
    l1_total = sum(n for t, n in l1_use.items() if memory[t] == "L1")
    if l1_total > target["l1_bytes"]:
        detail = ", ".join(f"{t}: {n}" for t, n in l1_use.items() if memory[t] == "L1")
        raise CompileError(
            f"tiling {{{i}: {tiles[i]}, {j}: {tiles[j]}, {k}: {tiles[k]}}} needs {l1_total} bytes of L1 "
            f"({detail}) but target {target['name']} has {target['l1_bytes']}: use smaller tiles"
        )
    lanes = tiles[i] * tiles[j]
    if lanes > target["max_lanes"]:
        raise CompileError(
            f"a {tiles[i]}x{tiles[j]} output tile needs {lanes} lanes; {target['name']} has {target['max_lanes']}"
        )
    dim_m, dim_n = ir["output"]["shape"]
    dim_k = ir["loops"][k]
    lda, ldb, ldc = (f"ld{t.lower()}" for t in (a, b, c))
    # Per input: tile shape, valid extent, origin in DDR and element expression.
    inputs = {
        a: ("TI", "TK", "rows_i", "cols_k", f"{a} + (size_t)i0 * {lda} + k0", lda, "ti", "kk"),
        b: ("TK", "TJ", "cols_k", "cols_j", f"{b} + (size_t)k0 * {ldb} + j0", ldb, "kk", "tj"),
    }
    decls, loads, elems = "", "", []
    for tensor, (rows, cols, valid_r, valid_c, origin, ld, row, col) in inputs.items():
        if memory[tensor] == "L1":
            buf = f"{tensor}_l1"
            decls += f"    __l1__ {ctype} {buf}[{rows} * {cols}];\n"
            loads += (
                f"            ascendc_copy_in({buf}, {cols}, {origin}, {ld}, {valid_r}, {valid_c}, {rows}, {cols});\n"
            )
            elems.append(f"{buf}[{row} * {cols} + {col}]")
        else:
            elems.append(f"({origin})[(size_t){row} * {ld} + {col}]")
    # Padded L1 tiles are zero outside the matrix; DDR operands must not be read there.
    guard = "" if memory[a] == memory[b] == "L1" else "if (i0 + ti < size_m && j0 + tj < size_n && kk < cols_k) "
    tiling_text = f"{i}={tiles[i]},{j}={tiles[j]},{k}={tiles[k]}"
    memory_text = ",".join(f"{t}={memory[t]}" for t in (a, b, c))
    return f"""\
/* Generated by tilelang-compiler from {source} (kernel '{ir["kernel"]}'), target {target["name"]}.
 * Do not edit: change the .tl source and regenerate. */
#include "ascendc/kernel_operator.h"

#pragma ascendc tile_config("{tiling_text}")
#pragma ascendc memory("{memory_text}")
#pragma ascendc block_dim({tiles[j]}, {tiles[i]}, 1)
#pragma ascendc target("{target["name"]}")

__global__ __aicore__ void {kernel_name}(__ddr__ const {ctype} *{a}, __ddr__ const {ctype} *{b}, __ddr__ {ctype} *{c},
    int32_t {dim_m}, int32_t {dim_n}, int32_t {dim_k}, int32_t {lda}, int32_t {ldb}, int32_t {ldc})
{{
    enum {{ TI = {tiles[i]}, TJ = {tiles[j]}, TK = {tiles[k]} }};
    const int32_t size_m = {dim_m}, size_n = {dim_n}, size_k = {dim_k};
{decls}    {ctype} acc[TI * TJ];
    const uint32_t tiles_i = (uint32_t)(size_m + TI - 1) / TI, tiles_j = (uint32_t)(size_n + TJ - 1) / TJ;
    const uint32_t lanes_x = get_lane_num_x(), lanes_y = get_lane_num_y();
    for (uint32_t t = get_block_idx(); t < tiles_i * tiles_j; t += get_block_num()) {{
        const int32_t i0 = (int32_t)(t / tiles_j) * TI, j0 = (int32_t)(t % tiles_j) * TJ;
        const int32_t rows_i = size_m - i0 < TI ? size_m - i0 : TI, cols_j = size_n - j0 < TJ ? size_n - j0 : TJ;
        for (int e = 0; e < TI * TJ; ++e)
            acc[e] = 0;
        for (int32_t k0 = 0; k0 < size_k; k0 += TK) {{
            const int32_t cols_k = size_k - k0 < TK ? size_k - k0 : TK;
            (void)cols_k;
{loads}            ascendc_sync();
            for (uint32_t ly = 0; ly < lanes_y; ++ly)
                for (uint32_t lx = 0; lx < lanes_x; ++lx)
                    for (int32_t ti = (int32_t)ly; ti < TI; ti += (int32_t)lanes_y)
                        for (int32_t tj = (int32_t)lx; tj < TJ; tj += (int32_t)lanes_x) {{
                            {ctype} sum = acc[ti * TJ + tj];
                            for (int32_t kk = 0; kk < TK; ++kk)
                                {guard}sum += {elems[0]} * {elems[1]};
                            acc[ti * TJ + tj] = sum;
                        }}
            ascendc_sync();
        }}
        ascendc_copy_out({c} + (size_t)i0 * {ldc} + j0, {ldc}, acc, TJ, rows_i, cols_j);
    }}
}}
"""


def compile_file(
    source: str | Path,
    output: str | Path,
    target_name: str = "910b",
    kernel_name: str | None = None,
    dtype: str = "float32",
    include_dir: str | None = None,
) -> Path:
    check_ascend_c(include_dir if include_dir is not None else ascend_c_include(os.environ))
    target = load_target(target_name)
    try:
        ir = parse_file(source)
    except TileLangError as err:
        raise CompileError(str(err)) from err
    output = Path(output)
    name = kernel_name or output.stem
    if not re.fullmatch(r"[A-Za-z_]\w*", name):
        raise CompileError(f"kernel name '{name}' is not a C identifier (pass --kernel-name)")
    output.write_text(generate(ir, target, name, dtype, Path(source).name))
    return output
