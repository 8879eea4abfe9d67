"""Reading the judge's replies (the structured path's one reader, `Shape.parse`): the last JSON object
with an allowed value counts; prose, a value off the scale or broken JSON is no reply (re-asked, then
a missing score)."""

from __future__ import annotations

import pytest

from oracleladder.clients import ChatRequest, ChatResult, StructuredOutputError
from oracleladder.clients.structured import Shape
from oracleladder.prim.judge import WORDING, Agreement, correctness_messages, validity_messages
from oracleladder.schemas.prim import PrimPrimitive

REQUEST = ChatRequest(provider="openai", model="judge", messages=[{"role": "user", "content": "judge"}])


def read_reply(text: str) -> Agreement:
    return Shape(Agreement).parse(REQUEST, ChatResult(text=text))


@pytest.mark.parametrize("text,expected", [
    ('{"agreement": "match", "evidence": "same"}', "match"),
    ('Thinking... ```json\n{"agreement": "partial", "evidence": "coarser"}\n```', "partial"),
    ('{"agreement": "match"} on reflection {"agreement": "mismatch"}', "mismatch"),
    ('{"agreement": "mismatch"} then {"agreement": "close enough"}', "mismatch"),
])
def test_the_last_allowed_object_counts(text: str, expected: str) -> None:
    assert read_reply(text).agreement == expected


@pytest.mark.parametrize("text", ["It matches.", '{"agreement": "Match"}', '{"agreement": match}', "",
                                  '{"verdict": "valid"}'])
def test_anything_else_is_no_reply(text: str) -> None:
    with pytest.raises(StructuredOutputError):
        read_reply(text)


def test_the_prompts_carry_both_primitives_and_the_familys_wording() -> None:
    gold = PrimPrimitive(pid="p", core_concept="the gold idea", primary_type="extremal_principle", provenance="gold")
    candidate = {"essential_property": "e", "solution_principle": "s", "core_concept": "the model's idea"}
    user = correctness_messages("GATE", "WITNESS", "the problem", "the solution", gold, candidate)[0]["content"]
    assert "core_concept: the gold idea" in user and "core_concept: the model's idea" in user
    assert WORDING["WITNESS"]["GATE"][0] in user and "The dimension you are judging is the GATE" in user
    assert "## Reference Solution (correct):\nthe solution" in user
    v = validity_messages(candidate)[0]["content"]
    assert "essential_property: e\nsolution_principle: s\ncore_concept: the model's idea" in v
