"""The ``cuda`` backend: a real probe for a usable GPU, and no launcher.

`CudaBackend.available` checks, in order, that cuda-python's driver bindings
import (``pip install 'teeny-ir[cuda]'``), that ``cuInit(0)`` succeeds and that
``cuDeviceGetCount`` sees at least one device, and says in one sentence which
step failed. Where all three pass, `CudaBackend.run` still refuses: launching
the AOT-compiled cubins the plan records needs a cubin launcher, and this
teeny_ir has none.

cuda-python is imported only by the probe, never by ``import teeny_ir``.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from teeny_ir.runtime.errors import BackendUnavailableError

if TYPE_CHECKING:
    import numpy as np

    from teeny_ir.backend.plan import Plan
    from teeny_ir.runtime.backends import Progress

DRIVER_MODULE = "cuda.bindings.driver"
NEEDS_CUDA_PYTHON = "the cuda backend needs cuda-python (pip install 'teeny-ir[cuda]')"
NO_LAUNCHER = (
    "the cuda backend cannot launch the plan's cubins because this teeny_ir has no cubin "
    "launcher; use the interpreter backend"
)


class _DriverCallError(RuntimeError):
    """A driver call that returned something other than ``CUDA_SUCCESS``."""


class CudaBackend:
    """Probes cuda-python and the GPUs; refuses to run (no cubin launcher)."""

    name = "cuda"
    description = "AOT cubins on an NVIDIA GPU via cuda-python (refuses: no cubin launcher here)"

    def available(self) -> str | None:
        """None when cuda-python imports and the driver sees at least one GPU,
        else one sentence naming the step that failed."""
        try:
            count = _device_count(_load_driver())
        except ImportError as err:
            missing = err.name if isinstance(err, ModuleNotFoundError) else None
            if missing is not None and f"{DRIVER_MODULE}.".startswith(f"{missing}."):
                return NEEDS_CUDA_PYTHON
            return f"the cuda backend cannot import cuda-python ({_one_line(err)})"
        # cuda-python 13 raises a RuntimeError subclass where no driver library
        # exists (at the first call, or at import); whatever the probe raises
        # means that no GPU is usable here, which is what available() reports.
        except Exception as err:  # noqa: BLE001
            return f"the cuda backend cannot run here: no CUDA GPU is visible ({_one_line(err)})"
        if count < 1:
            return (
                "the cuda backend cannot run here: no CUDA GPU is visible "
                "(cuDeviceGetCount found 0 devices)"
            )
        return None

    def run(
        self,
        directory: Path,
        plan: Plan,
        tensors: Mapping[str, np.ndarray],
        batch: int,
        times: dict[str, float],
        progress: Progress | None = None,
        trace: dict[int, list[np.ndarray]] | None = None,
    ) -> list[np.ndarray]:
        """Refuse with `BackendUnavailableError`: this teeny_ir has no cubin launcher."""
        raise BackendUnavailableError(NO_LAUNCHER)


def _load_driver() -> Any:
    """cuda-python's driver API module; raises `ModuleNotFoundError` without
    cuda-python. Imported by name because cuda-python is an optional extra."""
    return importlib.import_module(DRIVER_MODULE)


def _device_count(driver: Any) -> int:
    """``cuInit(0)`` then ``cuDeviceGetCount``; raises on any failed call."""
    (result,) = driver.cuInit(0)
    _check(driver, result, "cuInit")
    result, count = driver.cuDeviceGetCount()
    _check(driver, result, "cuDeviceGetCount")
    return int(count)


def _check(driver: Any, result: Any, call: str) -> None:
    if result != driver.CUresult.CUDA_SUCCESS:
        raise _DriverCallError(f"{call} returned {getattr(result, 'name', result)}")


def _one_line(err: BaseException) -> str:
    """An exception as one line of text, for a one-sentence message."""
    lines = str(err).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(err, _DriverCallError):
        return text
    return f"{type(err).__name__}: {text}" if text else type(err).__name__
