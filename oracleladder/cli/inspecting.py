"""inspect_ai both ways (docs/inspect.md): `ladder export-inspect` writes a roadmap set as an inspect_ai
task, `ladder import-inspect` reads that task's logs into the store as probe runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ..experiment.inspect_logs import import_inspect as import_logs
from ..experiment.inspect_set import TASK_FILE, TASK_NAME, export_inspect as export_set
from ..report.palette import number_word
from ..schemas import LADDER
from ..store import DEFAULT_STORE
from .common import GraderOpt, KOpt, MaxTokensOpt, SourceOpt, StoreOpt, existing, listed, run_experiment, say


def export_inspect(
    out: Annotated[Path, typer.Option("--out", help="Folder to write the task file (ladder.py) and its dataset to.")],
    source: SourceOpt = "release",
    store: StoreOpt = DEFAULT_STORE,
    k: KOpt = 8,
    conditions: Annotated[list[str] | None, typer.Option("--conditions", help=(
        f"A condition to run (repeat the option, or comma-separate): {', '.join(s.short for s in LADDER)}; "
        f"default all {number_word(len(LADDER.default))}."))] = None,
    max_tokens: MaxTokensOpt = 4096,  # the task's: `inspect eval --max-tokens` overrides it, and the log says which
    temperature: Annotated[float, typer.Option("--temperature", min=0.0, help="Sampling temperature (the task's; `inspect eval --temperature` overrides it).")] = 1.0,
    grader: GraderOpt = "strict",
) -> None:
    """Write a roadmap set as an inspect_ai task: Stage 0 and the conditions with the prompts `ladder probe`
    sends, K samples each, scored by the toolkit's verifier; `inspect eval OUT/ladder.py --model M` runs it."""
    existing(store)
    n = run_experiment(store, lambda ex: export_set(ex, source, out, k=k, conditions=listed(conditions),
                                                    grader=grader, temperature=temperature, max_tokens=max_tokens),
                       reading=True)
    say(f"wrote {n} samples of '{source}' to {out / 'dataset.jsonl'}; run them with "
        f"`inspect eval {out / TASK_FILE}@{TASK_NAME} --model PROVIDER/MODEL`, "
        "then `ladder import-inspect LOG`")


def import_inspect(
    logs: Annotated[list[Path], typer.Argument(help="inspect_ai logs (.eval or .json) of an exported task.")],
    store: StoreOpt = DEFAULT_STORE,
) -> None:
    """Import the logs of an exported task: each a probe run of inspect/MODEL, every answer graded again by
    the toolkit's verifier (inspect_ai's score kept beside it); a log of another task, or a sample whose
    prompt the set would not send, is refused whole."""
    existing(store)
    for done in run_experiment(store, lambda ex: import_logs(ex, logs)):
        failed = f", {done.failed} samples failed (no answer)" if done.failed else ""
        say(f"imported {done.answers} answers of {done.student} from {done.path} (run {done.run_id}){failed}; "
            f"inspect_ai's score and the verifier agree on {done.agree} of {done.answers}")
