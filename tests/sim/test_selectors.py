"""Label selectors parsed as k8s.io/apimachinery/pkg/labels parses them, refusals worded as it
words them (the conformance corpus holds kube-apiserver's answers to the same selectors)."""

from __future__ import annotations

import pytest

from jobset_infra.sim.apiserver.errors import StatusError
from jobset_infra.sim.apiserver.selectors import parse_label_selector

LABELS = {"tier": "web", "env": "prod", "rank": "3"}


@pytest.mark.parametrize(("selector", "selected"), [
    pytest.param("tier=web,env==prod", True, id="equality terms all hold"),
    pytest.param("tier!=web", False, id="inequality"),
    pytest.param("tier in (db, web)", True, id="in a set with spaces"),
    pytest.param("env notin (prod)", False, id="notin"),
    pytest.param("tier", True, id="exists"),
    pytest.param("!missing", True, id="does not exist"),
    pytest.param("rank>2,rank<4", True, id="gt and lt compare integers"),
    pytest.param("tier in (web,)", True, id="a trailing comma in a set is an empty value"),
])
def test_selectors_select(selector: str, selected: bool) -> None:
    check = parse_label_selector(selector)
    assert check is not None
    assert check({"metadata": {"labels": LABELS}}) is selected


@pytest.mark.parametrize(("selector", "message"), [
    pytest.param("tier in (web", "unable to parse requirement: found '', expected: ',' or ')'",
                 id="an unclosed set"),
    pytest.param("Bad Key=x", "unable to parse requirement: found 'Key', expected: in, notin, "
                 "=, ==, !=, gt, lt", id="a key with a space"),
    pytest.param("a in (", "unable to parse requirement: found '', expected: ',', ')' or "
                 "identifier", id="a set with nothing in it"),
    pytest.param("a=b c", "found 'c', expected: ',' or 'end of string'",
                 id="two terms without a comma"),
])
def test_unreadable_selectors_are_400_in_the_parsers_words(selector: str, message: str) -> None:
    with pytest.raises(StatusError) as err:
        parse_label_selector(selector)
    assert (err.value.code, err.value.message) == (400, message)
