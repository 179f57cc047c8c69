# lit configuration for teeny_ir: RUN lines run in the lit worker process
# (see inprocess.py); `teeny-opt` and `filecheck` are never started as processes.
# ruff: noqa: F821 - lit execs this file with `config` and `lit_config` defined.

import os
import sys

_here = os.path.dirname(os.path.abspath(__file__))
_root = os.path.dirname(_here)
if _root not in sys.path:  # the working tree's teeny_ir, dialects and passes
    sys.path.insert(0, _root)
if _here not in sys.path:  # inprocess.py; last, so test folders shadow nothing
    sys.path.append(_here)

import inprocess  # noqa: E402 - needs the sys.path entries above

_venv_bin = os.path.join(_root, ".venv", "bin")
_tool_dirs = [_venv_bin] if os.path.isdir(_venv_bin) else [os.path.dirname(sys.executable)]

config.name = "teeny_ir"
config.suffixes = [".mlir"]
config.excludes = ["Inputs", "Output"]
config.test_source_root = _here
config.test_format = inprocess.InProcessShTest(_tool_dirs)

# Compiled variants go to a cache of the lit run's own, never the user's.
os.environ.setdefault("TEENY_CACHE_DIR", os.path.join(_here, "Output", "teeny-cache"))
