"""``prompts:`` expanded and labelled as promptfoo 0.121.20 does (labels checked against a run)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from coalmine.errors import ConfigError
from coalmine.promptfoo.matrix import load_matrix
from coalmine.promptfoo.matrix.prompt_refs import csv_prompts, maybe_file_path, split_prompt_text

FIXTURES = Path(__file__).parent / "fixtures" / "matrix"


def _config(tmp_path: Path, prompts: str, files: dict[str, str] | None = None) -> Path:
    for name, text in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    path = tmp_path / "promptfooconfig.yaml"
    path.write_text(f"prompts:\n{prompts}\nproviders: [echo]\n", encoding="utf-8")
    return path


def test_every_prompt_form_gets_promptfoos_label() -> None:
    matrix = load_matrix(FIXTURES / "run_prompt_files" / "promptfooconfig.yaml")

    assert [(p.label, p.raw) for p in matrix.prompts] == [
        ("Inline {{x}}", "Inline {{x}}"),
        ("prompts/two.txt: First {{x}}", "First {{x}}"),
        ("prompts/two.txt: Second\n{{x}}", "Second\n{{x}}"),
        ("Two: prompts/two.txt: First {{x}}", "First {{x}}"),
        ("Two: prompts/two.txt: Second\n{{x}}", "Second\n{{x}}"),
        (
            "prompts/long.md: # Markdown prompt about {{x}} that is long enough ...",
            "# Markdown prompt about {{x}} that is long enough to be cut in its label\n",
        ),
        (
            'prompts/chat.json: [{"role":"system","content":"Be brief"},'
            '{"role":"user","content":"{{x}}"}]',
            '[{"role":"system","content":"Be brief"},{"role":"user","content":"{{x}}"}]',
        ),
        (
            'prompts/lines.jsonl: [{"role":"user","content":"L1 {{x}}"}]',
            '[{"role":"user","content":"L1 {{x}}"}]',
        ),
        (
            'prompts/lines.jsonl: [{"role":"user","content":"L2 {{x}}"}]',
            '[{"role":"user","content":"L2 {{x}}"}]',
        ),
        ("prompts/one.jsonl", '[{"role":"user","content":"only {{x}}"}]'),
        ("CsvLabel", "Csv {{x}}"),
        ("Prompt 2 - Csv two {{x}}", "Csv two {{x}}"),
        (
            'prompts/chat.yaml: [{"role":"user","content":"Yaml {{x}}"}]',
            '[{"role":"user","content":"Yaml {{x}}"}]',
        ),
        ("glob/only.txt: Only {{x}}", "Only {{x}}"),
        ("Custom", "Custom {{x}}"),
    ]
    assert [p.index for p in matrix.prompts] == list(range(15))
    assert [p.id for p in matrix.prompts if p.id] == ["my-id"]
    assert [p.line for p in matrix.prompts][:4] == [3, 4, 4, 5]


def test_a_text_file_splits_on_lines_that_are_three_dashes() -> None:
    text = "One\r\n  ---  \r\n\r\n---\nTwo\n--- not a separator\n----\nThree\n"

    assert split_prompt_text(text) == ["One", "Two\n--- not a separator\n----\nThree"]


def test_a_csv_of_prompts() -> None:
    assert csv_prompts("prompt,label\n a {{x}} , A\nb {{x}},\n,skipped\n", None) == [
        {"raw": "a {{x}}", "label": "A"},
        {"raw": "b {{x}}", "label": "Prompt 2 - b {{x}}"},
    ]
    assert csv_prompts("prompt\nfirst\n\nsecond\n", "L") == [
        {"raw": "first", "label": "L"},
        {"raw": "second", "label": "L"},
    ]


def test_a_glob_loses_the_label_given_to_it(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        "  file://p/*.txt: Ignored\n  file://none/*.txt: Kept",
        {"p/a.txt": "A", "p/b.txt": "B"},
    )

    prompts = load_matrix(path).prompts

    assert sorted(p.label for p in prompts[:2]) == ["p/a.txt: A", "p/b.txt: B"]
    assert (prompts[2].raw, prompts[2].label) == ("file://none/*.txt", "Kept")


def test_the_map_form_labels_each_prompt(tmp_path: Path) -> None:
    path = _config(
        tmp_path, "  file://a.txt: FromFile\n  'Hi {{x}}': Greeting", {"a.txt": "A\n---\nB"}
    )

    prompts = load_matrix(path).prompts

    assert [p.label for p in prompts] == ["FromFile: a.txt: A", "FromFile: a.txt: B", "Greeting"]


@pytest.mark.parametrize(
    ("text", "is_file"),
    [
        ("Hello {{name}}", False),
        ("What is the capital of {{country}}?", False),
        ("prompt.txt", True),
        ("file://anything", True),
        ("Compute 1/2 for {{x}}", True),  # a slash: promptfoo takes it for a path
        ("Upgrade to version 1.23", True),  # a dot 3rd or 4th from the end
        ("Line one\nLine 2/3", False),  # a newline: never a path
        ("Say hi.", False),
    ],
)
def test_which_strings_promptfoo_takes_for_files(text: str, is_file: bool) -> None:
    assert maybe_file_path(text) is is_file


def test_an_inline_prompt_promptfoo_takes_for_a_missing_file_is_an_error(tmp_path: Path) -> None:
    path = _config(tmp_path, "  - 'Compute 1/2 for {{x}}'")

    with pytest.raises(ConfigError) as caught:
        load_matrix(path)

    assert str(caught.value) == f'{path}:2: There are no prompts in "Compute 1/2 for {{{{x}}}}"'


def test_prompt_objects_need_raw_and_label_or_an_id(tmp_path: Path) -> None:
    path = _config(tmp_path, "  - raw: 'Hi'\n  - label: only a label")

    with pytest.raises(ConfigError) as caught:
        load_matrix(path)

    assert str(caught.value).splitlines()[1:] == [
        f"  {path}:2: Invalid prompt object: {{\"raw\":\"Hi\"}} (give 'raw' and 'label')",
        f"  {path}:3: Invalid prompt object: {{\"label\":\"only a label\"}} (give 'raw' and 'label')",
    ]


def test_empty_prompts_are_an_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="You must provide at least 1 prompt"):
        load_matrix(_config(tmp_path, "  []"))


def test_code_prompts_are_kept_as_data(tmp_path: Path) -> None:
    files = {"gen.py": "def make(context):\n    return 'x'\n", "run.sh": "echo hi\n"}
    path = _config(tmp_path, "  - file://gen.py:make\n  - file://gen.py\n  - exec:run.sh", files)

    prompts = load_matrix(path).prompts

    assert [(p.kind, p.label, p.function) for p in prompts] == [
        ("function", "gen.py:make", "gen.py:make"),
        ("function", "gen.py: def make(context):\n    return 'x'\n", "gen.py"),
        ("exec", "run.sh", "run.sh"),
    ]
    assert prompts[2].raw == "echo hi\n"


def test_an_executable_prompts_command_is_read_as_a_path_as_promptfoo_reads_it(
    tmp_path: Path,
) -> None:
    # labels as promptfoo 0.121.20 gave them, run from the config's folder: the command after
    # exec: is normalised as a path (so ./gen.sh loses its ./, and is then looked up on PATH)
    files = {"gen.sh": "#!/bin/sh\necho hi\n", "tools/x.py": "print(1)\n"}
    prompts = (
        "  - exec:./gen.sh first\n"
        "  - 'exec: ./gen.sh spaced'\n"
        "  - exec:python3 tools/./x.py 'two words'\n"
        "  - exec:file://tools/../gen.sh\n"
        "  - id: exec:./gen.sh\n"
        "    label: mine\n"
        "    config: {timeout: 5}"
    )

    found = load_matrix(_config(tmp_path, prompts, files)).prompts

    assert [(p.kind, p.label, p.function) for p in found] == [
        ("exec", "gen.sh first", "gen.sh first"),
        ("exec", " ./gen.sh spaced", " ./gen.sh spaced"),
        ("exec", "python3 tools/x.py 'two words'", "python3 tools/x.py 'two words'"),
        ("exec", "gen.sh", "gen.sh"),
        ("exec", "mine", "gen.sh"),
    ]
    # the raw text is the script's when the command's first word is a readable file
    assert [p.raw for p in found] == [
        "#!/bin/sh\necho hi\n",
        "#!/bin/sh\necho hi\n",
        "python3 tools/x.py 'two words'",
        "#!/bin/sh\necho hi\n",
        "#!/bin/sh\necho hi\n",
    ]
    assert found[4].config == {"timeout": 5}


def test_the_output_id_is_the_sha256_of_the_label(tmp_path: Path) -> None:
    prompt = load_matrix(_config(tmp_path, "  - id: mine\n    label: L\n    raw: R")).prompts[0]

    assert prompt.id == "mine"
    assert prompt.output_id == hashlib.sha256(b"L").hexdigest()
