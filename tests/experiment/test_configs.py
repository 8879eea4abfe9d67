"""The stage configs (issue 44, item 1): each option declared once, with its default and help, in
`experiment.configs`; the Python API takes a config or the same fields as keywords; a bad one names the
argument as each surface spells it; no stage, nor any method of the API, takes more than 8 parameters."""

from __future__ import annotations

import inspect
import re

import pytest
import typer.main

from oracleladder.cli import app
from oracleladder.experiment import Experiment, ExperimentError, configs
from oracleladder.experiment.configs import (
    Budgeted,
    CompileConfig,
    Flag,
    PrimAuditConfig,
    PrimConfig,
    ProbeConfig,
    ReportConfig,
    ScreenConfig,
    StageConfig,
    configured,
    flag_of,
)
from oracleladder.ladder import Shard
from tests.helpers import REPO

CONFIGS = [c for c in vars(configs).values()
           if isinstance(c, type) and issubclass(c, StageConfig) and c.__name__.endswith("Config")]


def test_keywords_and_a_config_are_one_config_the_keywords_over_it() -> None:
    assert configured(ProbeConfig, None, {"k": 4, "conditions": "C1,C2"}) == ProbeConfig(k=4, conditions=("C1", "C2"))
    given = ProbeConfig(k=4, max_tokens=512, shard="2/3", pids="a, b")
    assert configured(ProbeConfig, given, {}) == given and given.shard == Shard(2, 3) and given.pids == ("a", "b")
    assert configured(ProbeConfig, given, {"k": 2}) == ProbeConfig(k=2, max_tokens=512, shard=Shard(2, 3), pids=("a", "b"))
    # a pool's screen without a config keeps its one rule; the defaults are the fields' own
    assert (ProbeConfig().max_tokens, ProbeConfig().k, PrimConfig().k, ScreenConfig().rule) == (4096, 8, 1, "default")


@pytest.mark.parametrize("kind, given, python, cli", [
    (ProbeConfig, {"k": 0}, "k=0: Input should be greater than or equal to 1",
     "--k 0: Input should be greater than or equal to 1"),
    (ProbeConfig, {"grader": "lenient"}, "grader='lenient': unknown grader 'lenient'",
     "--grader lenient: unknown grader 'lenient'"),
    (ProbeConfig, {"shard": "3/2"}, "shard='3/2': shard 3/2: I must be between 1 and N",
     "--shard 3/2: shard 3/2: I must be between 1 and N"),
    (CompileConfig, {"granularity": "tiny"}, "granularity='tiny': unknown granularity 'tiny'",
     "--granularity tiny: unknown granularity 'tiny'"),
    (ScreenConfig, {"set_name": 3}, "set_name=3: Input should be a valid string", "--set 3: Input should be"),
    (ReportConfig, {"budget": 3}, "budget=3: no such option", "--budget 3: no such option"),
])
def test_a_bad_option_names_the_argument_as_each_surface_spells_it(kind: type[StageConfig], given: dict,
                                                                     python: str, cli: str) -> None:
    with pytest.raises(ExperimentError) as raised:
        configured(kind, None, given)
    assert str(raised.value).startswith(python) and raised.value.cli_message().startswith(cli)


@pytest.mark.parametrize("kind", CONFIGS, ids=lambda k: k.__name__)
def test_every_field_has_its_cli_spelling_and_its_help(kind: type[StageConfig]) -> None:
    for name, field in kind.model_fields.items():
        flags = [m for m in field.metadata if isinstance(m, Flag)]
        assert len(flags) == 1 and flags[0].decls.startswith("--"), f"{kind.__name__}.{name}"
        assert field.description, f"{kind.__name__}.{name} has no help"


def test_the_token_budget_is_declared_once() -> None:
    """`--max-tokens` is one field (`configs.MaxTokens`): every config and command reads its spelling,
    its help and its bound from there (a stage may set its own default)."""
    declared = [(path.name, line) for path in sorted((REPO / "oracleladder").rglob("*.py"))
                for line in path.read_text(encoding="utf-8").splitlines()
                if re.search(r"""(Flag|Option)\(\s*["']--max-tokens""", line)]
    assert [name for name, _ in declared] == ["configs.py"], declared
    assert all(kind.model_fields["max_tokens"].metadata == Budgeted.model_fields["max_tokens"].metadata
               for kind in CONFIGS if "max_tokens" in kind.model_fields)


def test_the_corrections_switch_is_declared_once() -> None:
    """`--use-corrections` is one field (`configs.Corrected`): the commands that take it without a config
    read it from there (`cli.common.CorrectionsOpt`)."""
    declared = [path.name for path in sorted((REPO / "oracleladder").rglob("*.py"))
                for line in path.read_text(encoding="utf-8").splitlines()
                if re.search(r"""(Flag|Option)\(\s*["']--use-corrections""", line)]
    assert declared == ["configs.py"]


@pytest.mark.parametrize("command", ["report", "view", "compare", "export-results"])
def test_the_readers_of_a_report_take_tau_and_the_corrections_from_its_config(command: str) -> None:
    params = {p.opts[0]: p for p in typer.main.get_command(app).commands[command].params}
    for name in ("threshold", "use_corrections"):
        field = ReportConfig.model_fields[name]
        option = params[flag_of(ReportConfig, name).decls]
        assert (option.help, option.default) == (field.description, field.default), (command, name)


def test_prim_audit_takes_its_sample_s_options_from_its_config() -> None:
    params = {p.opts[0]: p for p in typer.main.get_command(app).commands["prim"].commands["audit"].params}
    for name, field in PrimAuditConfig.model_fields.items():
        option = params[flag_of(PrimAuditConfig, name).decls]
        assert (option.help, option.default) == (field.description, field.default), name


def test_no_stage_takes_more_than_eight_parameters() -> None:
    """A stage: a method that records a run (`run.calling`, `run.recorded`), or a probe's; and the
    reports, which take a typed input (`ReportConfig`, `PrimReportConfig`, `CompareInput`)."""
    stages = {name: f for name, f in inspect.getmembers(Experiment, inspect.iscoroutinefunction)
              if re.search(r"\b(calling|recorded)\(|self\.probe\(", inspect.getsource(f))}
    assert {"probe", "compile", "screen", "screen_pool", "benchmark", "judge_audit", "review_audit",
            "prim_probe", "regrade"} <= set(stages)
    stages |= {name: getattr(Experiment, name) for name in (
        "report", "prim_report", "prim_across", "compare", "write_compare")}
    assert {name: n for name, f in stages.items() if (n := len(inspect.signature(f).parameters)) > 8} == {}


def test_no_method_of_the_api_takes_more_than_eight_parameters() -> None:
    """Every public method of `Experiment`, the stages' and the readers' (`prim_audit`: its sample is a
    `PrimAuditConfig`)."""
    methods = {name: f for name, f in inspect.getmembers(Experiment, inspect.isfunction) if not name.startswith("_")}
    assert {name: n for name, f in methods.items() if (n := len(inspect.signature(f).parameters)) > 8} == {}
