"""Files read with promptfoo's JavaScript semantics: JSON text, CSV, globs, file:// values."""

from __future__ import annotations

import base64
import datetime as dt
from pathlib import Path
from typing import Any

import pytest

from coalmine.promptfoo.matrix.csvtests import read_csv_rows
from coalmine.promptfoo.matrix.filerefs import (
    dereference,
    load_file_ref,
    load_file_refs,
    load_var_file,
    render_env,
)
from coalmine.promptfoo.matrix.sources import (
    Problems,
    ReadError,
    expand_braces,
    glob_files,
    has_magic,
    js_keys,
    js_slice,
    js_stringify,
    load_yaml_text,
)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1, "1"),
        (1.0, "1"),
        (-0.0, "0"),
        (0.1, "0.1"),
        (1e-7, "1e-7"),
        (1.5e-6, "0.0000015"),
        (1e21, "1e+21"),
        (1.2345678901234568e20, "123456789012345680000"),
        (float("nan"), "null"),
        ({"b": 1, "10": 2, "2": 3, "a": [True, None]}, '{"2":3,"10":2,"b":1,"a":[true,null]}'),
        ("é\n", '"é\\n"'),
        (dt.date(2024, 1, 2), '"2024-01-02T00:00:00.000Z"'),
    ],
)
def test_json_stringify_as_javascript(value: Any, text: str) -> None:
    assert js_stringify(value) == text


def test_javascript_key_order_and_slices() -> None:
    assert js_keys({"x": 0, "3": 0, "01": 0, "1": 0}) == ["1", "3", "x", "01"]
    assert js_slice("héllo wörld", 4) == "héll"
    assert js_slice("a😀b", 2) == "a"  # half a surrogate pair is dropped


def test_yaml_dates_are_empty_objects_in_a_config_and_kept_in_a_var_file() -> None:
    text = "day: 2024-05-01\nat: 2024-05-01T10:20:30Z\nquoted: '2024-05-01'\nlist: [1999-09-09]\n"
    assert load_yaml_text(text, path=Path("c.yaml")).data == {
        "day": {}, "at": {}, "quoted": "2024-05-01", "list": [{}],
    }  # fmt: skip
    kept = load_yaml_text(text, path=Path("v.yaml"), dates=True).data
    assert js_stringify(kept) == (
        '{"day":"2024-05-01T00:00:00.000Z","at":"2024-05-01T10:20:30.000Z",'
        '"quoted":"2024-05-01","list":["1999-09-09T00:00:00.000Z"]}'
    )


def test_yaml_keeps_lines_and_rejects_two_documents() -> None:
    doc = load_yaml_text("a:\n  - x\n  - y: 1\n", path=Path("f.yaml"))

    assert doc.lines == {("a",): 1, ("a", 0): 2, ("a", 1): 3, ("a", 1, "y"): 3}
    assert doc.line_of(("a", 1, "y", "deeper")) == 3
    with pytest.raises(ReadError, match="expected a single document"):
        load_yaml_text("a: 1\n---\nb: 2\n", path=Path("f.yaml"))
    with pytest.raises(ReadError, match="duplicated mapping key 'a'") as caught:
        load_yaml_text("a: 1\na: 2\n", path=Path("f.yaml"))
    assert caught.value.line == 2


def test_csv_rows_as_csv_parse_reads_them() -> None:
    problems = Problems()
    text = '\ufeffq,a\n"multi\nline",1\n\nx,"quoted ""a"""\nshort\n"a,b",2\n'

    rows = read_csv_rows(text, path=Path("t.csv"), problems=problems)

    assert [(r.line, r.cells) for r in rows] == [
        (2, {"q": "multi\nline", "a": "1"}),
        (5, {"q": "x", "a": 'quoted "a"'}),
        (7, {"q": "a,b", "a": "2"}),
    ]
    assert [str(e) for e in problems.errors] == [
        "t.csv:4: Invalid Record Length: columns length is 2, got 1",
        "t.csv:6: Invalid Record Length: columns length is 2, got 1",
    ]


def test_a_one_column_csv_reads_an_empty_line_as_an_empty_cell() -> None:
    rows = read_csv_rows("q\n\nx\n", path=Path("t.csv"), problems=Problems())

    assert [r.cells for r in rows] == [{"q": ""}, {"q": "x"}]


@pytest.mark.parametrize(
    ("pattern", "magic"),
    [
        ("p/*.txt", True),
        ("p/?.txt", True),
        ("p/[ab].txt", True),
        ("p/{a,b}.txt", True),
        ("p/{a}.txt", False),
        ("Hello {{name}}", False),
        ("p/a.txt", False),
        ("p/@(a|b).txt", True),
    ],
)
def test_glob_magic(pattern: str, magic: bool) -> None:
    assert has_magic(pattern) is magic


def test_brace_expansion() -> None:
    assert expand_braces("a/{b,c{d,e}}/{x,y}") == [
        "a/b/x",
        "a/b/y",
        "a/cd/x",
        "a/cd/y",
        "a/ce/x",
        "a/ce/y",
    ]


def test_globs_match_in_node_globs_order(tmp_path: Path) -> None:
    # node-glob 13 (promptfoo's) on this tree gives these orders: each folder's entries from
    # the end of the byte-sorted listing, a folder's matches before its subfolders', and
    # brace alternatives as written
    names = ["c/one.yaml", "c/two.yaml", "c/B.yaml", "c/10.yaml", "c/9.yaml", "c/_u.yaml",
             "c/a/x.yaml", "c/a/y.yaml", "c/b/z.yaml", "c/b/d/w.yaml"]  # fmt: skip
    _files(tmp_path, dict.fromkeys(names, ""))
    assert glob_files("c/*.yaml", root=tmp_path) == [
        "c/two.yaml", "c/one.yaml", "c/_u.yaml", "c/B.yaml", "c/9.yaml", "c/10.yaml",
    ]  # fmt: skip
    assert glob_files("c/**/*.yaml", root=tmp_path)[-4:] == [
        "c/b/z.yaml", "c/b/d/w.yaml", "c/a/y.yaml", "c/a/x.yaml",
    ]  # fmt: skip
    assert glob_files("c/*", root=tmp_path)[:4] == ["c/two.yaml", "c/one.yaml", "c/b", "c/a"]
    assert glob_files("c/{one,t*,*}.yaml", root=tmp_path)[:3] == [
        "c/one.yaml", "c/two.yaml", "c/_u.yaml",
    ]  # fmt: skip
    assert glob_files("c/../c/a/*.yaml", root=tmp_path) == ["c/a/y.yaml", "c/a/x.yaml"]


def _files(tmp_path: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            (tmp_path / name).write_bytes(content)
        else:
            (tmp_path / name).write_text(content, encoding="utf-8")
    return tmp_path


def test_file_values_load_by_type(tmp_path: Path) -> None:
    base = _files(
        tmp_path,
        {
            "t.txt": " text \n",
            "d.json": '{"k": [1, 2.0]}',
            "d.yaml": "k: yes\n",
            "one.csv": "name\nann\nbob\n",
            "two.csv": "a,b\n1,2\n",
            "many/1.json": "[1, 2]",
            "many/2.yaml": "three: 3\n",
        },
    )

    def load(ref: str) -> Any:
        return load_file_ref(ref, base_dir=base)

    assert load("file://t.txt") == " text \n"
    assert load("file://d.json") == {"k": [1, 2]}
    assert load("file://d.yaml") == {"k": "yes"}
    assert load("file://one.csv") == ["ann", "bob"]
    assert load("file://two.csv") == [{"a": "1", "b": "2"}]
    assert sorted(map(str, load("file://many/*"))) == ["1", "2", "{'three': 3}"]
    assert load("file://check.py:fn") == "file://check.py:fn"
    assert load("not a ref") == "not a ref"
    with pytest.raises(ReadError, match="File does not exist"):
        load("file://missing.txt")


def test_file_values_under_vars_and_code_assertions_stay_references(tmp_path: Path) -> None:
    base = _files(tmp_path, {"x.txt": "X", "c.py": "code"})
    data = {
        "vars": {"a": "file://x.txt", "nested": {"b": "file://x.txt"}},
        "assert": [
            {"type": "python", "value": "file://c.py"},
            {"type": "javascript", "value": "file://x.txt"},
            {"type": "equals", "value": "file://x.txt"},
        ],
        "options": {"rubricPrompt": "file://x.txt"},
    }

    loaded = load_file_refs(data, base_dir=base)

    assert loaded == {
        "vars": {"a": "file://x.txt", "nested": {"b": "file://x.txt"}},
        "assert": [
            {"type": "python", "value": "file://c.py"},
            {"type": "javascript", "value": "X"},
            {"type": "equals", "value": "X"},
        ],
        "options": {"rubricPrompt": "X"},
    }


def test_var_files_render_as_promptfoo_renders_them(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n" + b"\x00" * 8
    base = _files(
        tmp_path,
        {
            "t.txt": "  text \n",
            "d.json": ' {"a": 1} \n',
            "d.yaml": "a: [1, two]\nb: {c: 1.0}\n",
            "img.jpg": png,
            "clip.mp3": b"ID3",
            "gen.py": "def get_var(): ...",
        },
    )

    def var(name: str) -> str:
        return load_var_file(f"file://{name}", base_dir=base)

    assert var("t.txt") == "text"
    assert var("d.json") == '{"a": 1}'  # JSON stays text
    assert var("d.yaml") == '{"a":[1,"two"],"b":{"c":1}}'
    # the bytes say PNG: that wins over the .jpg extension
    assert var("img.jpg") == "data:image/png;base64," + base64.b64encode(png).decode()
    assert var("clip.mp3") == base64.b64encode(b"ID3").decode()
    with pytest.raises(ReadError, match="code promptfoo runs"):
        var("gen.py")


def test_refs() -> None:
    data = {"defs": {"a": {"type": "contains", "value": "x"}}, "list": [{"$ref": "#/defs/a"}]}

    assert dereference(data)["list"] == [{"type": "contains", "value": "x"}]
    with pytest.raises(ReadError, match="circular"):
        dereference({"a": {"$ref": "#/a"}})
    with pytest.raises(ReadError, match="outside this file"):
        dereference({"a": {"$ref": "other.yaml#/x"}})
    skip = frozenset({("schema",)})
    assert dereference({"schema": {"$ref": "#/x"}}, skip=skip) == {"schema": {"$ref": "#/x"}}


def test_env_templates() -> None:
    unrendered: list[str] = []
    value = {
        "a": "{{env.A}}-{{ env['B'] }}",
        "b": ["{{ env.MISSING }}", '{{ env.MISSING | default("d") }}'],
        "c": "{{ vars.x }} {{ env.A | lower }}",
        "_conversation": "{{ env.A }}",
    }

    rendered = render_env(value, {"A": "1", "B": "2"}, unrendered=unrendered)

    assert rendered == {
        "a": "1-2",
        "b": ["{{ env.MISSING }}", "d"],
        "c": "{{ vars.x }} {{ env.A | lower }}",
        "_conversation": "{{ env.A }}",
    }
    assert unrendered == ["{{ env.A | lower }}"]
