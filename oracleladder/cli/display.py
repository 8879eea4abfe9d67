"""What the commands that call a model show: the progress of a run (its spend, its batches), and
the lines every run's result shares (cost, timeouts, the budget, a dry run's estimate, failed jobs)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

from ..clients import Client, Usage
from ..experiment import Estimate, JobFailure, ProbeEstimate
from ..report.palette import n_families
from .common import console, say


class _SpendColumn(ProgressColumn):
    """A task's spend so far (its ``spend`` field), when it has one."""

    def render(self, task: Any) -> Text:
        return Text(task.fields.get("spend", ""))


def _progress() -> Progress:
    return Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
        TaskProgressColumn(), TimeElapsedColumn(), TimeRemainingColumn(), _SpendColumn(), console=console,
    )


def _spend(client: Client) -> str:
    """What a client's run has cost so far, for the progress bar."""
    cost = client.usage.cost_usd
    spent = "cost unknown" if cost is None else f"${cost:.4f}"
    return spent if client.max_cost is None else f"{spent} of ${client.max_cost:g}"


# seconds between the plain progress lines written where stderr is no terminal (a log, a pipe)
PLAIN_EVERY_S = 10.0


@contextmanager
def bar(description: str, total: int, client: Client) -> Iterator[Callable[[object], None]]:
    """The progress display of a run (experiment.Progress): one more done, and the spend now. Where
    stderr is no terminal, a plain line every PLAIN_EVERY_S seconds instead of a bar."""
    if not console.is_terminal:
        with _plain(description, total, client) as advance:
            yield advance
        return
    with _progress() as progress:
        task = progress.add_task(description, total=total, spend=_spend(client))
        _show_batches(progress, client)
        yield lambda _: progress.update(task, advance=1, spend=_spend(client))


@contextmanager
def _plain(description: str, total: int, client: Client) -> Iterator[Callable[[object], None]]:
    done = 0
    t0 = time.monotonic()
    stop = threading.Event()

    def advance(_: object) -> None:
        nonlocal done
        done += 1

    def line() -> None:
        say(f"{description}: {done} of {total} done, {time.monotonic() - t0:.0f} s, {_spend(client)}")

    def every() -> None:
        while not stop.wait(PLAIN_EVERY_S):
            line()

    ticker = threading.Thread(target=every, name="progress", daemon=True)
    ticker.start()
    try:
        yield advance
    finally:
        stop.set()
        ticker.join()
        line()


def _show_batches(progress: Progress, client: Client) -> None:
    """With --batch, one line per batch on the progress display: the provider's state and counts; its
    bar fills as its results are stored (not while the provider still finalizes them)."""
    if not client.batch:
        return
    tasks: dict[str, Any] = {}

    def show(view: Any) -> None:
        what = f"batch {view.id}: {view.state}, {view.succeeded + view.failed} of {view.requests} done at the provider"
        if view.id not in tasks:
            tasks[view.id] = progress.add_task(what, total=view.requests, spend="")
        progress.update(tasks[view.id], description=what, completed=view.settled)

    client.on_batch_status(show)


def batch_rows_said(rows: int | None) -> str:
    return "" if rows is None else f" ({rows} batch rows submitted)"


def estimate_said(e: Estimate, what: str) -> str:
    """A dry run's line: ``what`` it would call, and the tokens and cost at most."""
    def usd(x: float | None) -> str:
        return "unknown (no price; see --prices)" if x is None else f"${x:.4f}"

    return (f"dry run: {what}; at most {e.tokens_in} prompt tokens, {e.tokens_out_max} answer tokens; "
            f"cost at most {usd(e.cost_usd_max)} online, {usd(e.batch_cost_usd_max)} in batch "
            f"({e.prices}); nothing was sent")


def probe_estimate_said(e: ProbeEstimate) -> str:
    """A probe's dry run (`ladder probe`, `ladder prim probe`) in one line."""
    return estimate_said(e, f"{e.calls} calls after the cache, for {e.jobs} jobs of {n_families(e.families)}")


def cost_said(usage: Usage) -> str:
    cost = "unknown" if usage.cost_usd is None else f"${usage.cost_usd:.4f}"
    unmetered = f"; {usage.unmetered} replies without usage, counted at their bound" if usage.unmetered else ""
    return f"cost {cost} ({usage.prices}){unmetered}"


def timeouts_said(usage: Usage) -> str:
    n = usage.timeouts
    return f"; {n} request(s) timed out (see --timeout, --concurrency)" if n else ""


def say_budget(budget_stop: str | None) -> None:
    if budget_stop:
        say(f"{budget_stop}: everything finished is kept; rerun the same command (with a larger "
            "--max-cost) to resume (stored calls are not asked again)")


def print_failed_jobs(failed: list[JobFailure], ungraded: int, student: str, source: str | None) -> None:
    """The jobs a run could not finish, grouped by reason, and what to do about them (``source`` None: a
    raw pool's screen, whose answers a rerun grades again)."""
    by_reason: dict[str, list[JobFailure]] = {}
    for job in failed:
        by_reason.setdefault(job.reason, []).append(job)
    if failed:
        say(f"{len(failed)} jobs failed (no answer; rerun the same command to ask them again):")
    for reason, jobs in by_reason.items():
        say(f"  {len(jobs)} x {reason}")
        for job in jobs[:20]:
            say(f"    pid {job.pid} target {job.target} k {job.k}")
        if len(jobs) > 20:
            say(f"    ... and {len(jobs) - 20} more (`ladder report` counts them per condition)")
    if ungraded:
        again = ("rerun the same command: it grades every answer again (stored calls are not asked again)"
                 if source is None else
                 f"`ladder regrade --student {student} --source {source}` grades them again without a call")
        say(f"{ungraded} answers could not be graded (kept, in no table): {again}")
