"""The closed vocabularies of the protocol: milestone types, answer schemas, verdict labels."""

from enum import Enum


class MilestoneType(str, Enum):
    """What a milestone asks for (paper Section 2)."""

    KEY_MOVE = "KEY_MOVE"
    MODEL = "MODEL"
    COMPUTE = "COMPUTE"
    NORMALIZE = "NORMALIZE"
    INTEGRATE = "INTEGRATE"
    LEMMA = "LEMMA"
    WARMUP = "WARMUP"
    SANITY = "SANITY"


class AnswerSchema(str, Enum):
    """The shape of a gold answer (paper Appendix W); each has one deterministic parser."""

    NUMBER = "NUMBER"
    EXPR = "EXPR"
    EQUATION = "EQUATION"
    INEQUALITY = "INEQUALITY"
    SET = "SET"
    INTERVAL = "INTERVAL"
    TUPLE_LIST = "TUPLE_LIST"
    MATRIX_VECTOR = "MATRIX_VECTOR"
    MCQ_STRING = "MCQ_STRING"


class Label(str, Enum):
    """Verdict labels, spelled as in the release."""

    ACCEPT = "ACCEPT"
    NOT_ACCEPT = "NOT_ACCEPT"


class GradeStatus(str, Enum):
    """What happened when an answer was graded: a verdict on the student, or not.

    GRADED: the cascade decided. LIMIT: the answer itself exceeded the grader's limits (its time
    per item); counted as not accepted, as the release does. UNGRADED: grading itself failed
    (the pool broke, a worker died); never a verdict on the student, excluded from every table
    and graded again by `ladder regrade` or a rerun.
    """

    GRADED = "graded"
    LIMIT = "limit"
    UNGRADED = "ungraded"
