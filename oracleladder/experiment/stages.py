"""`Experiment`: one experiment's store, read (`Reader`) and written by the stages the `ladder`
commands run: import, compile, probe, screen, regrade, the judge audit, the rubric review, the batches.

Each stage that calls a model runs inside one lifecycle (`run.calling`: the endpoint's client, the
run recorded around the work, the client closed) and returns a typed result (`results.py`)."""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..clients.batch import CREATING, ENDED, make_batch_api
from ..schemas import (
    CheckResult,
)
from ..schemas.jsonl import OnDuplicate
from ..store import BatchRecord
from ..verify import GRADERS
from . import panels as _panels
from .audits import AuditStages
from .compiling import CompileStages
from .errors import ExperimentError
from .files import apply_corrections, load_families, with_leaks_left_out
from .prim import PrimStages
from .results import (
    ImportResult,
)
from .screening import ScreenStages


class Experiment(PrimStages, CompileStages, ScreenStages, AuditStages):
    """One experiment's store, and the verifier pool the commands grade with; an async context manager.

    ``readonly``: None opens an existing store read-only where it cannot be written, else for writing
    (a missing file is created). ``notify``: called with one line for what a run learns on its own (a
    server's slot count or served model name). ``workers``: the verifier pool's size (default: the
    CPU count). ``cluster``: a Ray cluster (`oracleladder.cluster.Cluster`) whose workers make the
    calls and grade, started with the experiment and stopped with it; the store is written here only."""

    async def import_families(self, path: str | os.PathLike[str], *, source: str = "release",
                              on_duplicate: OnDuplicate = "error",
                              corrections: str | os.PathLike[str] | None = None) -> ImportResult:
        """Import released-format families, filed under ``source``, with the release's ``corrections``
        merged into them (`files.apply_corrections`), and the leak rule applied (`files.with_leaks_left_out`:
        the milestones that leak left out, each found listed; a leak refuses no family). A correction that
        does not apply imports nothing."""
        families = load_families(path, on_duplicate)
        applied = [] if corrections is None else apply_corrections(families, corrections)
        shown: dict[str, list[CheckResult]] = {}
        for family in families:
            family.provenance.source = source
            if leaks := with_leaks_left_out(family):
                shown[family.pid] = leaks
            await self.store.put_family(family)
        return ImportResult(families=len(families), corrections=applied, shown_leaks=shown,
                            leaking={f.pid: f.leaking for f in families if f.leaking})

    async def import_panels(self, paths: Sequence[str | os.PathLike[str]], *, source: str = "release",
                            student: str | None = None, max_tokens: int | None = None,
                            temperature: float | None = None, grader: str | None = None,
                            ) -> _panels.Imported:
        """Import the release's panel records (`panels`: per model, condition or milestone and family,
        n_correct of k) on the families of ``source``: each model a student with no rollouts, its
        results filed as an imported panel at the settings given (None: not stated). Returns the
        records imported per student, how many were left out (on families not in the set), and per student
        the warnings of the answers its records say were cut off or unreadable."""
        if grader is not None and grader not in GRADERS:
            raise ExperimentError(f"unknown grader {grader!r}; known: {', '.join(GRADERS)}")
        families = await self.roadmap_set(source)
        return await _panels.import_panels(
            self.store, paths, families, families[0].provenance.roadmap_set, student=student,
            settings={"max_tokens": max_tokens, "temperature": temperature, "grader": grader})

    async def batches(self, *, cancel: bool = False,
                      api_key_env: str | None = None) -> tuple[list[BatchRecord], list[str]]:
        """The store's provider batches (``Endpoint.batch``), oldest first, as of their last poll; with
        ``cancel``, those in flight cancelled first (their states as the provider then says; an intent
        whose create reply was lost has no id to cancel until a run looks it up). Returns them and the
        ids cancelled."""
        store = self.store
        cancelled: list[str] = []
        records = await store.batches()
        for b in records if cancel else []:
            if b.state in ENDED or b.state == CREATING:
                continue
            api = make_batch_api(b.provider, base_url=b.endpoint, api_key_env=api_key_env)
            try:
                await api.cancel(b.id)
                st = await api.status(b.id)
            finally:
                await api.aclose()
            await store.update_batch(b.id, st.state, st.succeeded, st.failed)
            cancelled.append(b.id)
        return (await store.batches() if cancelled else records), cancelled
