"""``teeny-train``: run a training plan for some steps and write a checkpoint.

    teeny-train DIR (--weights W.safetensors | --resume CKPT.safetensors)
                --batches BATCHES.npz --steps N -o OUT.safetensors
                [--reset-optimizer] [--backend NAME] [--timeout SECONDS] [--quiet]
    torchrun --nproc-per-node N $(which teeny-train) DIR ...   (data parallel)

``DIR`` is a training plan (``teeny-training``, then ``emit-triton{out-dir=DIR}``).
``BATCHES.npz`` holds one array per plan input, named after the input (``in0``,
``in1``, ... in ``@forward`` argument order) or positionally as ``np.savez``
names them (``arr_0``, ``arr_1``, ...); each has a leading axis of batches:
``[num_batches, B, ...]``. Step ``s`` (counted from the first step of the
training, resumed ones included) trains on batch ``s % num_batches``.

The checkpoint is the trainer's state dict (parameters, running statistics and
optimizer state by PyTorch's names, as safetensors) with the number of steps
taken (``teeny.steps``) and the plan's optimizer (``teeny.optimizer``: kind and
hyperparameters) in its metadata. ``-o`` follows `teeny_ir.core.files`: a
regular file is replaced atomically (the umask's mode, no temporary file left
behind), a character device (``/dev/null``) or a FIFO is written in place and
never replaced (a FIFO is opened before the first step: without a reader it is
refused then), anything else is refused; whether ``-o`` can be written is
checked before the first step. ``--resume CKPT`` starts from a checkpoint and
continues exactly as the uninterrupted run would have: the same state and the
same next batch. A checkpoint whose recorded optimizer is not the plan's
(another kind, lr, momentum, weight decay, betas or eps) is refused in one
line, unless ``--reset-optimizer``, which starts the plan's optimizer state at
zero (parameters and running statistics are kept); a checkpoint without the
record (an older one) is taken as it is. A progress bar with the loss goes to
stderr on a terminal; the last line is ``trained N steps (S in all); loss X;
checkpoint OUT``.

The weights, the checkpoint and the batches are read only from regular files,
with size bounds (a FIFO or ``/dev/zero`` is one line, never a hang), and the
batches' ``.npy`` headers are checked before anything is allocated for them.

Divergence: a step whose loss or update is not finite (a NaN in a batch, a
learning rate that overflows) is not applied (`teeny_ir.runtime.trainer`; on
the cuda backend the updates are read back for the check, the state's bytes
each step).
teeny-train writes the last finite state to ``-o`` - the state after the last
step applied, its ``teeny.steps`` counting the steps actually applied - and
exits 1 with one line naming the step and the first non-finite result (its
launch, graph op and source location).

``--backend`` takes the names in `teeny_ir.runtime.backends.BACKENDS`
(``interpreter``, the default, or ``cuda``).

Data parallelism: a plan compiled with ``teeny-training{world=N}`` trains
under ``torchrun --nproc-per-node N``, which starts N processes and sets
``RANK``, ``WORLD_SIZE``, ``LOCAL_RANK``, ``MASTER_ADDR`` and ``MASTER_PORT``.
With ``WORLD_SIZE`` above 1 each process initialises the default process
group (``env://``; gloo on the interpreter backend, NCCL on cuda, the device
``LOCAL_RANK``), checks that the plan is built for ``WORLD_SIZE`` ranks and
that every batch divides by it (one line before any step otherwise), and
trains on its shard of every batch: rows ``rank * B / W`` to ``(rank + 1) *
B / W``. The ranks start from rank 0's state and stay identical (the trainer
all-reduces the gradients). Only rank 0 writes the checkpoint and prints the
last line; the others write nothing. The checkpoint is the same state dict
as a single process writes (the state does not depend on the number of
ranks), so ``--resume`` continues from a checkpoint of any number of ranks:
step ``s`` trains on batch ``s % num_batches``, split among the ranks or
whole. ``--timeout`` bounds each collective's wait for the other ranks
(default 600 s); a rank that stops responding makes the others exit 2 with
one line naming it. The group is destroyed at the end.

Exit codes: 0 success; 1 bad usage or input (one line ``teeny-train: error:
...``, never a traceback), before any step where it can be checked (an output
that cannot be written, an optimizer mismatch, a batch whose arena exceeds
the machine's memory), a backend that cannot run here, an arena the backend
could not allocate at the run's batch size, or a step that diverged (the last
finite state written to ``-o``); 2 the backend failed while running (the
interpreter worker, a driver call, a collective whose ranks stopped
responding) or an internal error.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, TextIO

from teeny_ir.core.files import (
    OutputError,
    check_not_input,
    check_output,
    output_file,
    read_npz,
    write_file,
)
from teeny_ir.driver.cli import ArgumentParser, add_backend_argument, parse_args
from teeny_ir.runtime.errors import DivergenceError
from teeny_ir.runtime.trainer import (
    MAX_STEPS_DIGITS,
    STEPS_KEY,
    check_indices,
    parse_steps,
    read_checkpoint,
)

if TYPE_CHECKING:
    import numpy as np

PROG = "teeny-train"


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
    parser.add_argument("--steps", required=True, type=_count, metavar="N", help="steps to run")
    parser.add_argument("-o", dest="output", required=True, metavar="OUT.safetensors")
    parser.add_argument(
        "--reset-optimizer",
        action="store_true",
        help="resume a checkpoint of another optimizer (or other hyperparameters): start the "
        "plan's optimizer state at zero, keep the parameters and running statistics",
    )
    add_backend_argument(parser)
    parser.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="under torchrun: how long a collective waits for the other ranks (default 600)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


def _count(text: str) -> int:
    """A ``--steps`` value: ASCII digits only (``int`` reads any Unicode digit)."""
    digits = text.removeprefix("-")
    if not (0 < len(digits) <= MAX_STEPS_DIGITS and digits.isascii() and digits.isdigit()):
        raise argparse.ArgumentTypeError(
            f"expected a number of steps (at most {MAX_STEPS_DIGITS} ASCII digits), got {text!r}"
        )
    return int(text)


def run(argv: Sequence[str], stdout: TextIO, stderr: TextIO) -> int:
    """Run teeny-train in-process; returns the exit code."""
    from teeny_ir import runtime

    args = parse_args(_make_parser(stdout), argv, PROG, stderr)
    if isinstance(args, int):
        return args
    try:
        _train(args, stdout, stderr)
    except (OutputError, runtime.PlanError, runtime.RuntimeInputError, DivergenceError) as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 1
    except (runtime.WorkerError, runtime.CollectiveError) as err:
        stderr.write(f"{PROG}: error: {_one_line(err)}\n")
        return 2
    except Exception as err:  # noqa: BLE001 - a bug of teeny_ir: one line, exit 2
        stderr.write(f"{PROG}: internal error: {type(err).__name__}: {_one_line(err)}\n")
        return 2
    return 0


def _train(args: argparse.Namespace, stdout: TextIO, stderr: TextIO) -> None:
    from teeny_ir import runtime
    from teeny_ir.runtime.trainer import Trainer

    if args.steps < 1:
        raise runtime.RuntimeInputError(f"--steps must be at least 1, got {args.steps}")
    if args.timeout is not None and not args.timeout > 0:
        raise runtime.RuntimeInputError(f"--timeout must be above 0 seconds, got {args.timeout}")
    rank, world = ranks(os.environ)
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
    if executable.plan.world != world:
        raise runtime.RuntimeInputError(_world_mismatch(executable.plan.world, world))
    what = "weights" if args.weights is not None else "checkpoint"
    state, metadata = read_checkpoint(start_file, what)
    done = 0
    if args.resume is not None:
        text = metadata.get(STEPS_KEY)
        if text is None:
            raise runtime.RuntimeInputError(
                f"'{args.resume}' is not a teeny-train checkpoint (no '{STEPS_KEY}' step count "
                "in its metadata); start from it with --weights instead"
            )
        done = parse_steps(text, f"checkpoint '{args.resume}'")
    batches = read_batches(args.batches, len(executable.plan.inputs))
    batches = shard(batches, rank, world, args.batches)
    count = len(batches[0])
    # Every batch is checked before the worker starts (shapes, dtypes, class
    # indices, and on the interpreter the arena against the machine's memory).
    sizes: set[int] = set()
    for index in range(count):
        inputs = [array[index] for array in batches]
        batch = executable.check_inputs(inputs)
        executable.check_batch(batch)
        check_indices(executable, inputs)
        sizes.add(batch)
    if args.backend == "interpreter":
        from teeny_ir.runtime.backends.interpreter import check_arena

        for batch in sorted(sizes):
            check_arena(executable.plan, batch)
    with contextlib.ExitStack() as outputs:
        # A device or FIFO is opened now (a FIFO without a reader is refused
        # before any step) and written at the end; a regular file is replaced then.
        sink = outputs.enter_context(output_file(args.output)) if _special(args, rank) else None
        with _process_group(world, args.backend, args.timeout) as group:
            timeout = {} if args.timeout is None else {"timeout": args.timeout}
            with Trainer(
                executable,
                state,
                args.backend,
                group,
                metadata=metadata,
                reset_optimizer=args.reset_optimizer,
                steps=done,
                read_updates=True,  # the cuda backend too: no update that is not finite is kept
                source=start_file,
                **timeout,
            ) as trainer:
                loss = float("nan")
                quiet = args.quiet or not stderr.isatty() or rank != 0
                try:
                    with _progress(stderr, quiet, args.steps) as advance:
                        for step in range(done, done + args.steps):
                            loss = float(trainer.step([array[step % count] for array in batches])[0])
                            advance(loss)
                except DivergenceError as err:
                    if rank != 0:
                        raise
                    try:
                        _write(trainer.checkpoint_bytes(), args.output, sink)
                    except OutputError as failed:
                        kept = f"and that state could not be written: {failed}"
                    else:
                        kept = f"checkpoint {args.output} holds that state ({STEPS_KEY} = "
                        kept += f"{trainer.steps})"
                    raise DivergenceError(f"{err}; {kept}", err.step) from None
                if rank == 0:
                    _write(trainer.checkpoint_bytes(), args.output, sink)
    if rank == 0:
        ranks_text = f" on {world} ranks" if world > 1 else ""
        stdout.write(
            f"trained {args.steps} steps{ranks_text} ({done + args.steps} in all); loss "
            f"{loss:.6g}; checkpoint {args.output}\n"
        )


def _special(args: argparse.Namespace, rank: int) -> bool:
    """Whether this rank writes ``-o`` and it is a character device or a FIFO."""
    if rank != 0:
        return False
    try:
        mode = os.stat(args.output).st_mode
    except (OSError, ValueError):
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)


def _write(data: bytes, path: str, sink: Any) -> None:
    """The checkpoint's bytes to the device or FIFO opened before the steps,
    or to the regular file ``path`` (replaced atomically)."""
    if sink is None:
        write_file(path, data)
        return
    try:
        sink.write(data)
        sink.flush()
    except OSError as err:
        raise OutputError(f"cannot write '{path}': {err.strerror or err}") from None


def ranks(environ: Mapping[str, str]) -> tuple[int, int]:
    """(rank, world size) from torchrun's environment (``RANK``, ``WORLD_SIZE``);
    (0, 1) outside it. Raises `RuntimeInputError` for values that are not
    ranks of a group."""
    from teeny_ir.runtime import RuntimeInputError

    text = environ.get("WORLD_SIZE", "1") or "1"
    rank_text = environ.get("RANK", "0") or "0"
    if not (text.isascii() and text.isdigit() and rank_text.isascii() and rank_text.isdigit()):
        raise RuntimeInputError(
            f"WORLD_SIZE={text!r} and RANK={rank_text!r} are not a rank of a process group "
            "(torchrun sets them)"
        )
    world, rank = int(text), int(rank_text)
    if world < 1 or rank >= world:
        raise RuntimeInputError(f"RANK={rank} is not a rank of WORLD_SIZE={world}")
    if world > 1:
        missing = [name for name in ("MASTER_ADDR", "MASTER_PORT") if not environ.get(name)]
        if missing:
            raise RuntimeInputError(
                f"WORLD_SIZE={world} but {' and '.join(missing)} unset: run teeny-train under "
                f"torchrun --nproc-per-node {world}"
            )
    return rank, world


def _world_mismatch(plan_world: int, world: int) -> str:
    if world == 1:
        return (
            f"the plan is built for {plan_world} ranks (teeny-training{{world={plan_world}}}): "
            f"run teeny-train under torchrun --nproc-per-node {plan_world}"
        )
    return (
        f"the plan is built for {plan_world} rank{'s' if plan_world != 1 else ''}, but "
        f"WORLD_SIZE is {world} (compile it with teeny-training{{world={world}}})"
    )


def shard(batches: list[np.ndarray], rank: int, world: int, path: str) -> list[np.ndarray]:
    """This rank's rows of every batch: ``rank * B / W`` to ``(rank + 1) * B / W``
    of each array's second axis (the batch); raises `RuntimeInputError` when the
    batch does not divide by ``world``."""
    from teeny_ir.runtime import RuntimeInputError

    if world == 1:
        return batches
    sizes = {array.shape[1] if array.ndim > 1 else 0 for array in batches}
    if len(sizes) != 1 or (size := sizes.pop()) % world or size == 0:
        found = ", ".join(str(array.shape) for array in batches)
        raise RuntimeInputError(
            f"batches '{path}': every batch must split evenly among the {world} ranks (a "
            f"batch size that divides by {world}), got shapes {found}"
        )
    part = size // world
    return [array[:, rank * part : (rank + 1) * part] for array in batches]


class _process_group:
    """torch.distributed's default group for ``world`` > 1 ranks (``env://``,
    gloo for the interpreter backend, NCCL on the device ``LOCAL_RANK`` for
    cuda; joining waits ``timeout`` seconds for the other ranks), destroyed on
    exit; None (nothing imported) for one rank."""

    def __init__(self, world: int, backend: str, timeout: float | None) -> None:
        from teeny_ir.runtime.distributed import DEFAULT_TIMEOUT

        self.world, self.backend = world, backend
        self.timeout = DEFAULT_TIMEOUT if timeout is None else timeout
        self.dist: Any = None

    def __enter__(self) -> Any:
        if self.world == 1:
            return None
        import torch.distributed as dist

        from teeny_ir.runtime import RuntimeInputError

        if self.backend == "cuda":
            import torch

            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0") or 0))
        import datetime

        name = "nccl" if self.backend == "cuda" else "gloo"
        try:
            dist.init_process_group(
                name, init_method="env://", timeout=datetime.timedelta(seconds=self.timeout)
            )
        except Exception as err:  # noqa: BLE001 - the rendezvous failed: one line
            raise RuntimeInputError(
                f"cannot join the process group ({name}, {os.environ.get('MASTER_ADDR')}:"
                f"{os.environ.get('MASTER_PORT')}): {_one_line(err)}"
            ) from None
        self.dist = dist
        return None  # the trainer uses the default group

    def __exit__(self, *exc: object) -> None:
        if self.dist is not None and self.dist.is_initialized():
            self.dist.destroy_process_group()


def read_batches(path: str, inputs: int) -> list[np.ndarray]:
    """The arrays of ``BATCHES.npz``, one per plan input, in input order (never
    unpickled, read by `teeny_ir.core.files.read_npz`: a regular file only,
    each header checked before its data is allocated); each keeps its leading
    batches axis."""
    from teeny_ir.runtime import RuntimeInputError

    arrays = read_npz(path, "batches")
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
