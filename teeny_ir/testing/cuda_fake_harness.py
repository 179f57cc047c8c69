"""Run a plan on the cuda backend over a fake driver that interprets every
launch (`teeny_ir.testing.fake_cuda.Interpreting`).

Usage: ``python -m teeny_ir.testing.cuda_fake_harness REQUEST.json RESULTS.npz``,
with ``TRITON_INTERPRET=1`` (a process of its own: Triton reads it at import).
REQUEST.json is ``{"plan": DIR, "weights": W.safetensors, "inputs": X.npz,
"mode": "run" | "train" | "session", "steps": N}``; X.npz holds
``step{s}_in{i}`` (train, session) or ``in{i}`` (run). RESULTS.npz gets
``output_{k}`` (run); for a session, the ``steps`` calls run through
``load(DIR).session(weights, backend="cuda", graphs=...)`` twice, with CUDA
graphs and without, each call's outputs as ``graphs_call{s}_output_{k}`` and
``stream_call{s}_output_{k}``, and per session ``{graphs,stream}_calls``: how
many times it called cuStreamBeginCapture, cuGraphInstantiate, cuGraphLaunch,
cuLaunchKernel and cuGraphExecDestroy, then the kernels the fake ran;
or (train) ``step{s}_result{k}``,
``step{s}_bytes`` (the bytes that step copied host to device, device to host
and device to device), ``resident`` and the final state by weight name
prefixed ``state.``, read after the trainer closed (train; with
``"touch_state_before": s`` the state is read, and so made the host's, before
step ``s``; with ``"round_trip": true`` no parameter counts as carried, so the
trainer gets the session that uploads every parameter and reads every output
back), and ``launches``, the number of kernels the fake driver ran.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any


def main(request_file: str, results_file: str) -> int:
    import numpy as np

    from teeny_ir import runtime
    from teeny_ir.kernels.families import FAMILIES
    from teeny_ir.runtime.backends import cuda
    from teeny_ir.testing.fake_cuda import FakeDriver, Interpreting

    request = json.loads(Path(request_file).read_text(encoding="utf-8"))
    executable = runtime.load(request["plan"])
    plan = executable.plan
    counts = {
        compiled.name: len(FAMILIES[kernel.family].args) + cuda.SCRATCH_POINTERS
        for kernel in plan.kernels
        for compiled in kernel.compiled
    }
    driver = FakeDriver(arity=counts.__getitem__)
    driver.execute = Interpreting(driver, executable.directory, plan)
    cuda._load_driver = lambda: driver  # the backend imports its driver through this
    weights = runtime.read_weights(request["weights"])
    arrays = dict(np.load(request["inputs"], allow_pickle=False))
    results: dict[str, Any] = {}  # arrays, for np.savez
    count = len(plan.inputs)
    if request["mode"] == "run":
        inputs = [arrays[f"in{i}"] for i in range(count)]
        for k, output in enumerate(executable.run(inputs, weights, backend="cuda")):
            results[f"output_{k}"] = output
    elif request["mode"] == "session":
        counted = ["cuStreamBeginCapture", "cuGraphInstantiate", "cuGraphLaunch"]
        counted += ["cuLaunchKernel", "cuGraphExecDestroy"]
        for graphs in (True, False):
            prefix = "graphs" if graphs else "stream"
            mark, ran = len(driver.calls), len(driver.launches)
            with executable.session(weights, backend="cuda", graphs=graphs) as session:
                for call in range(int(request["steps"])):
                    inputs = [arrays[f"step{call}_in{i}"] for i in range(count)]
                    for k, output in enumerate(session.run(inputs)):
                        results[f"{prefix}_call{call}_output_{k}"] = output
            names = [name for name, _ in driver.calls[mark:]]
            seen = [names.count(name) for name in counted]
            results[f"{prefix}_calls"] = np.array([*seen, len(driver.launches) - ran])
    else:
        if request.get("round_trip"):  # no parameter carried: the fallback session
            cuda.CARRIED_KINDS = ()  # type: ignore[assignment]  # this process only
        trainer = executable.trainer(weights, backend="cuda")
        with trainer:
            results["resident"] = np.array(isinstance(trainer._session, cuda.CudaTrainingSession))
            for step in range(int(request["steps"])):
                if step == request.get("touch_state_before"):
                    # Reading the state copies it back; the next step uploads it again.
                    trainer.state["conv1.bias"] += 0.0
                mark = len(driver.calls)
                inputs = [arrays[f"step{step}_in{i}"] for i in range(count)]
                for k, value in enumerate(trainer.step(inputs)):
                    results[f"step{step}_result{k}"] = value
                moved = {"cuMemcpyHtoD": 0, "cuMemcpyDtoH": 0, "cuMemcpyDtoDAsync": 0}
                for name, args in driver.calls[mark:]:
                    if name in moved:
                        moved[name] += int(args[-2] if name == "cuMemcpyDtoDAsync" else args[2])
                results[f"step{step}_bytes"] = np.array(list(moved.values()))
        # Closing copied the state back: it is readable after the session ended.
        results |= {f"state.{n}": a for n, a in trainer.state_dict().items()}
    results["launches"] = np.array(len(driver.launches))
    np.savez(results_file, **results)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
