"""Run untrusted Python (teacher gold helpers, student programs) in a sandbox.

See docs/sandbox.md for what it protects against and what it does not.
"""

from .runner import SandboxResult, isolation_level, run

__all__ = ["SandboxResult", "isolation_level", "run"]
