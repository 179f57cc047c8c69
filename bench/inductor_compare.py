"""YOLOv8n through torch.compile (Inductor, CPU) and through teeny_ir, side by side.

One model for every row: ultralytics' ``DetectionModel("yolov8n.yaml")`` built
offline (``YOLO_OFFLINE=1``), random weights (PyTorch's initialisation after
``torch.manual_seed(0)``), eval mode, the Detect head in its export form (the
decoded ``(1, 84, 84)`` output, as ``yolo export`` sets it), a 64x64 input of
batch 1. Every measurement runs in a fresh process (``--worker``) that builds
the model, runs it eagerly once (the reference output; the call also fixes
Detect's anchors, as any first call does - without it Dynamo meets a
data-dependent scalar on the way and splits the model into 21 graphs), then
compiles and measures:

- ``inductor``: ``torch.compile(model)`` (Inductor, its C++ CPU backend), and
  ``inductor+freezing``: the same with ``torch._inductor.config.freezing`` on,
  Inductor's inference option: weights become constants, batch norms fold into
  the convolutions and the oneDNN weights are prepacked at compile time, the
  analogue of teeny_ir's weight-time BN fold. Compile time is the first call's
  wall time (Dynamo's trace, AOTAutograd, Inductor's lowering and the g++
  builds) minus a steady call (the fastest of 10 later ones: 4-21 ms here).
  The kernels are those defined in the output code
  (``torch._inductor.utils.run_and_get_code``: one module per graph, and the
  number of graphs is checked), the launches the calls in its ``call``: the
  generated kernels plus the library calls (``extern_kernels.*``, aten
  convolutions, and ``torch.ops.*``, oneDNN ones with freezing).
- ``teeny_ir (torch.export)``: `teeny_ir.frontend.torch.import_module` (static
  batch, as torch.compile's first compile specialises it), and ``teeny_ir
  (ONNX)``: ``torch.onnx.export(opset 17, dynamo=False)`` and
  `teeny_ir.frontend.onnx.import_onnx`. Compile time is the capture and import
  plus ``teeny-inference,emit-triton{out-dir=D archs=80,90}``, the pipeline
  ``bench/compile_cache.py`` times: the default (gpu) tile profile and AOT
  cubins for sm_80 and sm_90, so a cold compile includes every cubin.
  (``teeny-inference{profile=interpreter}`` with AOT archs is not usable here:
  its interpreter-sized tiles keep ptxas busy for over 15 minutes on one
  kernel. The gpu-profile plan is the one a GPU runs, and it is run here in
  Triton's interpreter for the error.) ``--profile``/``--archs`` change it.
  The kernels are the plan's ``kernels`` (variants), the launches its
  ``launches``; the new files in ``TEENY_CACHE_DIR`` (one per entry) show
  that a warm compile compiled nothing and the plan's sha256 that it wrote the
  same plan.

Both clocks start after the explicit imports (torch, ultralytics, teeny_ir and
its frontends; what either imports lazily while compiling is counted) and
after the eager call. Cold and warm: each system gets its own empty cache
folder. Cold is the first process on it (Inductor: ``TORCHINDUCTOR_CACHE_DIR``; teeny_ir:
``TEENY_CACHE_DIR``; ``TRITON_CACHE_DIR`` empty too), warm the best of
``--warm-runs`` more processes on the same folder, each checked to build
nothing. Inductor: no new g++ build (``.so``) in the folder, and the FX graph
and AOTAutograd caches hit, but Dynamo still traces; with freezing both caches
are bypassed ("Skipping graph with frozen constants": torch 2.13 caches no
frozen graph outside Meta), so a warm compile redoes everything but the g++
builds, which the folder still serves (it writes the output code again: its
text holds object addresses). teeny_ir: no new compile-cache entry (every
variant a hit) and the same plan bytes, but capture, import and the passes
still run.

Peak intermediate memory. teeny_ir: ``runtime.load(DIR).memory(1)["arena_bytes"]``,
the one arena that holds every buffer of a batch-1 run (outputs included; inputs
and parameters are not in it). Inductor: one steady call under
``torch.profiler.profile(profile_memory=True)``; its allocation and free events
(every allocation through PyTorch's CPU allocator, oneDNN's included), summed
in time order from the state before the call, give the peak of what the call
holds above its inputs and weights; the output, still held when the call
returns, is in it. Without freezing the peak is dominated by the per-call
channels-last copies of the convolution weights (Inductor re-lays them out on
every call). Eager PyTorch's peak by the same method is printed below the table.

Max abs error: each system's first output against the eager output (teeny_ir's
plan run by `teeny_ir.runtime` in Triton's interpreter, in the cold process).

Measured on 2026-12-03, 2-core shared machine (other jobs running, so the times
are noisy: three runs within the hour gave cold 83-106 s / 41-55 s / 29-87 s /
30-82 s and warm 5.1-8.4 s / 17-18 s / 3.7-7.2 s / 1.4-3.1 s; the counts,
memory and errors did not move), torch 2.13.0+cpu, ultralytics 8.4.190, triton
3.9.0, ``--warm-runs 3``, the last run; ratios are teeny_ir / ``inductor``:

    metric             inductor  inductor+freezing  teeny_ir (torch.export)  / inductor  teeny_ir (ONNX)  / inductor
    -----------------  --------  -----------------  -----------------------  ----------  ---------------  ----------
    cold compile         82.8 s             40.6 s                   28.9 s       0.35x           30.1 s       0.36x
    warm compile          8.4 s             18.4 s                    4.5 s       0.54x            1.6 s       0.19x
    kernels                  53                 18                       25       0.47x               25       0.47x
    launches                129                 83                       77       0.60x               77       0.60x
    peak intermediate  1254 KiB            144 KiB                   96 KiB       0.08x           96 KiB       0.08x
    max abs error       2.3e-05            2.3e-05                  1.5e-05       0.67x          1.5e-05       0.67x

The printed notes add: Inductor's launches are 65 generated-kernel calls + 64
aten convolutions (19 + 64 oneDNN ones with freezing); eager PyTorch's peak is
305 KiB; teeny_ir's 77 launches are 39 implicit_gemm_conv, 25 conv1x1_gemm, 4
fused_elementwise, 3 pool2d, 2 upsample_nearest2d, 2 concat, 1 transpose,
1 softmax, and its cold compile wrote 50 cache entries (25 variants x sm_80,
sm_90); every error is within the 1e-4 rule (4.8e-2 at max |output| 480).

The exit status is 1 when a warm run built anything, Inductor made more than
one graph, or an error is over the whole-model rule (``1e-4 * max(1, max|ref|)``).

Needs ultralytics and torch beside teeny_ir (kept out of the test suite):
``/tmp/ulvenv/bin/python bench/inductor_compare.py`` with ``pip install -e .``
in that venv; g++ for Inductor's C++ backend.

Usage: python bench/inductor_compare.py [--warm-runs 3] [--systems NAME ...]
       [--profile gpu] [--archs 80,90]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

SYSTEMS = ("inductor", "inductor+freezing", "teeny_ir (torch.export)", "teeny_ir (ONNX)")
"""The columns, in order; the first is the ratios' denominator."""
WORKER_SYSTEMS = {
    "inductor": "inductor",
    "inductor+freezing": "freezing",
    "teeny_ir (torch.export)": "teeny-export",
    "teeny_ir (ONNX)": "teeny-onnx",
}
RESULT = "inductor-compare-result: "
"""The prefix of the one stdout line where a worker reports its JSON."""
WORKER_TIMEOUT = 3600
STEADY_CALLS = 10
INPUT_SIZE = 64
TOLERANCE = 1e-4
"""The whole-model rule of docs/architecture.md: ``max|got-ref| <= 1e-4 * max(1, max|ref|)``."""


def build_model() -> tuple[Any, Any]:
    """YOLOv8n (random weights, seed 0, eval, Detect in export form) and a 64x64
    batch-1 input (seed 1)."""
    os.environ.setdefault("YOLO_OFFLINE", "1")
    import torch

    tasks = importlib.import_module("ultralytics.nn.tasks")  # untyped: Any
    torch.manual_seed(0)
    model = tasks.DetectionModel("yolov8n.yaml", verbose=False).eval()
    for module in model.modules():  # the Detect head's export form, as `yolo export` sets it
        if hasattr(module, "export"):
            module.export = True
        if hasattr(module, "format"):
            module.format = "onnx"
    generator = torch.Generator().manual_seed(1)
    return model, torch.rand(1, 3, INPUT_SIZE, INPUT_SIZE, generator=generator)


def first_output(result: Any) -> Any:
    return result[0] if isinstance(result, list | tuple) else result


def peak_bytes(call: Callable[[], Any]) -> int:
    """The most bytes that ``call`` holds at once above what was allocated before
    it: its CPU allocator events under the profiler, summed in time order."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        call()
    results: Any = prof.profiler.kineto_results if prof.profiler is not None else None
    if results is None:
        raise RuntimeError("the profiler recorded nothing")
    events = sorted(
        (event for event in results.events() if event.name() == "[memory]"),
        key=lambda event: event.start_ns(),
    )
    held = peak = 0
    for event in events:
        held += int(event.nbytes())
        peak = max(peak, held)
    return peak


KERNEL_DEF = re.compile(r"^(\w+) = async_compile\.\w+\(", re.MULTILINE)
LIBRARY_CALL = re.compile(r"\b(extern_kernels\.\w+|torch\.ops\.[\w.]+)\(")


def count_output_code(codes: list[str]) -> dict[str, int]:
    """Kernels defined and calls made in Inductor's output code (one module per
    graph): the generated kernels, their calls in ``call``, and the library calls."""
    kernels = generated = library = 0
    for code in codes:
        names = set(KERNEL_DEF.findall(code))
        kernels += len(names)
        body = code[code.index("    def call(self, args):") :]
        body = body[: body.index("\nrunner = Runner(") if "\nrunner = Runner(" in body else None]
        for line in body.splitlines():
            stripped = line.strip()
            if stripped.startswith("#"):
                continue
            called = re.match(r"(?:\w+ = )?(\w+)\(", stripped)
            if called and called.group(1) in names:
                generated += 1
            library += len(LIBRARY_CALL.findall(stripped))
    return {"kernels": kernels, "generated_calls": generated, "library_calls": library}


def inductor_worker(freezing: bool) -> dict[str, Any]:
    """Compile with Inductor in this (fresh) process and measure."""
    import torch
    import torch._inductor.config as inductor_config
    from torch._dynamo.utils import counters
    from torch._inductor.utils import run_and_get_code

    model, x = build_model()
    with torch.no_grad():
        want = first_output(model(x))
        eager_peak = peak_bytes(lambda: model(x))
    inductor_config.freezing = freezing
    compiled: Callable[..., Any] = torch.compile(model)
    cache = Path(os.environ["TORCHINDUCTOR_CACHE_DIR"])
    files = cache_files(cache)
    with torch.no_grad():
        start = time.perf_counter()
        got, codes = run_and_get_code(compiled, x)
        first = time.perf_counter() - start
        steady = []
        for _ in range(STEADY_CALLS):
            start = time.perf_counter()
            compiled(x)
            steady.append(time.perf_counter() - start)
        peak = peak_bytes(lambda: compiled(x))
    counts = count_output_code(codes)
    hits = {
        name: int(count)
        for group in ("inductor", "aot_autograd")
        for name, count in counters[group].items()
        if "cache" in name
    }
    return {
        "compile_s": first - min(steady),
        "first_call_s": first,
        "steady_call_s": min(steady),
        "graphs": len(codes),
        "kernels": counts["kernels"],
        "launches": counts["generated_calls"] + counts["library_calls"],
        "launch_detail": f"{counts['generated_calls']} generated + "
        f"{counts['library_calls']} library",
        "peak_bytes": peak,
        "eager_peak_bytes": eager_peak,
        "max_abs_error": float((first_output(got) - want).abs().max()),
        "max_abs_output": float(want.abs().max()),
        "cache": hits,
        "new_cache_files": by_kind(cache_files(cache) - files),
    }


def cache_files(directory: Path) -> set[Path]:
    """The files in a cache ``directory``: teeny_ir's compile-cache entries (one
    file each), or Inductor's output code, kernel sources and their g++ builds,
    FX graph and AOTAutograd entries and locks."""
    return {p for p in directory.rglob("*") if p.is_file()} if directory.is_dir() else set()


def by_kind(files: set[Path]) -> dict[str, int]:
    """``files`` counted by their suffixes (``.main.so``: a g++ build)."""
    return dict(Counter("".join(p.suffixes) or "(none)" for p in sorted(files)))


def teeny_worker(
    frontend: str, scratch: Path, profile: str, archs: str, run_plan: bool
) -> dict[str, Any]:
    """Capture, import and compile with teeny_ir in this (fresh) process; measure.
    ``profile`` is teeny-inference's, ``archs`` emit-triton's (empty: no AOT)."""
    import numpy as np
    import torch

    import teeny_ir
    from teeny_ir import runtime
    from teeny_ir.frontend.onnx import import_onnx
    from teeny_ir.frontend.torch import import_module

    model, x = build_model()
    with torch.no_grad():
        want = first_output(model(x)).numpy()
    cache = Path(os.environ["TEENY_CACHE_DIR"])
    files = cache_files(cache)
    start = time.perf_counter()
    if frontend == "export":
        with torch.no_grad():
            imported = import_module(model, [x], dynamic_batch=False)
    else:
        path = scratch / "yolov8n.onnx"
        with torch.no_grad():
            torch.onnx.export(
                model, (x,), str(path), opset_version=17, dynamo=False, input_names=["images"]
            )
        imported = import_onnx(path)
    captured = time.perf_counter() - start
    out = scratch / "plan"
    inference = "teeny-inference" + (f"{{profile={profile}}}" if profile != "gpu" else "")
    emit = f"emit-triton{{out-dir={out}" + (f" archs={archs}}}" if archs else "}")
    teeny_ir.PassManager.parse(f"{inference},{emit}").run(imported.module)
    total = time.perf_counter() - start
    executable = runtime.load(out)
    plan = executable.plan
    families = Counter(
        next(k.family for k in plan.kernels if k.name == launch.kernel) for launch in plan.launches
    )
    result: dict[str, Any] = {
        "compile_s": total,
        "capture_s": captured,
        "kernels": len(plan.kernels),
        "launches": len(plan.launches),
        "launch_detail": ", ".join(f"{n} {family}" for family, n in families.most_common()),
        "peak_bytes": executable.memory(1)["arena_bytes"],
        "new_cache_entries": len(cache_files(cache) - files),
        "plan_sha256": hashlib.sha256((out / "plan.json").read_bytes()).hexdigest(),
        "compiled_archs": sorted(
            {c.arch for k in plan.kernels for c in k.compiled}  # the cubins in the plan
        ),
        "max_abs_output": float(np.abs(want).max()),
    }
    if run_plan:
        start = time.perf_counter()
        (got, *_) = executable.run([x.numpy()], imported.weights)
        result["interpreter_run_s"] = time.perf_counter() - start
        result["max_abs_error"] = float(np.abs(got - want).max())
    return result


def worker(args: argparse.Namespace) -> int:
    """``--worker``: one compile in this process; prints the result line."""
    if args.worker in ("inductor", "freezing"):
        result = inductor_worker(freezing=args.worker == "freezing")
    else:
        result = teeny_worker(
            args.worker.removeprefix("teeny-"),
            Path(args.scratch),
            args.profile,
            args.archs,
            args.run_plan,
        )
    print(RESULT + json.dumps(result), flush=True)
    return 0


def spawn(system: str, caches: Path, scratch: Path, args: argparse.Namespace, cold: bool) -> Any:
    """Run one worker process on ``caches``; its result."""
    scratch.mkdir(parents=True, exist_ok=True)
    env = os.environ | {
        "YOLO_OFFLINE": "1",
        "TORCHINDUCTOR_CACHE_DIR": str(caches / "inductor"),
        "TEENY_CACHE_DIR": str(caches / "teeny"),
        "TRITON_CACHE_DIR": str(caches / "triton"),
    }
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", WORKER_SYSTEMS[system]]
    command += ["--scratch", str(scratch), "--profile", args.profile, "--archs", args.archs]
    if cold:
        command.append("--run-plan")
    try:
        done = subprocess.run(
            command, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT, check=False
        )
    except subprocess.TimeoutExpired:
        sys.exit(f"{system} ({'cold' if cold else 'warm'}): no result in {WORKER_TIMEOUT} s")
    lines = [line for line in done.stdout.splitlines() if line.startswith(RESULT)]
    if done.returncode != 0 or not lines:
        tail = "\n".join(done.stderr.strip().splitlines()[-20:])
        sys.exit(f"{system} ({'cold' if cold else 'warm'}) failed ({done.returncode}):\n{tail}")
    return json.loads(lines[-1].removeprefix(RESULT))


def archs_text(archs: list[int]) -> str:
    return "cubins for " + ", ".join(f"sm_{a}" for a in archs) if archs else "no cubins"


def kib(n: float) -> str:
    return f"{n / 1024:.0f} KiB"


def table(results: dict[str, dict[str, Any]]) -> list[str]:
    """The comparison table: one row per metric, one column per system, and
    each teeny_ir column's ratio to the first Inductor column."""
    base = next((s for s in SYSTEMS if s in results and s.startswith("inductor")), None)
    columns: list[tuple[str, str | None]] = []
    for system in SYSTEMS:
        if system in results:
            columns.append((system, None))
            if base is not None and system.startswith("teeny_ir"):
                columns.append(("/ " + base, system))

    def value(system: str, metric: str) -> float:
        return float(results[system][metric])

    rows: list[tuple[str, str, Callable[[float], str]]] = [
        ("cold compile", "cold_s", lambda v: f"{v:.1f} s"),
        ("warm compile", "warm_s", lambda v: f"{v:.1f} s"),
        ("kernels", "kernels", lambda v: f"{v:.0f}"),
        ("launches", "launches", lambda v: f"{v:.0f}"),
        ("peak intermediate", "peak_bytes", kib),
        ("max abs error", "max_abs_error", lambda v: f"{v:.1e}"),
    ]
    header = ["metric", *(name for name, _ in columns)]
    body = []
    for label, metric, fmt in rows:
        cells = [label]
        for name, ratio_of in columns:
            if ratio_of is None:
                cells.append(fmt(value(name, metric)))
            else:
                assert base is not None
                denominator = value(base, metric)
                cells.append(
                    f"{value(ratio_of, metric) / denominator:.2f}x" if denominator else "-"
                )
        body.append(cells)
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(header, widths, strict=True)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += [
        "  ".join(
            (cell.ljust(w) if i == 0 else cell.rjust(w))
            for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in body
    ]
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-runs", type=int, default=3, help="warm processes (best is taken)")
    parser.add_argument(
        "--systems", nargs="+", choices=SYSTEMS, default=list(SYSTEMS), metavar="NAME"
    )
    parser.add_argument("--profile", default="gpu", help="teeny-inference's tile profile")
    parser.add_argument("--archs", default="80,90", help="emit-triton's archs ('' for none)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--scratch", help=argparse.SUPPRESS)
    parser.add_argument("--run-plan", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    results: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    ok = True
    with tempfile.TemporaryDirectory(prefix="inductor-compare.") as temp:
        for index, system in enumerate(args.systems):
            caches = Path(temp) / f"caches{index}"
            print(f"{system}: cold ...", file=sys.stderr, flush=True)
            cold = spawn(system, caches, Path(temp) / f"cold{index}", args, cold=True)
            warm = []
            for run in range(args.warm_runs):
                print(f"{system}: warm {run + 1} ...", file=sys.stderr, flush=True)
                warm.append(spawn(system, caches, Path(temp) / f"warm{index}.{run}", args, False))
            results[system] = cold | {
                "cold_s": cold["compile_s"],
                "warm_s": min(w["compile_s"] for w in warm) if warm else float("nan"),
            }
            times = ", ".join(f"{w['compile_s']:.1f}" for w in warm)
            captures = ", ".join(f"{w.get('capture_s', 0.0):.1f}" for w in warm)
            if system.startswith("inductor"):
                freezing = system.endswith("freezing")
                # No g++ build in a warm run (freezing's bypass still writes output code).
                warm_ok = all(
                    not any(kind.endswith(".so") for kind in w["new_cache_files"])
                    and (w["kernels"], w["launches"]) == (cold["kernels"], cold["launches"])
                    and (freezing or w["cache"].get("fxgraph_cache_hit", 0) == 1)
                    for w in warm
                )
                notes += [
                    f"{system}: {cold['graphs']} graph(s); launches {cold['launch_detail']}; "
                    f"first call {cold['first_call_s']:.1f} s, fastest later call "
                    f"{cold['steady_call_s'] * 1e3:.1f} ms",
                    f"  cold: new files in the cache dir {cold['new_cache_files']}, "
                    f"counters {cold['cache']}",
                    f"  warm runs {times} s, counters {warm[0]['cache'] if warm else '-'}, "
                    f"new files {[w['new_cache_files'] for w in warm]}",
                    f"  eager PyTorch's peak by the same method: {kib(cold['eager_peak_bytes'])}",
                ]
                ok &= cold["graphs"] == 1
            else:
                warm_ok = all(
                    w["new_cache_entries"] == 0 and w["plan_sha256"] == cold["plan_sha256"]
                    for w in warm
                )
                same = all(w["plan_sha256"] == cold["plan_sha256"] for w in warm)
                notes += [
                    f"{system}: launches {cold['launch_detail']}",
                    f"  cold: capture+import {cold['capture_s']:.1f} s of it, "
                    f"{cold['new_cache_entries']} cache entries "
                    f"({archs_text(cold['compiled_archs'])}); "
                    f"interpreter run {cold['interpreter_run_s']:.1f} s",
                    f"  warm runs {times} s (capture+import {captures} s of them), new entries "
                    f"{[w['new_cache_entries'] for w in warm]}, same plan: {'yes' if same else 'NO'}",
                ]
            bound = TOLERANCE * max(1.0, cold["max_abs_output"])
            within = cold["max_abs_error"] <= bound
            notes.append(
                f"  warm runs built nothing new: {'yes' if warm_ok else 'NO'}; error within "
                f"{bound:.1e}: {'yes' if within else 'NO'}"
            )
            ok &= warm_ok and within
    scale = max(r["max_abs_output"] for r in results.values())
    print(
        f"YOLOv8n (ultralytics DetectionModel, random weights), {INPUT_SIZE}x{INPUT_SIZE}, batch 1"
    )
    print("\n".join(table(results)))
    print(f"(max |eager output| {scale:.1f}; ratios are teeny_ir / the first inductor column)")
    print("\n".join(notes))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
