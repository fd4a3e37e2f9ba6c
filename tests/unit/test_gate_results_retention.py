"""Validation results and their Data Docs pages are kept per suite up to a bound, newest first."""

from james_consistency.gates import prune_validation_results


def test_only_the_newest_results_of_each_suite_and_their_pages_are_kept(tmp_path):
    uncommitted = tmp_path / "gx" / "uncommitted"
    stamps = [f"20261123T0{hour}0000.000000Z" for hour in range(5)]
    for suite, runs in (("plan_safety", stamps), ("mailbox_health", stamps[:2])):
        for stamp in runs:
            result = uncommitted / "validations" / suite / "__none__" / stamp / f"spark-{suite}.json"
            page = uncommitted / "data_docs" / "local_site" / "validations" / suite / "__none__" / stamp / "p.html"
            for path in (result, page):
                path.parent.mkdir(parents=True)
                path.write_text("{}")

    assert prune_validation_results(tmp_path, keep=2) == 3

    def kept(area: str, suite: str) -> list[str]:
        return sorted(path.name for path in (uncommitted / area).glob(f"**/{suite}/__none__/*"))

    assert kept("validations", "plan_safety") == stamps[3:]
    assert kept("data_docs", "plan_safety") == stamps[3:]
    assert kept("validations", "mailbox_health") == stamps[:2], "a suite under the bound keeps everything"
