"""YOLOv8n (examples/yolov8n) compiles with teeny-inference and emit-triton and runs
in Triton's interpreter, matching the reference interpreter (which matches
ultralytics' model, tests/test_models.py). One batch size here (batch 3 and the
AOT build run in bench/yolov8n.py). The run is profiled (`teeny_ir.runtime.profile`):
one record per launch naming the graph ops it implements, and the outputs still
the reference's."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

import numpy as np
from safetensors.numpy import load_file

import teeny_ir
from dialects.graph import Graph
from teeny_ir import reference, runtime
from teeny_ir.driver import opt
from teeny_ir.testing import REDUCTION_TOL, assert_close

ROOT = Path(__file__).resolve().parent.parent
MODEL = ROOT / "examples" / "yolov8n" / "yolov8n.mlir"


def test_yolov8n_runs_compiled_in_the_interpreter(tmp_path: Path) -> None:
    out = tmp_path / "yolov8n"
    stderr = io.StringIO()
    pipeline = f"teeny-inference,emit-triton{{out-dir={out}}}"
    code = opt.run([str(MODEL), "-p", pipeline, "-o", "/dev/null"], io.BytesIO(), io.StringIO(), stderr)
    assert code == 0, stderr.getvalue()
    rng = np.random.default_rng(5)
    weights = {
        name: (value + 0.05 * rng.standard_normal(value.shape)).astype(np.float32)
        if not name.endswith("running_var")
        else value
        for name, value in load_file(ROOT / "examples" / "yolov8n" / "yolov8n.safetensors").items()
    }
    x = rng.standard_normal((1, 3, 64, 64)).astype(np.float32)
    executable = runtime.load(out)
    profile = runtime.Profile()
    got = executable.run([x], weights, profile=profile)
    want = reference.run(teeny_ir.parse_module(MODEL.read_text()), weights, [x])
    assert [g.shape for g in got] == [(1, 144, 8, 8), (1, 144, 4, 4), (1, 144, 2, 2)]
    assert_close(got, want, REDUCTION_TOL, dtype=np.float32)

    graph_ops = {op.name for op in Graph.operations}
    launches = executable.plan.launches
    assert [r.index for r in profile.records] == list(range(len(launches)))
    for record, launch in zip(profile.records, launches, strict=True):
        assert record.kernel == launch.kernel
        assert record.ops and record.ops == tuple(source.op for source in launch.sources)
        assert set(record.ops) <= graph_ops, record
        assert record.duration_ns > 0 and record.bytes_written > 0
    assert profile.records[0].start_ns == 0
    for before, after in itertools.pairwise(profile.records):
        assert before.end_ns <= after.start_ns
    assert sum(t.launches for t in profile.families()) == len(launches)
