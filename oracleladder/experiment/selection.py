"""Which of a student's results a report reads: never two runs of different settings pooled.

A student's rollouts (and imported panel counts) are grouped by the settings of the runs that made
them that change a result: ``--max-tokens``, temperature, the request's own parameters (``extra_body``:
sampling parameters, a grammar), whether the student's system prompt was sent, the grader and the
reference answers (``--use-corrections``), the milestones probed (``--keep-leaking``), the versions of
the prompt templates the run sent, the teacher prompts (name and version) the probed families were
compiled with, and whether the results are an imported panel. The roadmap set is the report's ``--source``. K is no group:
a probe at K = 4 after one at K = 8 asks the same first four calls, so its samples are the other's;
``--k N`` reads the first N of each.

Prompts: a run records the versions of the templates it sent (`Domain.student_prompts`), and two runs
pool when they sent the same version of every template both sent (a probe of C1, then one of
--primitive); a run recorded before runs said is "unknown", a value of its own. Teacher prompts: a probe
of a set compiled again under another version of the teacher prompt asks other roadmaps, and never pools
with one of the set as it was; a run recorded before runs said pools with either.

Where more than one group is left after the user's choice, a reader stops with one line naming the
groups and the options that pick one, unless the user asked for them side by side (``by_run``: one
column per group, named ``STUDENT@setting=value`` by the settings the groups differ in, `label`). Every
surface that reads a student's results reads them through `pick`: ladder report and compare, view,
export-results and `Report.to_pandas`, panels export, the audits, and PRIM's report, score, answers
and audit."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace

from ..ladder import ProbeConfig
from ..schemas.models import Rollout
from ..store import FailedJob, PanelCell, RunRecord
from .errors import ExperimentError

PANEL_RUN = "panel-import"  # the kind of the run an imported panel is filed under
IMPORTED = "imported panel"
# the option that picks a group by each setting (prompts: --prompt NAME@VERSION; the others: --run)
_OPTIONS = {"max_tokens": "--max-tokens", "temperature": "--temperature", "grader": "--grader"}
UNKNOWN = "unknown"  # the prompts of a run recorded before runs said which it sent
LABEL_CHARS = 40  # the longest settings part of a side-by-side column's name (a PNG label, an HTML header)


@dataclass(frozen=True)
class Prompts:
    """The versions of the prompt templates a group's runs sent, as (name, version) pairs; ``versions``
    None where they were recorded before runs said (UNKNOWN: one value, equal to itself)."""

    versions: tuple[tuple[str, str], ...] | None = None

    @classmethod
    def recorded(cls, config: Mapping[str, object]) -> Prompts:
        sent = config.get("prompts")
        return cls(None if not isinstance(sent, dict) else tuple(sorted(sent.items())))

    def agrees(self, other: Prompts) -> bool:
        """Whether results made under both may pool: both unknown, or no template sent in two versions."""
        if self.versions is None or other.versions is None:
            return self.versions is other.versions
        mine = dict(self.versions)
        return all(mine.get(n, v) == v for n, v in other.versions)

    def merged(self, other: Prompts) -> Prompts:
        return self if self.versions is None or other.versions is None else \
            Prompts(tuple(sorted(dict(self.versions + other.versions).items())))

    def spelled(self) -> set[str]:
        """Each template as the --prompt option takes it, NAME@VERSION (UNKNOWN for none)."""
        return {UNKNOWN} if self.versions is None else {f"{n}@{v}" for n, v in self.versions}

    def __str__(self) -> str:
        return UNKNOWN if self.versions is None else " ".join(f"{n}@{v}" for n, v in self.versions)


@dataclass(frozen=True)
class RunSettings:
    """The settings of a run that change a result; None where the store does not say (a run from
    before they were recorded, or a panel file that does not state them)."""

    max_tokens: int | None = None
    temperature: float | None = None
    grader: str | None = None
    use_corrections: bool | None = None
    keep_leaking: bool | None = None  # the run kept the milestones the leak rule drops
    params: str = ""  # the request-body fields (extra_body) as JSON
    system_prompt: bool = True  # False: the requests left the student's system message out (probe --no-system-prompt)
    prompts: Prompts = Prompts()  # the versions of the templates sent (those of every run of the group)
    # the teacher prompts of the probed families, "paper (1a2b...)" (`Provenance.prompt_label`), joined by
    # "+"; "" for families not compiled here (the release's), None where the run did not record them
    teacher_prompts: str | None = None
    provenance: str = "rollouts"  # or IMPORTED: counts with no rollout behind them

    @classmethod
    def of(cls, run: RunRecord | None) -> RunSettings:
        """A run's settings from its stored config; a rollout whose run is not in the store has none."""
        if run is None or not isinstance(run.config, dict):
            return cls()
        c = run.config
        if run.kind == PANEL_RUN:
            return cls(max_tokens=c.get("max_tokens"), temperature=c.get("temperature"), grader=c.get("grader"),
                       provenance=IMPORTED)
        return cls(max_tokens=c.get("max_tokens"), temperature=c.get("temperature"),
                   grader=ProbeConfig.stored(c, "").grader, use_corrections=bool(c.get("use_corrections")),
                   keep_leaking=bool(c.get("keep_leaking")),
                   params=json.dumps(c["extra_body"], sort_keys=True) if c.get("extra_body") else "",
                   system_prompt=c.get("system_prompt", True), prompts=Prompts.recorded(c),
                   teacher_prompts="+".join(t) if isinstance(t := c.get("teacher_prompts"), list) else None)

    def pools_with(self, other: RunSettings) -> bool:
        """Whether results made at ``other`` may pool with these: the same settings, prompts and teacher
        prompts that agree."""
        return (replace(self, prompts=other.prompts, teacher_prompts=other.teacher_prompts) == other
                and self.prompts.agrees(other.prompts) and self.teachers_agree(other))

    def teachers_agree(self, other: RunSettings) -> bool:
        """Whether the families of both were compiled with the same teacher prompts (unrecorded: either)."""
        return None in (self.teacher_prompts, other.teacher_prompts) or self.teacher_prompts == other.teacher_prompts

    def merged(self, other: RunSettings) -> RunSettings:
        """The settings of a group these and ``other`` (which pool) are in: every prompt either sent."""
        return replace(self, prompts=self.prompts.merged(other.prompts),
                       teacher_prompts=other.teacher_prompts if self.teacher_prompts is None else self.teacher_prompts)

    def items(self) -> dict[str, object]:
        """The settings worth stating (no empty request parameters, no default reference answers, system
        prompt or provenance)."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        return {k: v for k, v in out.items() if not (k == "params" and not v)
                and not (k in ("use_corrections", "keep_leaking") and not v) and not (k == "system_prompt" and v)
                and not (k == "provenance" and v == "rollouts") and not (k == "teacher_prompts" and not v)}

    def describe(self, k: int | None) -> str:
        """One line: "K = 8, max_tokens = 256, temperature = 1.0, grader = strict" ("?" where unknown)."""
        parts = [f"K = {k if k else '?'}"] + [f"{n} = {'?' if v is None else v}" for n, v in self.items().items()]
        return ", ".join(parts)


@dataclass(frozen=True)
class Choice:
    """What the user picked: a setting's value (None: any), a run whose group to read, the first ``k``
    samples, or ``by_run``: every group side by side."""

    max_tokens: int | None = None
    temperature: float | None = None
    grader: str | None = None
    prompt: str | None = None  # NAME@VERSION of a template the group sent, or UNKNOWN
    run: str | None = None
    k: int | None = None
    by_run: bool = False


@dataclass
class Picked:
    """One group of a student's results: its settings, the runs in it and what they made."""

    student: str
    label: str  # the report's column: the student, or STUDENT@setting=value side by side
    settings: RunSettings
    run_ids: list[str]
    rollouts: list[Rollout] = field(default_factory=list)
    failed: list[FailedJob] = field(default_factory=list)
    cells: list[PanelCell] = field(default_factory=list)

    @property
    def k(self) -> int | None:
        """The samples per condition in this group (the most seen)."""
        ks = [r.k + 1 for r in self.rollouts] + [j.k + 1 for j in self.failed] + [c.k for c in self.cells]
        return max(ks, default=None)

    @property
    def imported(self) -> bool:
        return self.settings.provenance == IMPORTED

    def describe(self) -> str:
        return self.settings.describe(self.k)


def _differing(groups: Sequence[Picked]) -> list[str]:
    """The settings in which the groups differ, in RunSettings' order; prompts only where two groups sent
    a template in two versions (a run of C1 and one of every condition sent the same C1 template)."""
    def differ(n: str) -> bool:
        if n == "prompts":
            return any(not a.settings.prompts.agrees(b.settings.prompts) for a in groups for b in groups)
        if n == "teacher_prompts":
            return any(not a.settings.teachers_agree(b.settings) for a in groups for b in groups)
        return len({getattr(g.settings, n) for g in groups}) > 1
    return [f.name for f in fields(RunSettings) if differ(f.name)]


def matches(g: Picked, choice: Choice) -> bool:
    """Whether a group has every setting ``choice`` names."""
    return ((choice.max_tokens is None or g.settings.max_tokens == choice.max_tokens)
            and (choice.temperature is None or g.settings.temperature == choice.temperature)
            and (choice.grader is None or g.settings.grader == choice.grader)
            and (choice.prompt is None or choice.prompt in g.settings.prompts.spelled())
            and (choice.run is None or choice.run in g.run_ids))


def _own_prompts(g: Picked, groups: Sequence[Picked]) -> list[str]:
    """The templates of ``g`` as --prompt takes them that tell it from the other ``groups``: of a template each
    other group sent in another version (or none recorded), or UNKNOWN; [] where none does."""
    mine, others = g.settings.prompts, [o.settings.prompts for o in groups if o is not g]
    if mine.versions is None:
        return [UNKNOWN] if any(o.versions is not None for o in others) else []
    return sorted(x for x in mine.spelled() if all(
        o.versions is None or (x not in o.spelled() and x.split("@")[0] in dict(o.versions)) for o in others))


def _spell(g: Picked, differing: Sequence[str], groups: Sequence[Picked]) -> str:
    def value(n: str) -> object:
        return "+".join(_own_prompts(g, groups)) or g.settings.prompts if n == "prompts" else getattr(g.settings, n)
    return ",".join(f"{n}={value(n)}" for n in differing) or "settings unknown"


def label(g: Picked, groups: Sequence[Picked]) -> str:
    """A group's column among ``groups``: STUDENT@ the settings they differ in (``S@max_tokens=256``), or,
    where those run past LABEL_CHARS (prompt versions, request parameters), the group's first run."""
    spelled = _spell(g, _differing(groups), groups)
    return f"{g.student}@{spelled if len(spelled) <= LABEL_CHARS else f'run={g.run_ids[0]}'}"


def _named(groups: Sequence[Picked]) -> str:
    """The groups in one line: what tells them apart, their K and (the first few of) their runs."""
    differ = _differing(groups)

    def runs(g: Picked) -> str:
        return ", ".join(g.run_ids[:3]) + (f" and {len(g.run_ids) - 3} more" if len(g.run_ids) > 3 else "")
    return "; ".join(f"{_spell(g, differ, groups)} (K = {g.k}, runs {runs(g)})" for g in groups)


def _way(g: Picked, first: str, groups: Sequence[Picked]) -> str:
    """The option that picks ``g`` of ``groups`` by the first setting they differ in (else its run)."""
    if first == "prompts" and (own := _own_prompts(g, groups)):
        return f"--prompt {own[0]}"
    return f"{_OPTIONS[first]} {getattr(g.settings, first)}" if first in _OPTIONS else f"--run {g.run_ids[0]}"


def groups(student: str, rollouts: Sequence[Rollout], failed: Sequence[FailedJob], cells: Sequence[PanelCell],
           runs: Mapping[str, RunRecord],
           reusers: Mapping[tuple[str, str, int, str], Sequence[str]] | None = None) -> list[Picked]:
    """A student's rollouts, failed jobs and imported counts by the settings of their runs, in the order
    the runs were made. A rollout is in the group of the run that paid for it, and in that of each run
    that asked the same call again (``reusers``, by pid, target, k and call key): its answer is that
    run's answer too (C1 asked again after a recompile, which changed no C1 prompt). A run that asked
    nothing new, a cached rerun alone, makes no group of its own."""
    used = {*(r.run_id for r in rollouts), *(f.run_id for f in failed), *(c.run_id for c in cells)}
    ids = [i for i in runs if i in used] + sorted(used - set(runs))  # in the order the runs were made
    settled = _settled(ids, runs)
    by: dict[RunSettings, Picked] = {}

    def group_of(run_id: str) -> Picked:
        s = settled[run_id]
        g = by.setdefault(s, Picked(student, student, s, []))
        if run_id not in g.run_ids:
            g.run_ids.append(run_id)
        return g

    for run_id in ids:
        group_of(run_id)
    for r in rollouts:
        paid = group_of(r.run_id)
        paid.rollouts.append(r)
        also = {id(g): g for run_id in (reusers or {}).get((r.pid, r.target, r.k, r.call_key), ())
                if run_id in settled and (g := by[settled[run_id]]) is not paid}
        for g in also.values():
            g.rollouts.append(r)
    for j in failed:
        group_of(j.run_id).failed.append(j)
    for c in cells:
        group_of(c.run_id).cells.append(c)
    return list(by.values())


def _settled(ids: Sequence[str], runs: Mapping[str, RunRecord]) -> dict[str, RunSettings]:
    """Each run's settings, its prompts those of every run it pools with: in the order made, a run joins
    the first group whose settings it pools with (`RunSettings.pools_with`), else starts one."""
    found: list[tuple[RunSettings, list[str]]] = []
    for run_id in ids:
        s = RunSettings.of(runs.get(run_id))
        i = next((i for i, (g, _) in enumerate(found) if g.pools_with(s)), None)
        if i is None:
            found.append((s, [run_id]))
        else:
            g, members = found[i]
            found[i] = (g.merged(s), [*members, run_id])
    return {run_id: s for s, members in found for run_id in members}


def pick(student: str, source: str, found: list[Picked], choice: Choice, *, by_run_only: bool = False) -> list[Picked]:
    """The groups ``choice`` picks (one, or with ``by_run`` each left), the first ``choice.k`` samples of
    each; an ExperimentError naming the groups and the options that pick one where that is not one.
    ``by_run_only``: the reader picks a group by its run alone (a judge's command, whose --max-tokens is
    the judge's own, and which shows no groups side by side)."""
    left = [g for g in found if matches(g, choice)]
    if not left:
        raise ExperimentError(f"no results of student '{student}' on '{source}' match the settings asked for; "
                              f"the store has: {_named(found)}")
    if len(left) > 1 and not choice.by_run:
        first = "run" if by_run_only else next(iter(_differing(left)), "run")
        ways = " or ".join(_way(g, first, left) for g in left)
        raise ExperimentError(f"student '{student}' has results on '{source}' at {len(left)} settings, which a "
                              f"report never pools: {_named(left)}; pick one with {ways}"
                              + ("" if by_run_only else ", or show them side by side with --by-run"))
    if choice.k is not None and any(c.k > choice.k for g in left for c in g.cells):
        raise ExperimentError(f"--k {choice.k}: the imported panel of '{student}' holds counts of K = "
                              f"{max(c.k for g in left for c in g.cells)} attempts, not of their first {choice.k}")
    return [Picked(student, label(g, left) if len(left) > 1 else student, g.settings, g.run_ids,
                   [r for r in g.rollouts if choice.k is None or r.k < choice.k],
                   [j for j in g.failed if choice.k is None or j.k < choice.k], g.cells)
            for g in left]
