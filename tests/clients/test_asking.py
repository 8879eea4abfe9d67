"""The one ask-for-JSON-and-re-ask-once helper (`clients.asking.ask_json`) every judge asks through: in
the prompt (a plain chat call, its key the one such calls always had) or in the client's structured
mode; a reply that is not the model asked again once with the reply shown back, then no answer; a
call that fails for good is no answer and says so. The audit judge asks through it too: a verdict in
prose is asked again (it was "unreadable" after one call before)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from oracleladder.audit.judge import VERDICT_FORMAT, ask_judge, judge_messages
from oracleladder.clients import ChatRequest, Client, PermanentError
from oracleladder.clients.asking import ask_json
from oracleladder.domains.math import MathDomain
from oracleladder.prompts import load
from oracleladder.schemas import Family, Rollout, Verdict
from oracleladder.schemas.types import Label
from oracleladder.testing.fake import FakeProvider

MESSAGES = [{"role": "user", "content": "Is it right? Reply with JSON: {\"ok\": \"yes\"|\"no\"}"}]
FORMAT = '{"ok": "yes"|"no"}'


class Ok(BaseModel):
    ok: Literal["yes", "no"]


def scripted(*replies: str) -> FakeProvider:
    left = list(replies)
    return FakeProvider(lambda request: left.pop(0))


async def test_a_prompted_question_is_the_plain_call_and_its_reask_shows_the_reply_back() -> None:
    provider = scripted("It looks right to me.", 'Sorry: {"ok": "yes"}')
    client = Client(provider, model="judge")
    answer = await ask_json(client, MESSAGES, Ok, max_tokens=64, prompted=FORMAT)
    assert answer.reply == Ok(ok="yes") and not answer.failed and answer.why == ""
    first, again = provider.requests
    # the first call is the plain chat call: the key a judge's stored call always had
    assert first.key() == client.request(MESSAGES, temperature=0.0, max_tokens=64).key() == answer.keys[0]
    assert first.mode is None and first.response_schema is None
    assert again.messages == [*MESSAGES, {"role": "assistant", "content": "It looks right to me."},
                              {"role": "user", "content": load("json_reask").render(format=FORMAT)}]
    assert answer.keys == [r.key() for r in provider.requests]


async def test_a_structured_question_reasks_in_the_modes_shape() -> None:
    provider = scripted('{"ok": "maybe"}', '{"ok": "no"}')
    client = Client(provider, model="judge", structured="json_schema")
    answer = await ask_json(client, MESSAGES, Ok, max_tokens=64)
    assert answer.reply == Ok(ok="no")
    first, again = provider.requests
    assert first.mode == again.mode == "json_schema" and first.response_schema == Ok.model_json_schema()
    assert again.messages[:1] == MESSAGES and len(again.messages) > 1
    assert answer.keys == [first.key(), again.key()]


async def test_two_replies_that_are_not_the_model_are_no_answer_with_why() -> None:
    provider = scripted("no idea", "still no idea")
    answer = await ask_json(Client(provider, model="judge"), MESSAGES, Ok, max_tokens=64, prompted=FORMAT)
    assert answer.reply is None and not answer.failed and len(answer.keys) == 2
    assert answer.why.startswith("not the JSON asked for, twice: (whole reply): ")


async def test_a_call_that_fails_for_good_is_no_answer_and_failed() -> None:
    def refuse(request: ChatRequest) -> str:
        raise PermanentError("the content filter refused it")
    answer = await ask_json(Client(FakeProvider(refuse), model="judge"), MESSAGES, Ok, max_tokens=64, prompted=FORMAT)
    assert (answer.reply, answer.failed, answer.why) == (None, True, "call failed: PermanentError")


async def test_the_audit_judge_asks_a_verdict_in_prose_again() -> None:
    family = Family(pid="p1", parent_prompt="What is 3 + 4?", parent_answer="7", milestones=[])
    rollout = Rollout(run_id="r", student="openai/s", pid="p1", target="C1_direct", k=0, call_key="c",
                      response="so it is seven", verdict=Verdict(Label.NOT_ACCEPT, "no boxed"))
    provider = scripted("The response says seven, which is 7: I accept it.",
                        '{"verdict": "ACCEPT", "reason": "seven is 7"}')
    client = Client(provider, model="judge")
    [(verdict, key)] = await ask_judge(client, MathDomain(), {"p1": family}, [rollout], 256)
    assert verdict == "ACCEPT" and len(provider.requests) == 2
    # its first call keyed as the pinned judge call is (tests/test_call_keys.py)
    assert key == client.request(judge_messages(MathDomain(), family, rollout), temperature=0.0, max_tokens=256).key()
    assert provider.requests[1].messages[-1]["content"] == load("json_reask").render(format=VERDICT_FORMAT)
