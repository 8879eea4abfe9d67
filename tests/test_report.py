import json

from oracleladder.probe.outcomes import FamilyResults
from oracleladder.probe.report import write_report

T, F = True, False


def test_write_report(tmp_path):
    fams = [FamilyResults("a", {"m": [T]}, {"C1_direct": [T], "C2_descriptions": [F], "C3_gold_answers": [F]}),
            FamilyResults("b", {"m": [T]}, {"C1_direct": [F], "C2_descriptions": [F], "C3_gold_answers": [F]})]
    write_report({"s1": fams}, tmp_path)
    d = json.loads((tmp_path / "report.json").read_text())
    assert d["s1"]["taxonomy"]["Direct"] == 1 and d["s1"]["taxonomy"]["Composition-gap"] == 1
    assert "| s1 | 1 | 0 | 0 | 1 | 0 | 0 | 2 |" in (tmp_path / "report.md").read_text()
    assert (tmp_path / "taxonomy.png").stat().st_size > 0
