"""The primitive's validators on released families: no gold stated (by the leak rule's equivalence),
no computed result, a length bound, standalone; and check_family runs them when a family has one."""

from __future__ import annotations

import pytest

from oracleladder.schemas import Family, Primitive
from oracleladder.schemas.jsonl import read_jsonl
from oracleladder.validators import check_family
from oracleladder.validators.primitive import CHECKS, check_primitive


@pytest.fixture(scope="module")
def released(release_data) -> dict[str, Family]:
    return {f.pid[:8]: f for f in read_jsonl(release_data / "families_sample.jsonl", Family)}


def failed(text: str, family: Family) -> set[str]:
    return {c.check for c in check_primitive(text, family) if not c.passed}


@pytest.mark.parametrize("text", [
    "Guess that the probability is 37/64 by counting faces.",          # the reference answer as a/b
    "Count the favourable triples: the probability is $0.578125$ in the end.",  # its decimal form
    r"Count triples per face; expect \frac{37}{64} after inclusion-exclusion.",  # as written
    r"Count triples per face; the result is \boxed{\dfrac{37}{64}} overall.",
])
def test_the_reference_answer_in_any_equivalent_form_is_a_leak(released, text):
    assert "primitive_leak" in failed(text, released["de4b7c19"])


@pytest.mark.parametrize("text", [
    "Work with the vote counts: the October 22 total is 180 after the new votes.",  # milestone 2's gold
    "Work with the vote counts: the October 22 total reaches $180.0$ after the new votes.",
    "Work with the vote counts; the total is 1.8 \\cdot 10^2 after the extra votes arrive.",
])
def test_a_milestone_gold_in_any_equivalent_form_is_a_leak(released, text):
    assert "primitive_leak" in failed(text, released["fe16d1aa"])


def test_an_equation_gold_stated_as_written_is_a_leak(released):
    family = released["b36a1161"]
    text = (r"Complete the square: \left(x-\sin\frac{\pi x}{2}\right)^2+\cos^2\frac{\pi x}{2}=0 "
            "forces both terms to vanish.")
    assert "primitive_leak" in failed(text, family)


def test_the_fraction_one_half_leaks_as_half_and_as_point_five(released):
    family = released["15d38f7a"].model_copy(update={"parent_answer": r"\frac{1}{2}"})
    for text in ("The ratio of areas comes out to 0.5 by symmetry.", "By symmetry the ratio is 1/2 of the whole.",
                 r"By symmetry the ratio is $\frac12$ of the whole."):
        assert "primitive_leak" in failed(text, family), text


def test_a_value_the_problem_states_is_no_leak(released):
    family = released["fe16d1aa"]  # the problem says 80 more people voted; 80 is no gold either way
    assert failed("Set up one equation in the unknown turnout, using the 80 late voters and the two shares.",
                  family) == set()


@pytest.mark.parametrize("pid, text", [
    ("de4b7c19", "Fix the face first: count ordered triples lying on one face, then use inclusion-exclusion "
                 "over faces, edges and vertices."),
    ("b36a1161", "Rewrite the left side as a sum of two squares using the Pythagorean identity; "
                 "each square must vanish."),
    ("fe16d1aa", "Let the initial turnout be unknown and write the share of one date before and after "
                 "the late votes as one linear equation."),
    ("e0e93ee4", "A quadratic is a perfect square exactly when its discriminant is zero."),
])
def test_good_primitives_pass_every_check(released, pid, text):
    results = check_primitive(text, released[pid])
    assert [c.check for c in results] == list(CHECKS)
    assert all(c.passed for c in results), [c.reason for c in results if not c.passed]


def test_a_computed_result_is_rejected_even_when_it_is_no_gold(released):
    family = released["de4b7c19"]
    assert failed("Count the pairs of vertices on a face: 4 times 4 = 16 per face.", family) == {"primitive_arithmetic"}
    assert "primitive_arithmetic" in failed("The number of faces times triples equals 384 in total.", family)


def test_length_and_standalone(released):
    family = released["de4b7c19"]
    assert failed("Symmetry.", family) == {"primitive_length"}
    assert failed(" ".join(["count"] * 61), family) == {"primitive_length"}
    assert failed("Use the result from milestone 2 to count the faces.", family) == {"primitive_standalone"}
    assert failed("Combine the previous results with inclusion-exclusion.", family) == {"primitive_standalone"}


def test_check_family_runs_the_primitive_checks_only_when_there_is_one(released):
    family = released["de4b7c19"]
    assert not any(c.check.startswith("primitive_") for c in check_family(family).checks)
    leaky = family.model_copy(update={"primitive": Primitive(text="The probability is 37/64 by counting.",
                                                             provenance="teacher-primitives-only")})
    report = check_family(leaky)
    assert [c.check for c in report.failures() if c.check.startswith("primitive_")] == ["primitive_leak"]
