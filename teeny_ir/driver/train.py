"""``teeny-train``: run a training plan for some steps and write a checkpoint.

    teeny-train DIR (--weights W.safetensors | --resume CKPT.safetensors)
                --batches BATCHES.npz --steps N -o OUT.safetensors
                [--backend NAME] [--quiet]

``DIR`` is a training plan (``teeny-training``, then ``emit-triton{out-dir=DIR}``).
``BATCHES.npz`` holds one array per plan input, named after the input (``in0``,
``in1``, ... in ``@forward`` argument order) or positionally as ``np.savez``
names them (``arr_0``, ``arr_1``, ...); each has a leading axis of batches:
``[num_batches, B, ...]``. Step ``s`` (counted from the first step of the
training, resumed ones included) trains on batch ``s % num_batches``.

The checkpoint is the trainer's state dict (parameters, running statistics and
optimizer state by PyTorch's names, as safetensors, written atomically) with the
number of steps taken in its metadata (``teeny.steps``). ``--resume CKPT``
starts from a checkpoint and continues exactly as the uninterrupted run would
have: the same state and the same next batch. A progress bar with the loss goes
to stderr on a terminal; the last line is ``trained N steps (S in all); loss X;
checkpoint OUT``.

``--backend`` takes the names in `teeny_ir.runtime.backends.BACKENDS`
(``interpreter``, the default, or ``cuda``).

Exit codes: 0 success; 1 bad usage or input (one line ``teeny-train: error:
...``, never a traceback), before any step where it can be checked, or a
backend that cannot run here; 2 the backend failed while running (the
interpreter worker, a driver call) or an internal error.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TextIO

from teeny_ir.core.files import OutputError, check_not_input, check_output
from teeny_ir.driver.cli import ArgumentParser, add_backend_argument, parse_args
from teeny_ir.runtime.trainer import check_indices

if TYPE_CHECKING:
    import numpy as np

PROG = "teeny-train"
STEPS_KEY = "teeny.steps"
"""The checkpoint metadata entry that counts the steps taken."""


def _make_parser(stdout: TextIO) -> ArgumentParser:
    parser = ArgumentParser(
        stdout,
        prog=PROG,
        description="Train with a plan written by teeny-training and emit-triton{out-dir=DIR}.",
    )
    parser.add_argument("directory", metavar="DIR", help="the emitted training plan directory")
    start = parser.add_mutually_exclusive_group(required=True)
    start.add_argument("--weights", metavar="W.safetensors", help="the initial weights")
    start.add_argument(
        "--resume", metavar="CKPT.safetensors", help="a checkpoint of teeny-train to continue"
    )
    parser.add_argument(
        "--batches",
        required=True,
        metavar="BATCHES.npz",
        help="one [num_batches, B, ...] array per plan input (in0, in1, ... or arr_0, arr_1, ...)",
    )
    parser.add_argument("--steps", required=True, type=int, metavar="N", help="steps to run")
    parser.add_argument("-o", dest="output", required=True, metavar="OUT.safetensors")
    add_backend_argument(parser)
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run teeny-train in-process; returns the exit code."""
    from teeny_ir import runtime

    args = parse_args(_make_parser(stdout), argv, PROG, stderr)
    if isinstance(args, int):
        return args
    try:
        _train(args, stdout, stderr)
    except (OutputError, runtime.PlanError, runtime.RuntimeInputError) as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 1
    except runtime.WorkerError as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 2
    except Exception as err:  # noqa: BLE001 - a bug of teeny_ir: one line, exit 2
        stderr.write(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}\n")
        return 2
    return 0


def _train(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    from teeny_ir import runtime

    if args.steps < 1:
        raise runtime.RuntimeInputError(f"--steps must be at least 1, got {args.steps}")
    start_file = args.weights if args.weights is not None else args.resume
    for path in (start_file, args.batches):
        check_not_input(args.output, path)
    check_output(args.output)
    # Before reading the plan, weights and batches: a backend that cannot run
    # here fails in a moment.
    runtime.usable_backend(args.backend)
    executable = runtime.load(args.directory)
    for name in ("plan.json", *(k.file for k in executable.plan.kernels)):
        check_not_input(args.output, os.path.join(executable.directory, name))
    state = runtime.read_weights(start_file)
    done = read_steps(args.resume) if args.resume is not None else 0
    batches = read_batches(args.batches, len(executable.plan.inputs))
    count = len(batches[0])
    # Every batch is checked before the worker starts (shapes, dtypes, class indices).
    for index in range(count):
        inputs = [array[index] for array in batches]
        executable.check_batch(executable.check_inputs(inputs))
        check_indices(executable, inputs)
    with executable.trainer(state, args.backend) as trainer:
        loss = float("nan")
        with _progress(stderr, args.quiet or not stderr.isatty(), args.steps) as advance:
            for step in range(done, done + args.steps):
                loss = float(trainer.step([array[step % count] for array in batches])[0])
                advance(loss)
        trainer.save(args.output, {STEPS_KEY: str(done + args.steps)})
    stdout.write(
        f"trained {args.steps} steps ({done + args.steps} in all); loss {loss:.6g}; "
        f"checkpoint {args.output}\n"
    )


def read_steps(path: str) -> int:
    """The steps a checkpoint of teeny-train counts (its ``teeny.steps`` metadata)."""
    from safetensors import SafetensorError, safe_open

    from teeny_ir.runtime import RuntimeInputError

    try:
        with safe_open(path, "np") as handle:
            metadata = handle.metadata() or {}
    except (OSError, SafetensorError, ValueError) as err:
        raise RuntimeInputError(f"cannot read checkpoint '{path}': {err}") from None
    text = metadata.get(STEPS_KEY)
    # isascii: isdigit() holds for any Unicode digit, which int() may not read ("²").
    if text is None or not (text.isascii() and text.isdigit()):
        raise RuntimeInputError(
            f"'{path}' is not a teeny-train checkpoint (no '{STEPS_KEY}' step count in its "
            "metadata); start from it with --weights instead"
        )
    return int(text)


def read_batches(path: str, inputs: int) -> list[np.ndarray]:
    """The arrays of ``BATCHES.npz``, one per plan input, in input order (never
    unpickled); each keeps its leading batches axis."""
    import zipfile

    import numpy as np

    from teeny_ir.runtime import RuntimeInputError

    if os.path.isdir(path):
        raise RuntimeInputError(f"batches '{path}' is a directory; give one .npz file")
    try:
        loaded = np.load(path, allow_pickle=False)
        if not isinstance(loaded, np.lib.npyio.NpzFile):
            raise RuntimeInputError(f"batches '{path}' is one .npy array, not an .npz archive")
        with loaded as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as err:
        reason = getattr(err, "strerror", None) or err
        raise RuntimeInputError(
            f"cannot read batches '{path}' as an .npz archive: {reason}"
        ) from None
    for names in ([f"in{i}" for i in range(inputs)], [f"arr_{i}" for i in range(inputs)]):
        if set(names) == set(arrays):
            chosen = [arrays[name] for name in names]
            break
    else:
        expected = ", ".join(f"in{i}" for i in range(inputs))
        found = ", ".join(sorted(arrays)) or "nothing"
        raise RuntimeInputError(
            f"batches '{path}' must hold the plan's {inputs} inputs as {expected} (or "
            f"arr_0 ...), found {found}"
        )
    counts = {len(array) if array.ndim else 0 for array in chosen}
    if len(counts) != 1 or 0 in counts:
        shapes = ", ".join(str(array.shape) for array in chosen)
        raise RuntimeInputError(
            f"batches '{path}': every array needs the same leading number of batches (at "
            f"least 1), got shapes {shapes}"
        )
    return chosen


class _progress:
    """A rich progress bar with the loss on ``stream``, or nothing when ``quiet``;
    entering gives ``advance(loss)``."""

    def __init__(self, stream: TextIO, quiet: bool, total: int) -> None:
        self.stream, self.quiet, self.total = stream, quiet, total
        self.bar: Any = None

    def __enter__(self) -> Any:
        if self.quiet:
            return lambda loss: None
        from rich.console import Console
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(
            TextColumn("step {task.completed}/{task.total}"),
            BarColumn(),
            TextColumn("loss {task.fields[loss]}"),
            TimeElapsedColumn(),
            console=Console(file=self.stream),
        )
        self.bar.start()
        task = self.bar.add_task("train", total=self.total, loss="-")
        return lambda loss: self.bar.update(task, advance=1, loss=f"{loss:.6g}")

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


def _one_line(err: BaseException) -> str:
    return " ".join(str(err).split("\n"))


def main(argv: Sequence[str] | None = None) -> int:
    """Console-script entry point."""
    try:
        return run(sys.argv[1:] if argv is None else argv, sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
