"""The parent jobs of a family whose reference answer is unusable are skipped (the report leaves the
family out), said before any call; --include-unusable asks them."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from oracleladder.cli import app


def test_parent_jobs_of_unusable_families_are_skipped_unless_asked(sample_store: Path) -> None:
    # the sample's first family's reference answer is '\1'; nothing listens on port 9: a dry run sends nothing
    probe = ["probe", "--student", "openai/s", "--base-url", "http://127.0.0.1:9/v1", "--store", str(sample_store),
             "--limit", "3", "--k", "2", "--conditions", "C1,C2", "--dry-run", "--json"]
    skipped = CliRunner().invoke(app, probe)
    assert skipped.exit_code == 0, skipped.output
    assert ("1 of the 3 families have an unusable reference answer (`ladder check` says why; the report leaves "
            "them out): their parent jobs are skipped (--include-unusable probes them)") in skipped.stderr
    included = CliRunner().invoke(app, probe + ["--include-unusable"])
    assert included.exit_code == 0, included.output
    assert "unusable reference answer" not in included.stderr
    a, b = (json.loads(r.stdout.strip().splitlines()[-1]) for r in (skipped, included))
    assert a["unusable"] == 1 and b["unusable"] == 0
    assert b["jobs"] - a["jobs"] == 2 * 2  # the first family's C1 and C2, K=2 each; its Stage 0 stays
