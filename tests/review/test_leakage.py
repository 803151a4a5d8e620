"""The leakage lint: assertion, trap and description text must not reach a graded role's prompt."""

from __future__ import annotations

import dataclasses

import pytest

from coalmine.review.leakage import STOP_WORDS, Leak, find_leaks, normalise

ASSERTION = "Flags the raw SQL string built from user input in get_user() as an injection risk."
FRAMING = "Please review this change to the user lookup before we merge it."
LIMITS = "The reviewer reports that the container spec has no cpu or memory limits set for the api."


def only(leaks: list[Leak]) -> Leak:
    assert len(leaks) == 1, leaks
    return leaks[0]


# --- normalise ---------------------------------------------------------------------------------


def test_normalise_reads_words_case_folded_with_punctuation_as_separators() -> None:
    assert normalise("Flags SQL-injection in get_user()!\n\tNow, 42 times.") == [
        "flags", "sql", "injection", "in", "get", "user", "now", "42", "times",
    ]  # fmt: skip
    assert normalise("") == normalise("  ...  ") == []


def test_normalise_unicode_matches_the_ascii_reading() -> None:
    ascii_words = normalise("Flags SQL injection in get_user(), file 7")
    assert (
        normalise("Ｆｌａｇｓ ＳＱＬ inj\u200bection in get\u2060_user(),\u00a0ﬁle ７")
        == ascii_words
    )
    assert normalise("STRASSE café") == normalise("straße cafe\u0301")  # casefold; marks compose
    assert normalise("naïve\u200d—done") == ["naïve", "done"]  # a dash separates, a joiner does not
    assert normalise("\u0915\u093f\u0924\u093e\u092c") == [
        "\u0915\u093f\u0924\u093e\u092c"
    ]  # marks stay in the word
    assert normalise("½ price") == ["1", "2", "price"]  # NFKC: 1⁄2, the fraction slash separates


# --- exact and near-exact ----------------------------------------------------------------------


def test_an_assertion_pasted_into_the_framing_is_an_exact_leak() -> None:
    prompt = f"{FRAMING} Make sure it {ASSERTION[0].lower()}{ASSERTION[1:]}"  # case differs...
    assert only(find_leaks({"assertion 1.1": ASSERTION}, {"framing": prompt})).kind == "near-exact"
    prompt = f"{FRAMING}\nChecklist: {ASSERTION}\nThanks."
    leak = only(find_leaks({"assertion 1.1": ASSERTION}, {"framing": prompt}))
    assert leak == Leak(
        source="assertion 1.1",
        role="framing",
        kind="exact",
        phrase=ASSERTION.rstrip("."),  # from the first word to the last
        length=len(normalise(ASSERTION)),
    )


def test_layout_and_surrounding_punctuation_do_not_make_a_paste_less_exact() -> None:
    wrapped = ASSERTION.rstrip(".").replace(" from ", "\n   from ").replace(" as ", "  as\t")
    leak = only(find_leaks({"a": ASSERTION}, {"reviewer": f"({wrapped})"}))
    assert (leak.kind, leak.phrase) == ("exact", ASSERTION.rstrip("."))  # collapsed to one line


def test_different_case_line_breaks_and_punctuation_make_a_near_exact_leak() -> None:
    retyped = "flags the RAW sql string,\nbuilt from user-input in `get user` as an INJECTION risk"
    leak = only(find_leaks({"assertion 1.1": ASSERTION}, {"framing": retyped}))
    assert leak.kind == "near-exact"
    assert leak.phrase == (
        "flags the RAW sql string, built from user-input in `get user` as an INJECTION risk"
    )
    assert leak.length == len(normalise(ASSERTION)) == 16


def test_zero_width_and_full_width_characters_do_not_hide_a_leak() -> None:
    secret = "Flags SQL injection"
    hidden = "Flags\u200b S\u200bQL inj\u00adection"
    leak = only(find_leaks({"trap": secret}, {"reviewer": f"note: {hidden}."}))
    assert (leak.kind, leak.phrase, leak.length) == ("exact", "Flags SQL injection", 3)
    wide = "Ｆｌａｇｓ ＳＱＬ ｉｎｊｅｃｔｉｏｎ"
    leak = only(find_leaks({"trap": secret}, {"reviewer": f"note: {wide}."}))
    assert (leak.kind, leak.phrase) == ("exact", wide)  # as the prompt has it
    leak = only(
        find_leaks(
            {"trap": "Ｆｌａｇｓ ＳＱＬ ｉｎｊｅｃｔｉｏｎ"}, {"reviewer": "flags sql injection"}
        )
    )
    assert leak.kind == "near-exact"


def test_a_short_secret_is_caught_pasted_but_not_by_part_of_its_words() -> None:
    secrets = {"assertion 2.1": "Flags SQL injection"}
    assert only(find_leaks(secrets, {"reviewer": "It: Flags SQL injection."})).kind == "exact"
    assert only(find_leaks(secrets, {"reviewer": "it FLAGS sql-injection"})).kind == "near-exact"
    assert (
        find_leaks(secrets, {"reviewer": "Is there any SQL injection here? Flags welcome."}) == []
    )


def test_a_secret_without_words_never_leaks_and_an_empty_prompt_holds_none() -> None:
    assert find_leaks({"trap": "", "description": " -- "}, {"framing": "-- anything --"}) == []
    assert find_leaks({"trap": ASSERTION}, {"framing": ""}) == []
    assert find_leaks({}, {"framing": FRAMING}) == find_leaks({"trap": ASSERTION}, {}) == []


# --- n-grams -----------------------------------------------------------------------------------


def test_a_reworded_assertion_sharing_a_long_ngram_leaks_that_run() -> None:
    framing = (
        "Deploy check: please confirm the tool reports that the container spec has no CPU or "
        "memory limits set, and say so early."
    )
    leak = only(find_leaks({"assertion 1.4": LIMITS}, {"framing": framing}))
    assert leak.kind == "ngram"
    assert leak.phrase == "reports that the container spec has no CPU or memory limits set"
    assert leak.length == 12


def test_a_reworded_assertion_sharing_only_short_phrases_does_not_leak() -> None:
    framing = (
        "This deployment adds a container for the api. Check the memory limits and the cpu "
        "requests; the container spec was written in a hurry and nobody reports on it."
    )
    assert find_leaks({"assertion 1.4": LIMITS}, {"framing": framing}) == []


def test_boilerplate_made_of_stop_words_does_not_leak() -> None:
    assert {"the", "code", "in", "diff", "of", "file", "is"} <= STOP_WORDS
    secret = "Notes that the code in the diff of the file is missing its licence header."
    prompt = "Look at whether the code in the diff of the file is formatted consistently."
    assert find_leaks({"assertion 3.1": secret}, {"reviewer": prompt}) == []


def test_an_ngram_needs_three_words_that_are_not_stop_words() -> None:
    secret = "zeta alpha beta gamma of the and in to it omega"
    three = find_leaks({"s": secret}, {"r": "q alpha beta gamma of the and in to r"})
    assert (only(three).kind, only(three).length) == ("ngram", 8)
    two = find_leaks({"s": secret}, {"r": "q beta gamma of the and in to it r"})
    assert two == []  # 8 shared words, but only beta and gamma are not stop-words


def test_min_ngram_sets_the_shortest_shared_run() -> None:
    secret = "The handler retries failed uploads forever without backoff or jitter at all."
    prompt = "Watch whether handler retries failed uploads forever without backoff here."
    assert find_leaks({"s": secret}, {"r": prompt}) == []  # a 7-word run, 8 needed
    leak = only(find_leaks({"s": secret}, {"r": prompt}, min_ngram=7))
    assert (leak.kind, leak.length) == ("ngram", 7)
    assert leak.phrase == "handler retries failed uploads forever without backoff"
    with pytest.raises(ValueError, match="min_ngram must be at least 1, not 0"):
        find_leaks({"s": secret}, {"r": prompt}, min_ngram=0)


def test_the_longest_run_wins_and_the_first_among_equals() -> None:
    secret = "one alpha beta gamma delta epsilon zeta eta theta two iota kappa lambda mu nu xi omicron pi rho three"
    prompt = (
        "x alpha beta gamma delta epsilon zeta eta theta y "
        "iota kappa lambda mu nu xi omicron pi rho z "
        "alpha beta gamma delta epsilon zeta eta theta"
    )
    leak = only(find_leaks({"s": secret}, {"r": prompt}))
    assert (leak.phrase, leak.length) == ("iota kappa lambda mu nu xi omicron pi rho", 9)
    leak = only(find_leaks({"s": secret.replace(" rho", "")}, {"r": prompt}))
    assert leak.phrase == "alpha beta gamma delta epsilon zeta eta theta"


def test_a_long_phrase_is_cut_to_120_characters() -> None:
    secret = " ".join(f"word{i:03d}" for i in range(40))  # 319 characters
    leak = only(find_leaks({"trap": secret}, {"reviewer": f"see {secret} end"}))
    assert (leak.kind, leak.length) == ("exact", 40)
    assert len(leak.phrase) == 120
    assert leak.phrase == secret[:119] + "…"


def test_a_leak_deep_in_a_large_prompt_is_found() -> None:
    filler = " ".join(f"token{i % 997} and the code" for i in range(3_000))  # ~60 KB
    prompts = {"reviewer": f"{filler} {LIMITS} {filler}", "resolver": filler}
    assert only(find_leaks({"assertion 1.4": LIMITS}, prompts)).role == "reviewer"


# --- one leak per (role, source), sorted -------------------------------------------------------


def test_one_leak_per_role_and_source_the_strongest_kind() -> None:
    secrets = {"a": ASSERTION}
    retyped = ASSERTION.upper()
    reworded = "It flags the raw SQL string built from user input in a helper, maybe."
    both = f"{reworded} {retyped} {ASSERTION}"  # ngram, near-exact, then exact
    assert only(find_leaks(secrets, {"reviewer": both})).kind == "exact"
    leak = only(find_leaks(secrets, {"reviewer": f"{reworded} {retyped} {retyped.lower()}"}))
    assert (leak.kind, leak.phrase) == ("near-exact", retyped.rstrip("."))  # the first one
    assert only(find_leaks(secrets, {"reviewer": reworded})).kind == "ngram"


def test_leaks_are_sorted_by_role_then_source() -> None:
    secrets = {"trap": "Misses the hardcoded AWS key", "assertion 1.2": "Flags SQL injection"}
    prompts = {
        "reviewer": "It flags sql injection; it misses the hardcoded AWS key.",
        "framing": "Misses the hardcoded AWS key? Flags SQL injection!",
        "resolver": "nothing here",
    }
    leaks = find_leaks(secrets, prompts)
    assert [(leak.role, leak.source, leak.kind) for leak in leaks] == [
        ("framing", "assertion 1.2", "exact"),
        ("framing", "trap", "exact"),
        ("reviewer", "assertion 1.2", "near-exact"),
        ("reviewer", "trap", "near-exact"),
    ]


# --- Leak --------------------------------------------------------------------------------------


def test_a_leak_reads_as_one_line_naming_role_source_and_phrase() -> None:
    leak = Leak("assertion 1.2", "reviewer", "near-exact", "flags SQL injection", 3)
    assert str(leak) == (
        'the reviewer prompt leaks assertion 1.2 (near-exact, 3 words): "flags SQL injection"'
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        leak.role = "grader"  # type: ignore[misc]
