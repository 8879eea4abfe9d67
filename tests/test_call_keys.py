"""Call keys are the store's identity of a paid call: a change of the code must not change them, or
every store made before asks its calls again. The digests below were computed on the code before the
restructuring of issue 28 (commit 083f1f3) with this same computation; each kind of call is pinned:
probe jobs (every condition, Stage 0, the primitive rung, three endpoints), compile requests (the
math, code and primitive teachers, each structured mode), judge requests, and batch entries.

One pin was changed on purpose (issue 31): a call at a server other than the provider's own names its
model by both names (the user's and the served one), no longer the server's URL; stores keep their
calls through the migration to schema v13 (tests/store/test_rekey.py), and AT_A_SERVER_BEFORE is the
URL-keyed digest of that code, which the test of the migration recomputes.

The compile pins were changed on purpose (issue 37): a structured call is keyed by its logical request
(the caller's messages, the response model's schema, the mode's name), no longer by the body its mode
builds (instructor's handler builds it now, and its bodies change between its versions); the store keys
the calls stored before again (schema v19, tests/store/test_rekey_structured.py). Each pin holds at the
lowest instructor the floor allows and at the newest (.ci/lowest runs this file), re-asks included,
which are in instructor's own words.

The inspect pins are new (issue 48): inspect_ai's models, keyed as every wire's by the logical request
(provider "inspect", the model as inspect_ai names it), the schema in the prompt (md_json)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from oracleladder.audit.judge import judge_messages
from oracleladder.clients import ChatRequest, ChatResult, Client, StructuredOutputError
from oracleladder.clients.providers import make_batch_api
from oracleladder.domains.code import CodeDomain
from oracleladder.domains.math import MathDomain
from oracleladder.domains.math.plan import TeacherPlan
from oracleladder.domains.math.primitive_compile import PrimitivePlan, primitive_messages
from oracleladder.ladder import ProbeConfig
from oracleladder.probe.runner import job_request
from oracleladder.schemas import Family, MathProblem, Rollout, Verdict
from oracleladder.schemas.jsonl import read_unique
from oracleladder.schemas.types import Label

PINNED = {
    "probe openai/s": "144b1a40ee44bde1e945fdf6039a46eacb5bd28a3afe5c44bb649218e05604e5",
    "probe openai/s at a server": "b0c72424f6536a7cc666acfa6b0790889461df9edd7d62df90b796cdd7397521",
    "probe anthropic/s": "6c1e4f8f65e8109f27d810048d69c017ff13f175035a09150c4684c1ca5f0bd0",
    "compile math json_schema": "c87d97ef6aaa60a165964e2ebeb454260e3a544c62964a74a7b8838f30c42d50",
    "compile math json_object": "c900f3872a1911e21bac46f121afaa570451d753a14e8cf16902c69ba8c4c06a",
    "compile math tools": "4cb0a68685ec1ef89949a82729f5249cbf4c540b13ba68628045a21f38774097",
    "compile math md_json": "7e7dd12ce9ac7de3acfb8a0eb4c81f533cbdbd7d69c17236acbd28ba17471879",
    "compile math anthropic tools": "34ac11a98a134248020828d9f1f0452608302ec80ca2239ca28963e11f1beb98",
    "compile math anthropic md_json": "56e86f029fed8bbb7aa8f57c30bff24f8f421f9946361b10eb78b644fd831e0c",
    "compile re-ask openai json_schema": "f8705589591be1ad2f66d1f813e8ab42cc1225ef8e371cf1de624730d86ac27d",
    "compile re-ask openai json_object": "95df57244be2918cae4be1d788adda05a8edb37c15a203dae4bf78de98f26a2f",
    "compile re-ask openai tools": "d8fb7c0e0a6922d344496329718369a210432e0265c710fb0a6e9edf7b49ff0f",
    "compile re-ask openai md_json": "0624595358493948adea40ceb3d6282fbb0048495bf674445785e44ef85a194a",
    "compile re-ask anthropic tools": "5e19ce3eaa62e398466de24f3909f7efce4e93acff85fa93669dd254304ff711",
    "compile re-ask anthropic md_json": "6e806178969e97e8c90048fb1aa77102d2b254de47ddd94261ac479c109438e3",
    "compile code json_schema": "da607b0718c03bdc9b80d5cdd4089220b908be3656c3736a839b7b7f5ed7efe9",
    "compile primitive json_schema": "a551a451c3a2543f0cd6498cb103fb1638ce3da159b131d4e5393bb2538ee0a9",
    "judge": "6e84cd5c7e938cda0d89a991104f8cfe938975ccc6e2a6b41cd64c292adcad7f",
    "batch openai": "682320adfae075b691093aa57c206ebb04623983eb4c08c1fd6ecfbdb1110bdb",
    "batch anthropic": "81fe99d1192fdddc50ad1babfd44708310dfb7516470fe916c6ca3e86a146da9",
    "probe inspect/mockllm/model": "554f5a54ab2ffc95a284700c926e2b7d0be7ee048efb26fbda4aebaf116ed733",
    "compile math inspect md_json": "8526d21ae4e734674a7a365b7336aa25f540fce1b18cd63dc6c175055eed4ea0",
    "compile re-ask inspect md_json": "a4cdc0cd8bf4d572de9997eb02f81c502b6a448f2a32fe1d91359198e7b28dff",
}

AT_A_SERVER_BEFORE = "5bd30aa6392ef2fb2cd6683ef8214e83eae02a28830e7afb1ff25b103c926c80"
AT_A_SERVER = "http://127.0.0.1:8000/v1"


class Recorder:
    """A provider that answers every call with a reply no schema accepts, and records each request."""

    name = "openai"
    endpoint: str | None = None

    def __init__(self, name: str = "openai") -> None:
        self.name = name
        self.requests: list[ChatRequest] = []
        self.reply = "not json"

    async def complete(self, request: ChatRequest) -> ChatResult:
        self.requests.append(request)
        return ChatResult(text=self.reply)

    async def aclose(self) -> None:
        return None


def digest(lines: list[str]) -> str:
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


@pytest.fixture(scope="module")
def families(release_data: Path) -> list[Family]:
    return list(read_unique(release_data / "families_sample.jsonl", Family))[:3]


def probe_requests(families: list[Family], model: str, endpoint: str | None) -> list[tuple[str, ChatRequest]]:
    """Each probe job's line (pid, target, k) and its request."""
    provider = Recorder(model.split("/")[0])
    provider.endpoint = endpoint
    client = Client(provider, model=model.split("/", 1)[1], name=model)
    config = ProbeConfig(student=model, k=2, conditions=("C1_direct", "C2_descriptions", "C3_gold_answers", "C2_random",
                                                          "C2_generic", "C3_mismatched", "C2_primitive",
                                                          "C2_primitive_random"), primitive_fallback=True)
    jobs = MathDomain().plan_jobs(families, config, families)
    return [(f"{j.pid} {j.target} {j.k}", job_request(client, j, temperature=1.0, max_tokens=4096)) for j in jobs]


def probe_keys(families: list[Family], model: str, endpoint: str | None) -> str:
    return digest([f"{line} {request.key()}" for line, request in probe_requests(families, model, endpoint)])


async def structured_key(provider: Recorder, mode: str, messages: list[dict[str, str]], model: type) -> str:
    client = Client(provider, model="t", structured=mode)
    with pytest.raises(StructuredOutputError):
        await client.structured(client.request(messages, temperature=0.0, max_tokens=8192), model)
    return provider.requests[-1].key()


async def reask_key(provider: Recorder, mode: str, messages: list[dict[str, str]], model: type) -> str:
    """The key of the re-ask after a reply that is JSON but not a ``model`` (instructor's re-ask shape)."""
    provider.reply = '{"milestones": "none"}'
    client = Client(provider, model="t", structured=mode)
    request = client.request(messages, temperature=0.0, max_tokens=8192)
    with pytest.raises(StructuredOutputError) as info:
        await client.structured(request, model)
    with pytest.raises(StructuredOutputError):
        await client.structured(request.model_copy(update={"messages": [*messages, *info.value.reask()]}), model)
    return provider.requests[-1].key()


async def call_keys(families: list[Family]) -> dict[str, str]:
    """Every pinned value, computed now."""
    keys = {"probe openai/s": probe_keys(families, "openai/s", None),
            "probe openai/s at a server": probe_keys(families, "openai/s", AT_A_SERVER),
            "probe anthropic/s": probe_keys(families, "anthropic/s", None),
            # inspect_ai's models (issue 48): provider "inspect", the model as inspect_ai names it
            "probe inspect/mockllm/model": probe_keys(families, "inspect/mockllm/model", None)}
    problem = MathProblem(pid=families[0].pid, problem=families[0].parent_prompt, answer=families[0].parent_answer)
    for mode in ("json_schema", "json_object", "tools", "md_json"):
        per_granularity = []
        for granularity in ("coarse", "default", "fine"):
            messages, _ = MathDomain(granularity=granularity).teacher_messages(problem)
            per_granularity.append(await structured_key(Recorder(), mode, messages, TeacherPlan))
        keys[f"compile math {mode}"] = digest(per_granularity)
    messages, _ = MathDomain().teacher_messages(problem)
    for mode in ("tools", "md_json"):
        keys[f"compile math anthropic {mode}"] = await structured_key(Recorder("anthropic"), mode, messages, TeacherPlan)
    keys["compile math inspect md_json"] = await structured_key(Recorder("inspect"), "md_json", messages, TeacherPlan)
    for provider, mode in (("openai", "json_schema"), ("openai", "json_object"), ("openai", "tools"),
                           ("openai", "md_json"), ("anthropic", "tools"), ("anthropic", "md_json"), ("inspect", "md_json")):
        keys[f"compile re-ask {provider} {mode}"] = await reask_key(Recorder(provider), mode, messages, TeacherPlan)
    code = CodeDomain()
    (humaneval,) = code.read_problems(Path("humaneval:1"), "error")
    messages, _ = code.teacher_messages(humaneval)
    keys["compile code json_schema"] = await structured_key(Recorder(), "json_schema", messages, code.response_model)
    messages, _ = primitive_messages(families[0])
    keys["compile primitive json_schema"] = await structured_key(Recorder(), "json_schema", messages, PrimitivePlan)

    judge = Client(Recorder(), model="judge")
    rollout = Rollout(run_id="r", student="openai/s", source="t", pid=families[0].pid, target="C1_direct", k=0,
                      call_key="c", response="... so the answer is \\boxed{7}.",
                      verdict=Verdict(Label.NOT_ACCEPT, "not equivalent"))
    keys["judge"] = judge.request(judge_messages(MathDomain(), families[0], rollout), temperature=0.0,
                                  max_tokens=2048).key()
    student = Client(Recorder(), model="s", name="openai/s")
    job = MathDomain().plan_jobs(families[:1], ProbeConfig(student="openai/s", k=1), families)[0]
    request = job_request(student, job, temperature=1.0, max_tokens=4096)
    entries = {"openai": make_batch_api("openai", api_key="k").entry(request.key(), request),
               "anthropic": make_batch_api("anthropic", api_key="k").entry(
                   request.key(), request.model_copy(update={"provider": "anthropic"}))}
    for name, entry in entries.items():
        keys[f"batch {name}"] = hashlib.sha256(json.dumps(entry, sort_keys=True).encode()).hexdigest()
    return keys


@pytest.mark.parametrize("kind", ["probe", "compile", "judge", "batch"])
async def test_call_keys_are_unchanged(families: list[Family], kind: str) -> None:
    keys = await call_keys(families)
    assert {k: v for k, v in keys.items() if k.startswith(kind)} == \
        {k: v for k, v in PINNED.items() if k.startswith(kind)}


def test_a_call_at_a_server_is_keyed_by_its_model_not_its_address() -> None:
    def key(name: str, endpoint: str | None, served: str = "default", tag: str | None = None) -> str:
        provider = Recorder()
        provider.endpoint = endpoint
        return Client(provider, model=served, name=name, cache_tag=tag).request("What is 2 + 2?", max_tokens=8).key()

    at = key("openai/qwen", AT_A_SERVER)
    assert key("openai/qwen", "http://gpu7.lab:9000/v1") == at  # another host and port: the same call
    assert key("openai/llama", AT_A_SERVER) != at  # another model served under the same name
    assert key("openai/qwen", AT_A_SERVER, served="qwen-2") != at  # another served model
    assert key("openai/qwen", AT_A_SERVER, tag="after-finetune") != at  # weights changed behind the name
    assert key("openai/qwen", None) != at  # OpenAI's own API
    assert key("openai/qwen", None, tag="v2") != key("openai/qwen", None)  # a tag holds there too
