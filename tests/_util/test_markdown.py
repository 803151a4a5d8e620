"""Untrusted text in markdown reads as written: rendered by a CommonMark parser with GFM tables."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

from coalmine._util.markdown import md_code, md_text

HOSTILE = [
    "<script>alert(1)</script>",
    '<img src=x onerror="alert(1)">',
    "line one\n- injected item\n# injected heading\n\n| a | b |\n|---|---|",
    "a | b || c",
    "```\ncode\n```",
    "~~~\nfence\n~~~",
    "`tick` ``two`` ```",
    "[link](javascript:alert(1)) ![img](http://x.example/y.png) [ref]: http://x",
    "**bold** __strong__ _em_ *em* ~~strike~~ snake_case_name",
    "&lt;script&gt; &#60;b&#62; &amp; R&D 0.45 < 0.70 > x",
    "\x1b[31mred\x1b[0m and a \x00 null",
    "<!-- comment --> <?php ?> <https://evil.example> <a@b.example>",
    "> quote",
    "1. item",
    "2) item",
    "---",
    "- - -",
    "***",
    "___",
    "#not-a-heading # heading",
    "+ plus",
    "trailing backslash \\",
    "    indented code",
    "\\*not emphasis\\*",
]

parser = MarkdownIt("commonmark", {"html": True}).enable("table").enable("strikethrough")


def leaves(tokens: list[Token]) -> list[Token]:
    out = []
    for token in tokens:
        out.append(token)
        out += leaves(token.children or [])
    return out


def read(source: str) -> list[str]:
    """What each paragraph or cell of ``source`` reads as, once rendered."""
    return [
        "".join(c.content for c in t.children or [])
        for t in parser.parse(source)
        if t.type == "inline"
    ]


def flat(text: str) -> str:
    """What a line of ``text`` must read as: whitespace runs as one space, controls shown."""
    return "".join(
        f"\\x{ord(c):02x}" if ord(c) < 32 or 127 <= ord(c) < 160 else c
        for c in " ".join(text.split())
    )


@pytest.mark.parametrize("text", HOSTILE)
def test_text_renders_as_itself_on_one_line_with_no_markup(text: str) -> None:
    source = f"- before {md_text(text)} after\n- {md_text(text)}\n"
    kinds = {t.type for t in leaves(parser.parse(source))}
    assert kinds <= {"bullet_list_open", "bullet_list_close", "list_item_open",
                     "list_item_close", "paragraph_open", "paragraph_close", "inline",
                     "text"}, kinds  # fmt: skip
    assert read(source) == [f"before {flat(text)} after", flat(text)]  # two items, whole


@pytest.mark.parametrize("text", HOSTILE)
def test_a_table_cell_holds_the_text_whole(text: str) -> None:
    source = f"| A | B |\n|---|---|\n| {md_text(text)} | x |\n"
    kinds = [t.type for t in leaves(parser.parse(source))]
    assert kinds.count("td_open") == 2 and kinds.count("tr_open") == 2
    assert not any(k.startswith(("html", "link", "image", "code", "em", "strong", "s_"))
                   for k in kinds)  # fmt: skip
    assert read(source) == ["A", "B", flat(text), "x"]


@pytest.mark.parametrize("text", [*HOSTILE, "`", "``", "a`b", "` padded `"])
def test_a_code_span_cannot_be_closed_by_its_content(text: str) -> None:
    tokens = leaves(parser.parse(f"- see {md_code(text)} here\n"))
    codes = [t for t in tokens if t.type == "code_inline"]
    assert len(codes) == 1
    assert codes[0].content == flat(text)
    assert not any(t.type.startswith("html") for t in tokens)
