"""The launch plan: schema, semantic checks, deterministic writing.

The plan is `teeny_ir.testing.sample_plan`'s small hand-written one (a fused
1x1 conv + BN + SiLU, then a broadcasting add, from the real family templates),
which the runtime's and teeny-run's tests share; so are the edits its loader
must refuse (`REJECTIONS`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from teeny_ir.backend.plan import (
    SCHEMA,
    VERSION,
    Plan,
    PlanError,
    load_plan,
    plan_text,
)
from teeny_ir.testing.sample_plan import REJECTIONS, set_at, write_fixture

# --- tests ------------------------------------------------------------------


@pytest.fixture
def plan_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "plan"
    directory.mkdir()
    write_fixture(directory)
    return directory


def _edit(directory: Path, change: Callable[[dict[str, Any]], None]) -> None:
    path = directory / "plan.json"
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def test_fixture_loads_and_round_trips(plan_dir: Path) -> None:
    plan = load_plan(plan_dir)
    assert plan.outputs == ("t1", "t0")
    assert plan.params[1].derivation.kind == "bn_scale"
    assert Plan.from_json(plan.to_json()) == plan
    assert plan_text(plan) == (plan_dir / "plan.json").read_text()


def test_plan_text_is_sorted_indented_and_ends_with_a_newline(plan_dir: Path) -> None:
    text = (plan_dir / "plan.json").read_text()
    data = json.loads(text)
    assert text == json.dumps(data, sort_keys=True, indent=2) + "\n"
    assert data["format"] == "teeny-ir-plan" and data["version"] == VERSION
    assert "compiled" not in data["kernels"][0]


def test_schema_is_draft_2020_12_and_itself_valid() -> None:
    import jsonschema

    assert SCHEMA["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(SCHEMA)


@pytest.mark.parametrize(
    ("change", "message"), [r[1:] for r in REJECTIONS], ids=[r[0] for r in REJECTIONS]
)
def test_rejections(
    plan_dir: Path, change: Callable[[dict[str, Any]], None], message: str | None
) -> None:
    if message is None:  # both inputs must lose their batch dim for this rejection
        _edit(plan_dir, lambda d: [change(d), set_at("inputs/1/shape/0", 2)(d)])
        message = "no input has a 'B' dimension"
    else:
        _edit(plan_dir, change)
    with pytest.raises(PlanError) as info:
        load_plan(plan_dir)
    assert message in str(info.value)
    assert "\n" not in str(info.value)


def test_symlink_escaping_the_directory(plan_dir: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    source = plan_dir / "kernels" / "elementwise_0.py"
    outside.write_bytes(source.read_bytes())
    source.unlink()
    os.symlink(outside, source)
    with pytest.raises(PlanError, match="resolves outside the plan directory"):
        load_plan(plan_dir)


def test_unreadable_plans(tmp_path: Path) -> None:
    with pytest.raises(PlanError, match="cannot read"):
        load_plan(tmp_path)
    (tmp_path / "plan.json").write_text("{")
    with pytest.raises(PlanError, match="is not valid JSON"):
        load_plan(tmp_path)
    (tmp_path / "plan.json").write_text('{"version": NaN}')
    with pytest.raises(PlanError, match="'NaN' is not a number"):
        load_plan(tmp_path)
    (tmp_path / "plan.json").write_text("[]")
    with pytest.raises(PlanError, match="plan schema at \\(top level\\)"):
        load_plan(tmp_path)


def test_edited_kernel_source_is_rejected(plan_dir: Path) -> None:
    path = plan_dir / "kernels" / "conv1x1_gemm_0.py"
    path.write_text(path.read_text() + "\nimport os\n")
    with pytest.raises(PlanError, match=r"kernel 'conv1x1_gemm_0' file .* has sha256"):
        load_plan(plan_dir)


def test_write_plan_is_deterministic(tmp_path: Path) -> None:
    first, second = tmp_path / "a", tmp_path / "b"
    first.mkdir()
    second.mkdir()
    write_fixture(first)
    write_fixture(second)
    for name in ("plan.json", "kernels/conv1x1_gemm_0.py", "kernels/elementwise_0.py"):
        assert (first / name).read_bytes() == (second / name).read_bytes()
