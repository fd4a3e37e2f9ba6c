"""Property-based fuzzing (hypothesis) of the pure parsers: the ACL truth (3.9 events, 3.5 JSON), keyword sets and
row comparison. Hostile input is reported as MalformedTruth, never another exception, and the scan (Spark) and the
re-check (Python) agree on what can be read."""

import json
from random import Random

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from james_consistency.engine.apply import comparable
from james_consistency.projections.acl import MalformedTruth, acl_problem, acl_state, james_rights, parse_acl
from james_consistency.projections.flags import _flags

TRIED = {"count": 0}

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=12,
)
# Mostly James's letters (with the obsolete `c` and `d`), sometimes any text; keys mostly named, sometimes the
# nameless keys James cannot read.
rights = st.text(alphabet="aeiklprstwxcd", max_size=12) | st.text(max_size=6)
keys = st.text(min_size=1, max_size=30) | st.sampled_from(["", "-", "$", "-$", "-$team", "$team", "anyone"])
entries = st.dictionaries(keys, rights | json_values, max_size=6)


EVENT_TYPES = st.sampled_from(["acl-updated", "acl-updated", "mailbox-deleted", "", "ACL-UPDATED"])


def event():
    return st.fixed_dictionaries(
        {"eventId": st.integers(), "type": EVENT_TYPES | json_values},
        optional={
            "aclDiff": st.fixed_dictionaries({}, optional={"newAcl": st.fixed_dictionaries({"entries": entries})})
            | json_values,
            "extraFieldOfANewerJames": json_values,
        },
    )


def legacy():
    # `version` is a field James 3.5 does not know in the JSON: its read fails.
    return st.fixed_dictionaries({"entries": entries}, optional={"version": json_values}) | json_values


ORDER = "aeiklprstwx"


def james_reading(acl: dict) -> dict | None:
    """The ACL as James reads it (MailboxACL.Rfc4314Rights, EntryKey.deserialize), written independently of the
    parser: None when James cannot read it."""
    if any(key in ("", "-", "$", "-$") or set(value) - set(ORDER + "cd") for key, value in acl.items()):
        return None
    expanded = {key: value.replace("c", "kx").replace("d", "etx") for key, value in acl.items()}
    return {key: "".join(letter for letter in ORDER if letter in value) for key, value in expanded.items()}


def text_of(document_strategy):
    """Valid JSON of the document, or the same damaged: cut, with garbage appended, single-quoted, or random text."""
    return st.one_of(
        document_strategy.map(lambda d: json.dumps(d)),
        st.tuples(document_strategy, st.integers(min_value=0, max_value=60)).map(lambda t: json.dumps(t[0])[: t[1]]),
        document_strategy.map(lambda d: json.dumps(d) + " trailing"),
        document_strategy.map(lambda d: json.dumps(d).replace('"', "'")),
        st.text(max_size=80),
        st.just("[" * 50_000),  # deeper than any parser's recursion
        st.none(),
    )


def _parse(text, generation):
    TRIED["count"] += 1
    try:
        return parse_acl(text, generation)
    except MalformedTruth:
        return None


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.sampled_from(["3.9", "3.5"]).flatmap(
        lambda g: st.tuples(st.just(g), text_of(event() if g == "3.9" else legacy()))
    )
)
def test_acl_parser_reads_or_reports_never_crashes(case):
    generation, text = case
    read = _parse(text, generation)
    if read is not None:
        assert isinstance(read, dict) and all(
            isinstance(key, str) and isinstance(value, str) for key, value in read.items()
        )
        assert acl_problem(text, generation) is None
    else:
        assert isinstance(acl_problem(text, generation), str)


@settings(max_examples=300)
@given(entries.filter(lambda e: all(isinstance(v, str) for v in e.values())))
def test_a_well_formed_event_is_read_exactly_as_james_reads_it(acl):
    text = json.dumps({"eventId": 3, "type": "acl-updated", "aclDiff": {"newAcl": {"entries": acl}}})
    assert _parse(text, "3.9") == james_reading(acl)
    assert _parse(json.dumps({"entries": acl}), "3.5") == james_reading(acl)
    assert _parse(json.dumps({"entries": acl, "version": 1}), "3.5") is None


@settings(max_examples=500)
@given(st.text(alphabet="aeiklprstwxcd", max_size=20) | st.text(max_size=20))
def test_rights_are_james_letters_in_order(text):
    TRIED["count"] += 1
    try:
        canonical = james_rights(text)
    except MalformedTruth:
        assert set(text) - set(ORDER + "cd")
        return
    assert canonical == james_reading({"k": text})["k"]
    assert james_rights(canonical) == canonical


keywords = st.sets(st.text(min_size=1, max_size=40), max_size=40)


def _distinct_keywords(seed: int, count: int = 2_000) -> set[str]:
    random = Random(seed)
    drawn: set[str] = set()
    while len(drawn) < count:
        drawn.add("".join(random.choices("abc$", k=random.randint(1, 12))))
    return drawn


# A message with 2,000 user flags, drawn from a seed: hypothesis drawing them one by one as a set of distinct strings
# took about 0.1 s an example (13 s of the suite).
many_keywords = st.integers(min_value=0).map(_distinct_keywords)


@settings(max_examples=200)
@given(keywords, st.randoms(use_true_random=False))
def test_keyword_sets_compare_by_content_whatever_their_order_or_emptiness(flags, random):
    _compare_shuffled(flags, random)


@settings(max_examples=50)
@given(many_keywords, st.randoms(use_true_random=True))
def test_thousands_of_keywords_compare_by_content_whatever_their_order(flags, random):
    _compare_shuffled(flags, random)


def _compare_shuffled(flags, random):
    TRIED["count"] += 1
    shuffled = list(flags)
    random.shuffle(shuffled)
    row = {"mailboxid": "m", "uid": 1, "userflags": flags or None}
    same = {"mailboxid": "m", "uid": 1, "userflags": frozenset(shuffled)}
    assert comparable(row, ("mailboxid", "uid", "userflags")) == comparable(same, ("mailboxid", "uid", "userflags"))
    assert _flags({"userflags": flags or None}) == set(flags)
    assert _flags(None) == set()


def generated(strategy, count: int) -> list:
    """`count` examples of a strategy, drawn by hypothesis (for a test that runs them all through Spark at once)."""
    drawn = []

    @settings(max_examples=count, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(value):
        drawn.append(value)

    collect()
    return drawn


def test_spark_scan_and_python_recheck_agree_on_what_is_readable(spark):
    """The same hostile ACLs through the scan's `acl_state` and the re-check's `parse_acl`: same verdict per mailbox,
    same entries when readable (a scan more lenient than the re-check planned deletions it could not carry out)."""
    for generation, strategy in (("3.9", event()), ("3.5", legacy())):
        texts = generated(text_of(strategy), 400)
        rows = [(f"00000000-0000-1000-8000-{i:012d}", i, t) for i, t in enumerate(texts)]
        if generation == "3.9":
            frame = spark.createDataFrame(rows, "aggregateid string, eventid int, event string")
        else:
            frame = spark.createDataFrame([(r[0], r[2]) for r in rows], "id string, acl string")
        for state in acl_state(frame, generation).collect():
            text = texts[int(state["mailbox"][-12:])]
            read = _parse(text, generation)
            assert (state["problem"] is None) == (read is not None), (text, state["problem"], read)
            if read is not None:
                assert dict(state["entries"]) == read, text


def test_zz_print_how_many_malformed_inputs_were_tried():
    print(f"\nparsers fuzzed with {TRIED['count']} generated inputs")
