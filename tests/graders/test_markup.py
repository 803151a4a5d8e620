"""Native gleu and markup graders: contains-html, is-html, is-xml, contains-xml (and not-)."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from coalmine.graders.base import GradeContext, registry
from coalmine.graders.markup import html_found
from coalmine.graders.overlap import gleu_score
from coalmine.results import Grade


def grade(name: str, config: dict[str, Any], output: str) -> Grade:
    item = registry.get(name)
    parsed = item.config.model_validate(config)
    return anyio.run(item.grade, parsed, output, GradeContext(case_id="c", prompt="p"))


def test_gleu_hand_computed() -> None:
    # 1..4-grams of "the cat sat on the mat" vs "the cat sat on a mat": matches 5 + 3 + 2 + 1
    # = 11 of 6 + 5 + 4 + 3 = 18 on each side, so precision = recall = 11/18
    assert gleu_score("the cat sat on the mat", ["the cat sat on a mat"]) == pytest.approx(11 / 18)
    # "the cat" vs "the cat sat": matches 2 + 1 = 3 of 3 (output) and 6 (reference): min(1, 0.5)
    assert gleu_score("the cat", ["the cat sat"]) == pytest.approx(0.5)
    # equal once lower-cased and stripped of trailing dots; the best reference counts
    assert gleu_score("The cat.", ["a dog", "the cat"]) == 1.0
    assert gleu_score("x", ["y"]) == 0.0


def test_gleu_grader_threshold_and_not_form() -> None:
    passed = grade("gleu", {"value": "the cat sat on a mat"}, "the cat sat on the mat")
    assert passed.passed is True and passed.score == pytest.approx(11 / 18)
    failed = grade("gleu", {"value": "the cat sat on a mat", "threshold": 0.7}, "the cat sat")
    assert failed.passed is False
    inverted = grade("not-gleu", {"value": "the cat"}, "the cat")
    assert (inverted.passed, inverted.score) == (False, 0.0)
    assert grade("gleu", {"value": "x"}, "   ").score == 0.0


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("<div>hi</div>", True),  # opening + closing (2) and a common element (2)
        ("<custom-tag>x</custom-tag>", True),  # opening + closing
        ("a &amp; b", False),  # one sign only
        ("<b>bold</b>", True),
        ("x < y and y > z", False),
        ("<!DOCTYPE html>", True),
        ("<br/>", True),  # self-closing (1) and a common element (2)
        ("plain text", False),
    ],
)
def test_contains_html_is_promptfoos_heuristic(text: str, found: bool) -> None:
    assert html_found(text) is found
    assert grade("contains-html", {}, text).passed is found
    assert grade("not-contains-html", {}, text).passed is not found


@pytest.mark.parametrize(
    ("text", "ok"),
    [
        ("<div><p>a</p><img src=x></div>", True),
        ("  <ul><li>1</li></ul>\n", True),
        ("<my-widget></my-widget>", True),
        ("Hello <b>x</b>", False),
        ("<p>a</p> trailing", False),
        ("<?xml version='1.0'?><a/>", False),
        ("<foo>bar</foo>", False),
        ("", False),
    ],
)
def test_is_html(text: str, ok: bool) -> None:
    assert grade("is-html", {}, text).passed is ok
    assert grade("not-is-html", {}, text).passed is not ok


def test_is_xml_with_required_paths() -> None:
    order = "<order><items><item>a</item></items><total>3</total></order>"
    assert grade("is-xml", {}, order).passed is True
    assert grade("is-xml", {"value": "order.items.item, order.total"}, order).passed is True
    missing = grade("is-xml", {"value": ["order.missing"]}, order)
    assert missing.passed is False and "order.missing" in missing.explain()
    assert grade("is-xml", {}, "<a><b></a>").passed is False
    assert grade("is-xml", {}, "text <a/>").passed is False
    assert grade("not-is-xml", {}, "no xml").passed is True


def test_contains_xml_finds_an_element_in_text() -> None:
    text = "Here: <note><to>Tove</to></note> and <broken><a></broken>"
    assert grade("contains-xml", {"value": "note.to"}, text).passed is True
    assert grade("contains-xml", {"value": "note.body"}, text).passed is False
    assert grade("contains-xml", {}, "<x><x>inner</x></x>").passed is True
    assert grade("contains-xml", {}, "none at all").passed is False
    assert grade("not-contains-xml", {}, "a <b/> c").passed is False
