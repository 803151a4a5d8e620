"""Which config values are secrets; they are scrubbed whole, and where an excerpt cut one."""

from __future__ import annotations

from coalmine._util.secrets import (
    conceal,
    config_secrets,
    redact,
    redact_data,
    redact_encoded,
    redact_model,
    secret_digest,
    sensitive_header,
    sensitive_name,
)
from coalmine.graders.text import EqualsConfig, score_equals

KEY = "sk-live-0123456789abcdef"


def test_a_whole_secret_and_a_short_one() -> None:
    assert redact(f"key={KEY}; again {KEY}", [KEY]) == "key=***; again ***"
    assert redact("abc", ["abc"]) == "abc"  # under 4 characters: too common to scrub


def test_the_start_or_end_of_a_secret_at_a_cut_is_scrubbed() -> None:
    assert redact(f"…uses {KEY[:12]}…", [KEY]) == "…uses ***…"
    assert redact(f"…{KEY[-9:]} was sent", [KEY]) == "…*** was sent"
    assert redact(f"…{KEY[:3]}…", [KEY]) == f"…{KEY[:3]}…"  # 3 characters say nothing
    assert redact(f"{KEY[:12]} and more", [KEY]) == f"{KEY[:12]} and more"  # not at a cut


def test_an_equals_reason_whose_excerpt_cuts_a_secret_keeps_none_of_it() -> None:
    # the first difference is at 0, so the excerpt is the output's first 40 characters: the
    # 31 before the key, then the key's first 9, then the cut
    output = "B" + "y" * 30 + KEY + " and a tail"
    grade = score_equals(output, EqualsConfig(value="A" * 50))
    assert f"{KEY[:9]}…" in grade.explain()  # the excerpt quotes the start of the key …
    scrubbed = redact_model(grade, [KEY])
    dumped = scrubbed.model_dump_json()
    assert "***…" in scrubbed.explain()
    assert all(KEY[i : i + 4] not in dumped for i in range(len(KEY) - 3))  # … and none is kept


# -- which config values are secrets ----------------------------------------------------------


def test_every_env_value_of_a_header_or_env_entry_is_a_secret() -> None:
    entry = {
        "argv": ["agent", "--model", "m-from-env"],
        "env": {"OPENAI_API_KEY": "sk-from-env-1", "MODE": "fast-from-env"},
        "headers": {"X-Org": "org-from-env-2"},
        "model": "m-from-env",
    }
    substituted = [
        (("argv", 2), "m-from-env"),
        (("env", "OPENAI_API_KEY"), "sk-from-env-1"),
        (("env", "MODE"), "fast-from-env"),
        (("headers", "X-Org"), "org-from-env-2"),
        (("model",), "m-from-env"),
    ]
    found = config_secrets(entry, substituted)
    assert sorted(found) == ["fast-from-env", "org-from-env-2", "sk-from-env-1"]


def test_a_credential_header_or_env_entry_is_a_secret_even_when_written_literally() -> None:
    entry = {
        "headers": {"Authorization": "Bearer lit-bearer-1", "X-Api-Key": "lit-key-2",
                    "Cookie": "sid=lit-cookie-3", "X-Trace": "not-a-secret"},
        "env": {"SESSION_TOKEN": "lit-token-4", "TOKENIZERS_PARALLELISM": "false",
                "NO_COLOR": "1", "DB_PASSWORD": "lit-pw-5"},
    }  # fmt: skip
    found = set(config_secrets(entry, []))
    assert found == {"Bearer lit-bearer-1", "lit-bearer-1", "lit-key-2", "sid=lit-cookie-3",
                     "lit-token-4", "lit-pw-5"}  # fmt: skip


def test_a_urls_password_and_its_env_values_in_userinfo_or_query_are_secrets() -> None:
    url = "https://bot:pw-from-env@host.example/v1/agent-from-env?key=qk-from-env&q={{prompt}}"
    entry = {"url": url, "base_url": "https://h.example/v1?api_key=literal-key&lang=en-GB"}
    substituted = [(("url",), v) for v in ("pw-from-env", "agent-from-env", "qk-from-env")]
    found = set(config_secrets(entry, substituted))
    assert found == {"pw-from-env", "qk-from-env", "literal-key"}  # not the path, not en-GB


def test_names_that_mark_credentials() -> None:
    headers = ["Authorization", "x-api-key", "Api-Key", "Cookie", "X-Auth-Token", "X-Secret"]
    assert all(sensitive_header(h) for h in headers)
    assert not any(sensitive_header(h) for h in ["Content-Type", "Accept", "X-Org"])
    names = ["OPENAI_API_KEY", "GITHUB_TOKEN", "apiKey", "access_token", "PGPASSWORD", "sig"]
    assert all(sensitive_name(n) for n in names)
    assert not any(sensitive_name(n) for n in ["TOKENIZERS_PARALLELISM", "PATH", "NO_COLOR"])


# -- identities hold digests -----------------------------------------------------------------


def test_an_identity_holds_a_digest_that_changes_with_the_secret() -> None:
    identity = {"env": {"OPENAI_API_KEY": KEY}, "url": f"https://h/?key={KEY}", "n": 3}
    hidden = conceal(identity, [KEY])
    assert KEY not in repr(hidden)
    assert hidden["url"] == f"https://h/?key={secret_digest(KEY)}"
    assert hidden["n"] == 3 and hidden == conceal(identity, [KEY])
    other = KEY.replace("0", "1")
    assert conceal({"env": {"OPENAI_API_KEY": other}}, [other]) != {"env": hidden["env"]}
    assert redact_data({"a": [f"x {KEY}"], KEY: 1}, [KEY]) == {"a": ["x ***"], "***": 1}


def test_a_record_encoded_once_is_scrubbed_as_one_walked_string_by_string() -> None:
    import json
    import random

    secrets = ["sk-live-0123456789", 'quo"te\\key', "ключ-секрет"]
    pieces = [
        "plain text",
        "sk-live-0123456789",
        "…0123456789 at a cut",
        "ends sk-live-01…",
        json.dumps({"reply": 'quo"te\\key'}),
        "ключ-секрет inside",
        "tail …",
        "x" * 30,
    ]
    rng = random.Random(7)
    for _ in range(300):
        value = {
            rng.choice(pieces): [rng.choice(pieces) for _ in range(rng.randrange(4))],
            "n": rng.randrange(10),
            "nested": {"k": rng.choice(pieces), "t": (rng.choice(pieces), None, 1.5)},
        }
        value = json.loads(json.dumps(value))  # JSON-like, as records are
        clean, text = redact_encoded(value, secrets)
        assert clean == redact_data(value, secrets)
        assert text == json.dumps(clean, ensure_ascii=False)
    untouched = {"output": "nothing secret here", "grades": {"equals": {"passed": True}}}
    clean, _ = redact_encoded(untouched, secrets)
    assert clean is untouched  # a clean record is not walked, nor copied
