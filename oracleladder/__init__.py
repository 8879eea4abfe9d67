"""OracleLadder: milestone roadmaps, student probes and a deterministic verifier.

The Python API (`Experiment`, `SyncExperiment`, `Endpoint`) lives in `oracleladder.experiment`; it is
loaded on first use, so importing a light submodule (`oracleladder.verify.normalize`) stays light."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .experiment import Endpoint, Experiment, Report, SyncExperiment

__version__ = "0.1.0"
__all__ = ["Endpoint", "Experiment", "Report", "SyncExperiment"]


def __getattr__(name: str) -> Any:  # PEP 562: load the API's module on first use
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(".experiment", __name__), name)
    globals()[name] = value
    return value
