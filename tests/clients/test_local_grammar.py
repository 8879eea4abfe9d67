"""A llama.cpp grammar (GBNF) in the request field `grammar`: the embedded model decodes under it, a
grammar llama.cpp cannot parse is a refused call (never a crash), and the demo's grammar gives one
paragraph of reasoning, then a box, within its token bound."""

from __future__ import annotations

import re

import pytest

from oracleladder.clients import ChatRequest
from oracleladder.clients.errors import BadRequestError
from oracleladder.clients.local import GRAMMAR_FIELD, LocalProvider, boxed_grammar, boxed_max_tokens
from oracleladder.domains.math.prompts import messages
from tests.helpers import needs

pytestmark = [pytest.mark.local, needs("llama_cpp", "llama-cpp-python not installed: pip install 'oracleladder[local]'")]


@pytest.fixture
def provider(local_provider: LocalProvider) -> LocalProvider:
    return local_provider  # the session's model (tests/conftest.py): loaded once


def _request(grammar: str, max_tokens: int, k: int = 0) -> ChatRequest:
    return ChatRequest(provider="local", model="smollm2-135m-instruct", messages=messages("What is 7 times 6?"), k=k,
                       params={"max_tokens": max_tokens, "temperature": 0.7, "extra_body": {GRAMMAR_FIELD: grammar}})


def test_the_boxed_grammar_ends_every_answer_in_a_box_within_its_bound(provider: LocalProvider) -> None:
    chars = 40
    for k in range(3):
        result = provider.complete_sync(_request(boxed_grammar(chars), boxed_max_tokens(chars), k))
        shape = r"(?:[^\n]|\n(?!\n)){0," + str(2 * chars) + r"}\n\nFinal answer: \\boxed\{[^\n]+\}"
        assert re.fullmatch(shape, result.text), result.text
        assert result.finish_reason == "stop" and result.tokens_out <= boxed_max_tokens(chars)


def test_a_grammar_decides_the_answer(provider: LocalProvider) -> None:
    result = provider.complete_sync(_request('root ::= "forty-two"', 16))
    assert result.text == "forty-two"


@pytest.mark.parametrize("grammar", ["root ::= undefined-rule", "root ::= [0-9", "no rules at all"])
def test_a_grammar_llama_cpp_cannot_parse_is_a_refused_call(provider: LocalProvider, grammar: str) -> None:
    with pytest.raises(BadRequestError, match="grammar does not parse"):
        provider.complete_sync(_request(grammar, 16))
    assert provider.complete_sync(_request('root ::= "still here"', 16)).text == "still here"
