"""Answers for the fake/NAME models of a test: its rules written to a script that LADDER_FAKE_SCRIPT names
(``clients.fake``), for a test that needs answers, not a wire (the loopback server is for those)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oracleladder.clients.fake import ENV_SCRIPT


def script(monkeypatch: pytest.MonkeyPatch, folder: Path, *rules: dict[str, Any]) -> Path:
    """Answer the fake/ models from ``rules`` (``{"answer": ..., "prompt": REGEX, "model": NAME, ...}``)."""
    path = folder / "fake-script.jsonl"
    path.write_text("".join(json.dumps(rule) + "\n" for rule in rules), encoding="utf-8")
    monkeypatch.setenv(ENV_SCRIPT, str(path))
    return path
