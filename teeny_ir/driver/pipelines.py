"""Named pipelines: a pipeline name usable wherever a pass name is, at top level.

Each entry expands, in place, into the pipeline text it stands for, so
``teeny-opt -p cleanup`` and ``--pass-pipeline='builtin.module(cleanup)'``
run the same passes, and ``--dump-pass-pipeline`` shows the expansion.

Like MLIR's registered pipelines, a named pipeline may declare typed options
(`PipelineOption`): ``teeny-inference{profile=interpreter}``. Each option is
passed on to the options of the passes it names; an option the pipeline does
not declare, or a bad value, is an `OptionError` naming the valid ones
(`NamedPipeline.expand`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from teeny_ir.driver.pass_options import OptionError, _convert, _type_text, did_you_mean
from teeny_ir.driver.pipeline_syntax import NestedSpec, OptionValue, PassSpec, parse_any
from teeny_ir.kernels.tiles import TileProfile


@dataclass(frozen=True)
class PipelineOption:
    """One typed option of a named pipeline, passed on to pass options.

    ``type`` is a pass-option type (`teeny_ir.driver.pass_options`: ``bool``,
    ``int``, ``float``, ``str``, ``Literal[...]``, tuples of those); ``targets``
    are the ``(pass, pass option)`` pairs that receive its value, in every
    place the pass occurs in the pipeline."""

    name: str
    type: Any
    default: object
    summary: str
    targets: tuple[tuple[str, str], ...]

    def type_text(self) -> str:
        return _type_text(self.type)

    def describe(self) -> str:
        """``profile=gpu|interpreter (default: gpu): ...``, for summaries."""
        if not self.targets:  # it only decides which passes run (`GatedPass`)
            return f"{self.name}={self.type_text()} (default: {self.default}): {self.summary}"
        passes = ", ".join(f"{p}{{{o}}}" for p, o in self.targets)
        return (
            f"{self.name}={self.type_text()} (default: {self.default}; passed to "
            f"{passes}): {self.summary}"
        )


@dataclass(frozen=True)
class GatedPass:
    """A pass a named pipeline runs only when its options ask for it: inserted
    right after the pass ``after`` of the pipeline's text (which runs without
    it at the defaults), when ``when`` holds of the options' values (each
    option's value as given, else its default)."""

    name: str
    after: str
    when: Callable[[Mapping[str, Any]], bool]


@dataclass(frozen=True)
class NamedPipeline:
    """A named, documented pipeline, with its options (if any).

    ``text`` is the expansion with every option at its default (what the
    pipeline runs when written without options); ``gated`` passes join it
    where the options ask for them (`GatedPass`)."""

    name: str
    summary: str
    text: str
    options: tuple[PipelineOption, ...] = ()
    gated: tuple[GatedPass, ...] = ()

    def expand(self, options: Sequence[tuple[str, OptionValue]] = ()) -> NestedSpec:
        """The pipeline ``text`` parsed, with ``options`` (as parsed from
        ``name{key=value ...}``) set on the passes they target. Raises
        `OptionError` for an option the pipeline does not declare (naming the
        valid ones) or a value of the wrong type."""
        declared = {option.name: option for option in self.options}
        if options and not declared:
            raise OptionError(f"named pipeline '{self.name}' takes no options")
        routed: dict[str, list[tuple[str, OptionValue]]] = {}
        values: dict[str, Any] = {option.name: option.default for option in self.options}
        for key, value in options:
            option = declared.get(key.replace("_", "-"))
            if option is None:
                raise OptionError(
                    f"named pipeline '{self.name}' has no option '{key}' (valid options: "
                    f"{', '.join(sorted(declared))})" + did_you_mean(key, declared)
                )
            try:
                values[option.name] = _convert(option.type, value)
            except ValueError as err:
                raise OptionError(
                    f"bad value '{','.join(value)}' for option '{option.name}' of named "
                    f"pipeline '{self.name}': {err}"
                ) from None
            for pass_name, pass_option in option.targets:
                routed.setdefault(pass_name, []).append((pass_option, value))
        spec = parse_any(self.text)
        for gate in self.gated:
            if gate.when(values):
                spec = _insert_after(spec, gate.after, PassSpec(gate.name))
        return _route(spec, routed)

    def describe(self) -> str:
        """The summary, then one line per option."""
        return "\n".join([self.summary, *(f"option {o.describe()}" for o in self.options)])


def _insert_after(spec: NestedSpec, after: str, added: PassSpec) -> NestedSpec:
    """``spec`` with ``added`` right after each top-level pass named ``after``."""
    elements: list[PassSpec | NestedSpec] = []
    for element in spec.elements:
        elements.append(element)
        if isinstance(element, PassSpec) and element.name == after:
            elements.append(added)
    return dataclasses.replace(spec, elements=tuple(elements))


def _route(spec: NestedSpec, routed: dict[str, list[tuple[str, OptionValue]]]) -> NestedSpec:
    """``spec`` with the ``routed`` options set on every pass they name
    (replacing a value the text gives)."""
    elements: list[PassSpec | NestedSpec] = []
    for element in spec.elements:
        if isinstance(element, NestedSpec):
            elements.append(_route(element, routed))
        elif element.name in routed:
            given = dict(routed[element.name])
            kept = tuple((k, v) for k, v in element.options if k not in given)
            options = kept + tuple(given.items())
            elements.append(dataclasses.replace(element, options=options))
        else:
            elements.append(element)
    return dataclasses.replace(spec, elements=tuple(elements))


PROFILE = PipelineOption(
    "profile",
    TileProfile,
    "gpu",
    "tile profile: gpu tiles fit sm_80/sm_90, interpreter tiles are large, for "
    "Triton's CPU interpreter",
    (("select-conv-algorithm", "profile"), ("lower-graph-to-kernel", "profile")),
)
"""The tile profile option of the lowering pipelines."""

TRAINING_OPTIONS = (
    PipelineOption(
        "optimizer",
        Literal["sgd", "adamw"],
        "sgd",
        "the optimizer: torch.optim.SGD or torch.optim.AdamW",
        (("apply-optimizer", "kind"),),
    ),
    PipelineOption("lr", float, 1e-3, "learning rate", (("apply-optimizer", "lr"),)),
    PipelineOption(
        "momentum", float, 0.0, "SGD momentum (0: no buffer)", (("apply-optimizer", "momentum"),)
    ),
    PipelineOption(
        "weight-decay",
        float,
        "0 for sgd, 0.01 for adamw (PyTorch's defaults)",
        "weight decay of conv and linear weights (SGD: L2 in the gradient; AdamW: decoupled)",
        (("apply-optimizer", "weight-decay"),),
    ),
    PipelineOption(
        "betas",
        tuple[float, ...],
        "0.9,0.999",
        "AdamW's two moment decay rates",
        (("apply-optimizer", "betas"),),
    ),
    PipelineOption("eps", float, 1e-8, "AdamW's epsilon", (("apply-optimizer", "eps"),)),
    PipelineOption(
        "decay-all",
        bool,
        False,
        "decay every trainable parameter, BN parameters and biases too",
        (("apply-optimizer", "decay-all"),),
    ),
    PipelineOption(
        "world",
        int,
        1,
        "the number of data-parallel ranks (>= 1): above 1, every gradient is averaged "
        "over them (insert-gradient-allreduce, after insert-backward)",
        (("insert-gradient-allreduce", "world"), ("sync-batch-norm", "world")),
    ),
    PipelineOption(
        "sync-bn",
        bool,
        False,
        "with world above 1, batch statistics over every rank, as torch.nn.SyncBatchNorm "
        "(sync-batch-norm, after train-mode); false: each rank's own, as PyTorch DDP's default",
        (),
    ),
    PROFILE,
)
"""The options of ``teeny-training``: apply-optimizer's (``optimizer`` is its
``kind``), data parallelism's (``world``, ``sync-bn``) and the tile profile."""

TRAINING_GATES = (
    GatedPass("sync-batch-norm", "train-mode", lambda o: bool(o["sync-bn"]) and o["world"] != 1),
    GatedPass("insert-gradient-allreduce", "insert-backward", lambda o: o["world"] != 1),
)
"""The data-parallel passes of ``teeny-training``, run only for ``world`` other
than 1 (a bad world, below 1, reaches the pass, which refuses it)."""

PIPELINES: dict[str, NamedPipeline] = {
    p.name: p
    for p in (
        NamedPipeline(
            "teeny-inference",
            "inference lowering: split biases, fuse attentions, fold Conv+BN+activation, fuse "
            "pointwise chains, pick conv algorithms and tiles (option profile=gpu|interpreter, default gpu, for "
            "select-conv-algorithm), lower to kernel ops (emission stays explicit)",
            "builtin.module(split-bias,fuse-attention,fuse-epilogues{mode=inference},"
            "fuse-pointwise,select-conv-algorithm,lower-graph-to-kernel)",
            (PROFILE,),
        ),
        NamedPipeline(
            "teeny-training",
            "training: batch norms in training form, biases split, attentions fused, conv+bias+activation "
            "fused (mode=training), conv algorithms picked, the backward inserted, the "
            "optimizer step appended, pointwise chains fused and everything lowered to kernel ops (options: "
            "optimizer=sgd|adamw, lr, momentum, weight-decay, betas, eps, decay-all, profile; "
            "data parallelism: world=N adds insert-gradient-allreduce{world=N} after "
            "insert-backward when N > 1, and sync-bn=true also sync-batch-norm{world=N} after "
            "train-mode)",
            "builtin.module(train-mode,split-bias,fuse-attention,fuse-epilogues{mode=training},"
            "select-conv-algorithm,insert-backward,apply-optimizer,fuse-pointwise,"
            "lower-graph-to-kernel)",
            TRAINING_OPTIONS,
            TRAINING_GATES,
        ),
        NamedPipeline(
            "cleanup",
            "canonicalize and CSE every function, then drop dead code",
            "builtin.module(func.func(canonicalize,cse),dce)",
        ),
    )
}
