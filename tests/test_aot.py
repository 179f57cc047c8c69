"""Ahead-of-time compilation of the family templates (no GPU needed).

Compiles in this process: pytest never imports triton in interpreter mode
(the interpreter runs in `teeny_ir.testing.kernel_harness` processes). The Triton cache
points at a temporary directory so every variant really compiles.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from teeny_ir.backend import aot
from teeny_ir.backend.triton_settings import COMPILE_PINS
from teeny_ir.kernels.conv1x1_gemm import tiles as conv1x1_tiles
from teeny_ir.kernels.depthwise_conv import tiles as depthwise_tiles
from teeny_ir.kernels.families import FAMILIES
from teeny_ir.kernels.implicit_gemm_conv import tiles as implicit_tiles
from teeny_ir.kernels.render import render as render_variant

# The two original families; every other family tests its own AOT in its test file.
CONSTEXPRS = {
    "elementwise": {"OP": "add", "BLOCK": 1024},
    "conv1x1_gemm": {
        "BLOCK_M": 64,
        "BLOCK_N": 64,
        "BLOCK_K": 16,
        "GROUP_M": 8,
        "ACTIVATION": "silu",
    },
}
STAGES = {"elementwise": 1, "conv1x1_gemm": 2}
ARCHS = (80, 90)


@pytest.fixture(scope="module", autouse=True)
def triton_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    saved = os.environ.get("TRITON_CACHE_DIR")
    os.environ["TRITON_CACHE_DIR"] = str(tmp_path_factory.mktemp("triton-cache"))
    yield
    if saved is None:
        del os.environ["TRITON_CACHE_DIR"]
    else:
        os.environ["TRITON_CACHE_DIR"] = saved


def render(family: str, directory: Path, constexprs: dict[str, int | str] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{family}_0.py"
    text = render_variant(FAMILIES[family], path.stem, constexprs or CONSTEXPRS[family])
    path.write_text(text)
    return path


def compile_family(family: str, arch: int, directory: Path) -> aot.CompiledVariant:
    return aot.compile_variant(
        render(family, directory),
        f"{family}_0",
        FAMILIES[family],
        CONSTEXPRS[family],
        arch=arch,
        num_warps=4,
        num_stages=STAGES[family],
    )


@pytest.fixture(scope="module")
def variants(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[tuple[str, int], aot.CompiledVariant]:
    directory = tmp_path_factory.mktemp("kernels")
    return {
        (family, arch): compile_family(family, arch, directory)
        for family in CONSTEXPRS
        for arch in ARCHS
    }


def entry_parameters(ptx: str, name: str) -> list[str]:
    match = re.search(rf"\.entry\s+{name}\s*\((.*?)\)", ptx, re.DOTALL)
    assert match is not None, "no .entry in the PTX"
    return re.findall(r"\.param\s+\.\w+\s+(?:\.ptr\s+\S+\s+)?(?:\.align\s+\d+\s+)?(\w+)", match[1])


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", list(CONSTEXPRS))
def test_compiles_with_the_abi_signature(
    family: str, arch: int, variants: dict[tuple[str, int], aot.CompiledVariant]
) -> None:
    variant = variants[family, arch]
    assert (variant.arch, variant.name) == (arch, f"{family}_0")
    assert (variant.num_warps, variant.num_stages) == (4, STAGES[family])
    assert f".target sm_{arch}" in variant.ptx
    assert variant.cubin[:4] == b"\x7fELF"
    # The non-constexpr arguments in ABI order, then Triton's global and profile scratch.
    params = entry_parameters(variant.ptx, variant.name)
    assert len(params) == len(FAMILIES[family].args) + 2
    assert 0 <= variant.shared <= aot.SHARED_MEMORY_LIMITS[arch]
    aot.check_shared(variant)


def test_gemm_uses_tensor_cores(variants: dict[tuple[str, int], aot.CompiledVariant]) -> None:
    sm80 = variants["conv1x1_gemm", 80].ptx
    sm90 = variants["conv1x1_gemm", 90].ptx
    assert re.search(r"\bmma\.sync\.aligned\.\w+\.row\.col\.f32\.tf32\.tf32\.f32", sm80)
    assert "wgmma.mma_async" in sm90
    assert variants["conv1x1_gemm", 90].shared > 0


RESIDUAL_FAMILIES: dict[str, tuple[dict[str, int | str], tuple[int, int]]] = {
    "conv1x1_gemm": (CONSTEXPRS["conv1x1_gemm"], conv1x1_tiles.launch_config(64, 64)),
    "implicit_gemm_conv": (
        {"BLOCK_M": 128, "BLOCK_N": 16, "BLOCK_K": 32, "ACTIVATION": "silu"},
        implicit_tiles.launch_config(128, 16),
    ),
    "depthwise_conv": (
        {"BLOCK_P": 64, "BLOCK_C": 16, "BLOCK_T": 1, "ACTIVATION": "silu"},
        depthwise_tiles.launch_config(64, 16, 1),
    ),
}
"""The families with the shared epilogue's residual flag, each at YOLOv8n's tiles."""


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("family", list(RESIDUAL_FAMILIES))
def test_one_variant_serves_launches_with_and_without_a_residual(
    family: str, arch: int, tmp_path: Path
) -> None:
    """``HAS_RESIDUAL`` is the last non-constexpr argument, a runtime i32: the
    constexprs (what names a variant) have no residual flag, and the one cubin
    reads the flag and, under its branch, ``r`` and ``r_batch_stride``."""
    constexprs, (num_warps, num_stages) = RESIDUAL_FAMILIES[family]
    abi = FAMILIES[family].args
    assert [a.name for a in abi if a.kind == "dim"][-1] == "HAS_RESIDUAL"
    assert abi[-1].name == "HAS_RESIDUAL" and abi[-1].dtype == "i32"
    assert "HAS_RESIDUAL" not in {c.name for c in FAMILIES[family].constexprs}
    variant = aot.compile_variant(
        render(family, tmp_path, constexprs),
        f"{family}_0",
        FAMILIES[family],
        constexprs,
        arch=arch,
        num_warps=num_warps,
        num_stages=num_stages,
    )
    assert f".target sm_{arch}" in variant.ptx and variant.cubin[:4] == b"\x7fELF"
    aot.check_shared(variant)
    params = entry_parameters(variant.ptx, variant.name)
    assert len(params) == len(abi) + 2
    loaded = {int(i) for i in re.findall(rf"\[{variant.name}_param_(\d+)\]", variant.ptx)}
    names = {abi[i].name for i in loaded if i < len(abi)}
    assert {"HAS_RESIDUAL", "r", "r_batch_stride", "x", "y"} <= names


def test_shared_memory_over_the_limit_is_an_error(
    variants: dict[tuple[str, int], aot.CompiledVariant],
) -> None:
    variant = variants["conv1x1_gemm", 80]
    over = dataclasses.replace(variant, shared=aot.SHARED_MEMORY_LIMITS[80] + 1)
    with pytest.raises(aot.AotError, match=r"166913 bytes .* sm_80 allows 166912"):
        aot.check_shared(over)
    with pytest.raises(aot.AotError, match="no shared memory limit known for sm_75"):
        aot.check_shared(dataclasses.replace(variant, arch=75))


def test_large_tiles_exceed_the_sm86_limit(tmp_path: Path) -> None:
    """128x128x64 fp32 tiles with 3 stages (Triton buffers 2 in shared memory)
    need 128 KiB: fine on sm_80, too much on sm_86."""
    constexprs = {
        "BLOCK_M": 128,
        "BLOCK_N": 128,
        "BLOCK_K": 64,
        "GROUP_M": 8,
        "ACTIVATION": "none",
    }
    variant = aot.compile_variant(
        render("conv1x1_gemm", tmp_path, constexprs),
        "conv1x1_gemm_0",
        FAMILIES["conv1x1_gemm"],
        constexprs,
        arch=86,
        num_warps=8,
        num_stages=3,
    )
    assert aot.SHARED_MEMORY_LIMITS[86] < variant.shared <= aot.SHARED_MEMORY_LIMITS[80]
    assert variant.shared > aot.SHARED_MEMORY_LIMITS[86]
    with pytest.raises(aot.AotError, match="sm_86 allows 101376"):
        aot.check_shared(variant)


def test_output_does_not_depend_on_the_file_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Line info would embed the kernel file's path; compile_variant turns it off
    unless the user chose otherwise."""
    monkeypatch.setenv("TRITON_ALWAYS_COMPILE", "1")
    for name in COMPILE_PINS:
        monkeypatch.delenv(name, raising=False)
    first = compile_family("elementwise", 80, (tmp_path / "a").resolve())
    assert {name: os.environ[name] for name in COMPILE_PINS} == COMPILE_PINS
    assert str(tmp_path) not in first.ptx
    second = compile_family("elementwise", 80, (tmp_path / "b" / "deeper").resolve())
    assert first.cubin_sha256 == second.cubin_sha256
    assert first.ptx == second.ptx


def test_rejects_mismatched_constexprs_and_names(tmp_path: Path) -> None:
    family = FAMILIES["elementwise"]
    path = render("elementwise", tmp_path)
    with pytest.raises(aot.AotError, match="missing constexpr 'BLOCK'"):
        aot.compile_variant(path, "elementwise_0", family, {"OP": "silu"}, 80, 4, 1)
    with pytest.raises(aot.AotError, match="defines no 'other_name'"):
        aot.compile_variant(path, "other_name", family, CONSTEXPRS["elementwise"], 80, 4, 1)
    gemm = render("conv1x1_gemm", tmp_path)
    with pytest.raises(aot.AotError, match="family 'elementwise' expects"):
        aot.compile_variant(gemm, "conv1x1_gemm_0", family, CONSTEXPRS["elementwise"], 80, 4, 1)
