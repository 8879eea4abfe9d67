from oracleladder.ladder.outcomes import (
    FamilyResults,
    Gap,
    Outcome,
    classify,
    ladder_gaps,
    milestone_test,
    parent_outcome,
    taxonomy_from_fingerprints,
)

T, F = True, False


def test_alg3_tau1_tau3():
    lad = {"C1_direct": [F] * 8, "C2_descriptions": [T, F, F, F, F, F, F, F], "C3_gold_answers": [T, T, T, F, F, F, F, F]}
    assert parent_outcome(lad, 1) is Outcome.ROADMAP_NEEDED
    assert parent_outcome(lad, 3) is Outcome.ANSWERS_NEEDED
    assert parent_outcome(lad, 4) is Outcome.UNRECOVERED


def test_taxonomy_small():
    s0 = {"m1": [T] + [F] * 7, "m2": [F] * 8}
    assert not milestone_test(s0) and milestone_test(s0, "fraction")
    fam = FamilyResults("p", s0, {"C1_direct": [F] * 8, "C2_descriptions": [F] * 8, "C3_gold_answers": [T] * 2 + [F] * 6})
    assert classify(fam, 1) is Gap.MISSING_MS
    assert classify(fam, 3) is Gap.CAPABILITY
    assert classify(fam, 1, "fraction") is Gap.MS_EXEC
    assert classify(fam, 3, "fraction") is Gap.COMPOSITION


TABLE14 = {  # model: (all families D/R/A/U, passing families D/R/A/U)
    "Qwen-base": ((76, 50, 26, 202), (70, 42, 23, 171)),
    "OutcomeRL-2K": ((106, 50, 14, 184), (88, 44, 9, 155)),
    "MilestoneRL-2K": ((96, 47, 22, 189), (88, 40, 19, 167)),
    "gpt-oss-20b": ((161, 36, 17, 140), (141, 33, 14, 118)),
    "Llama-70B": ((52, 46, 28, 228), (38, 38, 21, 171)),
    "DeepSeek-V3.1": ((143, 33, 7, 171), (108, 25, 6, 125)),
}
TABLE16 = {
    "Qwen-base": (76, 42, 23, 171, 11, 31),
    "OutcomeRL-2K": (106, 44, 9, 155, 11, 29),
    "MilestoneRL-2K": (96, 40, 19, 167, 10, 22),
    "gpt-oss-20b": (161, 33, 14, 118, 6, 22),
    "Llama-70B": (52, 38, 21, 171, 15, 57),
    "DeepSeek-V3.1": (143, 25, 6, 125, 9, 46),
}


def test_table14_to_table16():
    for m, (a, p) in TABLE14.items():
        got = taxonomy_from_fingerprints(dict(zip("DRAU", a)), dict(zip("DRAU", p)))
        assert tuple(got[g] for g in ladder_gaps(False)) == TABLE16[m], m  # the paper ran no primitive rung
        assert sum(got.values()) == 354
