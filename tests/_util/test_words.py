from coalmine._util.words import counted


def test_a_count_takes_its_noun_in_the_right_number() -> None:
    assert [counted(n, "canary", "canaries") for n in (0, 1, 2)] == [
        "0 canaries",
        "1 canary",
        "2 canaries",
    ]
