"""The paper's audits of a run, one module each: the format audit (Appendix L, Table 24), milestone
answers in the models' own solutions (Appendix Q, Table 35), the judge audit of the grader
(Appendix V.1, Table 47) and the rubric review of the composition gap (Appendix S.1, Table 42)."""
