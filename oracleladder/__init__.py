"""OracleLadder: milestone roadmaps, student probes and a deterministic verifier."""

__version__ = "0.1.0"
