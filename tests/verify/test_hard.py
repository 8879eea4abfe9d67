"""Issue 16's hard cases in the strict cascade: byte-level BPE text, combinatorial notation,
conditions with their domain, compound answers over boxes; each with near misses."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from oracleladder.verify import verify
from oracleladder.verify.normalize import decode_byte_bpe


def bpe(text: str) -> str:
    """Render text as a byte-level BPE detokenizer that forgot to decode would (GPT-2's table)."""
    printable = [*range(33, 127), *range(161, 173), *range(174, 256)]
    extra = iter(range(256, 512))
    table = {b: chr(b) if b in printable else chr(next(extra)) for b in range(256)}
    return "".join(table[b] for b in text.encode("utf-8"))


def test_bpe_decoding_is_the_inverse_of_the_table() -> None:
    text = "So, final answer ✅:\n\\boxed{\\frac{\\sqrt{2}(8+\\ln 5)}{5}} — n ∈ ℕ"
    assert "Ġ" in bpe(text) and "Ċ" in bpe(text)
    assert decode_byte_bpe(bpe(text)) == text
    assert decode_byte_bpe(bpe(text) + "<｜end of sentence｜>") == text + "<｜end of sentence｜>"


@pytest.mark.parametrize("text", [
    "plain text with spaces Ġ kept",  # a raw space: not BPE-encoded, even with a Ġ in it
    "Ġ\\boxed{x}\nĠ",  # a raw newline
    "naïve,café",  # Latin-1 letters only: nothing remapped, nothing to decode
    "abcĠ\u0100\u0101",  # would decode to control characters: Latin Extended-A text
    "abcĠÃ",  # not valid UTF-8 once mapped back
])
def test_text_that_is_not_bpe_stays_as_it_is(text: str) -> None:
    assert decode_byte_bpe(text) == text


def test_bpe_response_is_decoded_before_extraction() -> None:
    gold = r"\sqrt{2}(\frac{8+\ln5}{5})"
    assert verify(bpe(r"So, final answer.\n\boxed{\frac{\sqrt{2}(8+\ln 5)}{5}}"), gold).accepted
    assert not verify(bpe(r"So, final answer.\n\boxed{\frac{\sqrt{2}(8+\ln 3)}{5}}"), gold).accepted
    # the box lies in the reasoning only: decoding must not move it past </think>
    assert not verify(bpe(r"\boxed{\frac{\sqrt{2}(8+\ln 5)}{5}}</think> I am not sure"), gold).accepted


@pytest.mark.parametrize("gold,answer,accepted", [
    (r"-\frac{1}{2^{70}}\cdotC_{70}^{28}", r"-\binom{70}{42} \cdot 2^{-70}", True),
    (r"-\frac{1}{2^{70}}\cdotC_{70}^{28}", r"-\binom{70}{41} \cdot 2^{-70}", False),  # wrong index
    (r"-\frac{1}{2^{70}}\cdotC_{70}^{28}", r"\binom{70}{42} \cdot 2^{-70}", False),  # sign
    (r"C_{10}^{3}", "120", True),
    (r"C^{3}_{10}", r"\dbinom{10}{3}", True),
    (r"C_{10}^{3}", r"{10 \choose 3}", True),
    (r"C_{10}^{3}", r"{10 \choose 4}", False),
    (r"A_{10}^{3}", "720", True),
    (r"A_{10}^{3}", "120", False),  # arrangements are not combinations
    (r"C_{n}^{2}", r"\frac{n(n-1)}{2}", True),
    (r"A_{n}^{2}", r"\frac{n(n-1)}{2}", False),
    (r"2^{2n-1}\timesC_{2n-1}^{n}", r"2^{2n-1}\binom{2n-1}{n}", True),
    (r"C_1^2", "0", False),  # C_1 squared, not a binomial coefficient
])
def test_combinatorial_notation(gold: str, answer: str, accepted: bool) -> None:
    assert verify(rf"\boxed{{{answer}}}", gold, in_process=True).accepted is accepted


@pytest.mark.parametrize("answer,accepted", [
    (r"n \neq 2^k", True),
    (r"n \neq 2^k \text{ for any integer } k \geq 0", True),
    (r"n \ne 2^{k}, k \in \mathbb{N}", True),
    (r"n \neq 2^k \text{ for some positive integer } k", True),
    (r"n = 2^k", False),
    (r"n \neq 3^k", False),
    (r"n \neq 2^k \text{ for } k \in \mathbb{R}", False),  # another domain is another condition
    (r"n \neq 2^k \text{ for real } k", False),
])
def test_condition_with_its_domain(answer: str, accepted: bool) -> None:
    assert verify(rf"\boxed{{{answer}}}", r"n\neq2^{k}(k\in{N})", in_process=True).accepted is accepted


GOLD4 = r"w=-8, x=-\frac{12}{5}, y=\frac{12}{5}, z=8"


def test_compound_answer_in_four_boxes_once_decoded() -> None:
    boxes = r"\boxed{w = -8}, \quad \boxed{x = -\frac{12}{5}}, \quad \boxed{y = \frac{12}{5}}, \quad \boxed{z = 8}"
    assert verify(bpe("The real solutions are:\n" + boxes), GOLD4).accepted
    partial = r"\boxed{x = -\frac{12}{5}}, \quad \boxed{y = \frac{12}{5}}, \quad \boxed{z = 8}"
    assert not verify(bpe("The real solutions are:\n" + partial), GOLD4).accepted
    wrong = boxes.replace("z = 8", "z = -8")
    assert not verify(bpe("The real solutions are:\n" + wrong), GOLD4).accepted


def _judged(release_data: Path) -> list[dict]:
    return [json.loads(line) for line in (release_data / "judged_sample.jsonl").open()]


@pytest.mark.parametrize("extended", [False, True])
def test_judged_sample(release_data: Path, extended: bool) -> None:
    """Every deterministic `correct` is accepted, no `incorrect` is (hand labels, docs/verifier-agreement.md)."""
    rows = _judged(release_data)
    verdicts = [verify(r["response_tail"], r["canonical"], extended=extended) for r in rows]
    correct = [r["item"] for r, v in zip(rows, verdicts) if r["label"] == "correct" and r["deterministic"]]
    assert len(correct) == 6
    assert [r["item"] for r, v in zip(rows, verdicts) if r["label"] == "correct" and r["deterministic"] and not v.accepted] == []
    assert [r["item"] for r, v in zip(rows, verdicts) if r["label"] == "incorrect" and v.accepted] == []


def test_ladder_verify_reads_bpe_text_and_unicode_math() -> None:
    from typer.testing import CliRunner

    from oracleladder.cli import app

    def label(response: str, gold: str) -> str:
        result = CliRunner().invoke(app, ["verify", "--gold", gold, "--response", response, "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)["label"]

    gold = r"-\frac{1}{2^{70}}\cdotC_{70}^{28}"
    assert label(bpe("Final Answer\n\\boxed{-\\binom{70}{42} \\cdot 2^{-70}}"), gold) == "ACCEPT"
    assert label(bpe("Final Answer\n\\boxed{-\\binom{70}{43} \\cdot 2^{-70}}"), gold) == "NOT_ACCEPT"
    assert label(r"so \boxed{3√2}", r"3\sqrt{2}") == "ACCEPT"
    assert label(r"so \boxed{2√3}", r"3\sqrt{2}") == "NOT_ACCEPT"
