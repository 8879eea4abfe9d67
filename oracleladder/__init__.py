"""OracleLadder: milestone roadmaps, student probes and a deterministic verifier.

The Python API (`Experiment`, `SyncExperiment`, `Endpoint`, `Choice`) lives in `oracleladder.experiment`; it is
loaded on first use, so importing a light submodule (`oracleladder.verify.normalize`) stays light."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

if TYPE_CHECKING:
    from .experiment import Choice, Endpoint, Experiment, Report, SyncExperiment

__version__ = "0.1.0"
__all__ = ["Choice", "Endpoint", "Experiment", "Report", "SyncExperiment"]
__getattr__ = lazy_names(__name__, dict.fromkeys(__all__, ".experiment"))
