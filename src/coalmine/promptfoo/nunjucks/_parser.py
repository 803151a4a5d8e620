"""Nunjucks 3.2.4's parser (``nunjucks/src/parser.js``): statements, and the whole template.

Statements are parsed as Nunjucks parses them: ``{% set a, b = 1 %}`` sets both and
``{% set a, b = 1, 2 %}`` is an error, ``{% with %}`` and ``{% autoescape %}`` are unknown tags,
``elif`` and ``elseif`` both work, whitespace control (``{%-``, ``-}}``, ``{#-``),
``{% raw %}``, ``{% verbatim %}``, ``{% switch %}``, ``{% call %}``, ``{% filter %}`` and
``{% set %}…{% endset %}`` follow Nunjucks, and a stray ``#}`` in the text is an error.
``{% include %}``, ``{% import %}``, ``{% from %}`` and ``{% extends %}`` parse, and fail when
reached: promptfoo reads those templates from its working directory. Expressions are parsed
by :mod:`coalmine.promptfoo.nunjucks._expressions`.
"""

from __future__ import annotations

import re

from jinja2 import nodes

from coalmine.promptfoo.nunjucks._emission import js_tree
from coalmine.promptfoo.nunjucks._expressions import ExpressionParser, Signature, helper_call
from coalmine.promptfoo.nunjucks._frames import use_frames
from coalmine.promptfoo.nunjucks._lexer import Tok

__all__ = ["parse"]

_JS_WS = (
    "\t\n\v\f\r \u00a0\u1680"
    + "".join(chr(c) for c in range(0x2000, 0x200B))
    + "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_IF_TAGS = ("if", "elif", "elseif", "ifAsync")
_UNSUPPORTED = {
    "include": "{% include %}",
    "extends": "{% extends %}",
    "import": "{% import %}",
    "from": "{% from %}",
}

Body = list[nodes.Node]


class _Parser(ExpressionParser):
    """The port of Nunjucks' ``Parser``: its statements and the template's nodes."""

    def advance_after_block_end(self, name: str | None = None) -> Tok:
        if name is None:
            tok = self.peek_token()
            if tok is None:
                self.fail("unexpected end of file")
            if tok.type != "symbol":
                self.fail(
                    "advanceAfterBlockEnd: expected symbol token or explicit name to be passed"
                )
            name = str(tok.value)
            self.next_token()
        tok = self.next_token()
        if tok is None or tok.type != "block-end":
            self.fail(f"expected block end in {name} statement")
        if tok.value.startswith("-"):
            self.drop_leading_whitespace = True
        return tok

    def advance_after_variable_end(self) -> None:
        tok = self.next_token()
        if tok is not None and tok.type == "variable-end":
            self.drop_leading_whitespace = tok.value.startswith("-")
        else:
            self.push_token(tok)
            self.fail("expected variable end")

    # -- statements

    def parse_for(self) -> Body:
        for_tok = self.peek_token()
        assert for_tok is not None
        ends = {"for": "endfor", "asyncEach": "endeach", "asyncAll": "endall"}
        end = ends.get(str(for_tok.value))
        if end is None or not self.skip_symbol(str(for_tok.value)):
            self.fail("parseFor: expected for{Async}", for_tok.line)
        first = self.parse_primary()
        if not isinstance(first, nodes.Name):
            self.fail("parseFor: variable name expected for loop")
        target: nodes.Expr = nodes.Name(first.name, "store", lineno=first.lineno)
        if self.peek_type() == "comma":
            names: list[nodes.Expr] = [first]
            while self.skip("comma"):
                names.append(self.parse_primary())
            stored = [
                nodes.Name(n.name, "store", lineno=n.lineno)
                if isinstance(n, nodes.Name)
                else self.fail("parseFor: variable name expected for loop")
                for n in names
            ]
            target = nodes.Tuple(stored, "store", lineno=first.lineno)
        if not self.skip_symbol("in"):
            self.fail('parseFor: expected "in" keyword for loop', for_tok.line)
        iterable = self.parse_expression()
        self.advance_after_block_end(str(for_tok.value))
        body = self.parse_until_blocks(end, "else")
        else_: Body = []
        if self.skip_symbol("else"):
            self.advance_after_block_end("else")
            else_ = self.parse_until_blocks(end)
        self.advance_after_block_end()
        return [nodes.For(target, iterable, body, else_, None, False, lineno=for_tok.line)]

    def _parameters(self, signature: Signature) -> tuple[list[nodes.Name], list[nodes.Expr]]:
        """A macro's (or caller's) names and defaults: positional ones first, then keyword ones."""
        args, kwargs = signature
        params = []
        for name in [*args, *(key for key, _ in kwargs)]:
            if not isinstance(name, nodes.Name) or not f"l_{name.name}".isidentifier():
                self.fail("macro arguments must be names")
            params.append(nodes.Name(name.name, "param", lineno=name.lineno))
        return params, [value for _, value in kwargs]

    def parse_macro(self) -> Body:
        tok = self.peek_token()
        if tok is None or not self.skip_symbol("macro"):
            self.fail("expected macro")
        name = self.parse_primary(no_postfix=True)
        if not isinstance(name, nodes.Name):
            self.fail("macro name expected", tok.line)
        params, defaults = self._parameters(self.parse_signature())
        self.advance_after_block_end(str(tok.value))
        body = self.parse_until_blocks("endmacro")
        self.advance_after_block_end()
        return [nodes.Macro(name.name, params, defaults, body, lineno=tok.line)]

    def parse_call(self) -> Body:
        tok = self.peek_token()
        if tok is None or not self.skip_symbol("call"):
            self.fail("expected call")
        signature = self.parse_signature() if self.peek_type() == "left-paren" else ([], [])
        params, defaults = self._parameters(signature)
        macro_call = self.parse_primary()
        if not isinstance(macro_call, nodes.Call):
            self.fail("parseCall: expected a macro call", tok.line)
        self.advance_after_block_end(str(tok.value))
        body = self.parse_until_blocks("endcall")
        self.advance_after_block_end()
        return [nodes.CallBlock(macro_call, params, defaults, body, lineno=tok.line)]

    def parse_if(self) -> Body:
        tag = self.peek_token()
        if tag is None or tag.type != "symbol" or tag.value not in _IF_TAGS:
            self.fail("parseIf: expected if, elif, or elseif")
        self.next_token()
        cond = self.parse_expression()
        self.advance_after_block_end(str(tag.value))
        body = self.parse_until_blocks("elif", "elseif", "else", "endif")
        tok = self.peek_token()
        value = tok.value if tok is not None else None
        if value in ("elseif", "elif"):
            else_ = self.parse_if()
        elif value == "else":
            self.advance_after_block_end()
            else_ = self.parse_until_blocks("endif")
            self.advance_after_block_end()
        elif value == "endif":
            else_ = []
            self.advance_after_block_end()
        else:
            self.fail("parseIf: expected elif, else, or endif, got end of file")
        return [nodes.If(cond, body, [], else_, lineno=tag.line)]

    def parse_set(self) -> Body:
        tag = self.peek_token()
        if tag is None or not self.skip_symbol("set"):
            self.fail("parseSet: expected set")
        targets = []
        while True:
            target = self.parse_primary()
            if not isinstance(target, nodes.Name):
                self.fail("parseSet: expected a variable name to set", tag.line)
            targets.append(target.name)
            if not self.skip("comma"):
                break
        stored = [nodes.Name(t, "store", lineno=tag.line) for t in targets]
        target = stored[0] if len(stored) == 1 else nodes.Tuple(stored, "store", lineno=tag.line)
        if not self.skip_value("operator", "="):
            if not self.skip("block-end"):  # so ``{% set x -%}`` strips nothing, as in Nunjucks
                self.fail("parseSet: expected = or block end in set tag", tag.line)
            body = self.parse_until_blocks("endset")
            self.advance_after_block_end()
            return [nodes.AssignBlock(target, None, body, lineno=tag.line)]
        value = self.parse_expression()
        self.advance_after_block_end(str(tag.value))
        return [nodes.Assign(target, value, lineno=tag.line)]  # every target gets the one value

    def parse_switch(self) -> Body:
        tag = self.peek_token()
        if tag is None or not any(self.skip_symbol(s) for s in ("switch", "case", "default")):
            self.fail('parseSwitch: expected "switch," "case" or "default"')
        subject = self.parse_expression()
        self.advance_after_block_end("switch")
        self.parse_until_blocks("case", "default", "endswitch")
        cases: list[tuple[nodes.Expr, Body]] = []
        while True:  # a do-while: the first "case" may well be a "default" or "endswitch"
            self.skip_symbol("case")
            cond = self.parse_expression()
            self.advance_after_block_end("switch")
            cases.append((cond, self.parse_until_blocks("case", "default", "endswitch")))
            tok = self.peek_token()
            if tok is None or tok.value != "case":
                break
        default: Body = []
        if tok is not None and tok.value == "default":
            self.advance_after_block_end()
            default = self.parse_until_blocks("endswitch")
            self.advance_after_block_end()
        elif tok is not None and tok.value == "endswitch":
            self.advance_after_block_end()
        else:
            self.fail('parseSwitch: expected "case," "default" or "endswitch," got EOF.')
        return _switch(subject, cases, default, tag.line)

    def parse_raw(self, tag_name: str = "raw") -> Body:
        end = "end" + tag_name
        ws = re.escape(_JS_WS)
        pattern = re.compile(rf"([\s\S]*?){{%[{ws}]*({tag_name}|{end})[{ws}]*(?=%}})%}}")
        level, text = 1, ""
        begun = self.advance_after_block_end()
        while (match := self.tokens.extract_regex(pattern)) is not None and level > 0:
            level += 1 if match.group(2) == tag_name else -1
            if level == 0:
                text += match.group(1)
                self.tokens.back(len(match.group()) - len(match.group(1)))
            else:
                text += match.group()
        return [nodes.Output([nodes.TemplateData(text)], lineno=begun.line)]

    def parse_filter_statement(self) -> Body:
        tok = self.peek_token()
        if tok is None or not self.skip_symbol("filter"):
            self.fail("parseFilterStatement: expected filter")
        name, args = self.parse_filter_name(), self.parse_filter_args()
        self.advance_after_block_end(str(tok.value))
        body = self.parse_until_blocks("endfilter")
        self.advance_after_block_end()
        applied = nodes.Filter(None, "__js_filter", [nodes.Const(name), *args], [], None, None)
        return [nodes.FilterBlock(body, applied, lineno=tok.line)]

    def parse_block(self) -> Body:
        """``{% block %}`` outside a template that extends another renders in place."""
        tag = self.peek_token()
        assert tag is not None
        self.skip_symbol("block")
        name = self.parse_primary()
        if not isinstance(name, nodes.Name):
            self.fail("parseBlock: variable name expected", tag.line)
        self.advance_after_block_end(str(tag.value))
        body = self.parse_until_blocks("endblock")
        self.skip_symbol("endblock")
        self.skip_symbol(name.name)
        tok = self.peek_token()
        if tok is None:
            self.fail("parseBlock: expected endblock, got end of file")
        self.advance_after_block_end(str(tok.value))
        return body

    def parse_unsupported(self, tag: Tok) -> Body:
        """``include``, ``extends``, ``import``, ``from``: parsed loosely, failing when run."""
        self.next_token()
        while (tok := self.next_token()) is not None and tok.type != "block-end":
            pass
        if tok is None:
            self.fail(f"expected block end in {tag.value} statement")
        self.drop_leading_whitespace = tok.value.startswith("-")
        message = (
            f"{_UNSUPPORTED[str(tag.value)]} is not supported (promptfoo reads the template"
            " from its working directory): inline the template instead"
        )
        return [
            nodes.Output([helper_call("__js_unsupported", nodes.Const(message), lineno=tag.line)])
        ]

    def parse_statement(self) -> Body | None:
        tok = self.peek_token()
        if tok is None or tok.type != "symbol":
            self.fail("tag name expected", tok.line if tok else None)
        if self.break_on_blocks and tok.value in self.break_on_blocks:
            return None
        name = str(tok.value)
        if name in ("raw", "verbatim"):
            return self.parse_raw(name)
        if name in ("if", "ifAsync"):
            return self.parse_if()
        if name in ("for", "asyncEach", "asyncAll"):
            return self.parse_for()
        if name in _UNSUPPORTED:
            return self.parse_unsupported(tok)
        handlers = {
            "block": self.parse_block,
            "set": self.parse_set,
            "macro": self.parse_macro,
            "call": self.parse_call,
            "filter": self.parse_filter_statement,
            "switch": self.parse_switch,
        }
        if name not in handlers:
            self.fail(f"unknown block tag: {name}", tok.line)
        return handlers[name]()

    def parse_until_blocks(self, *names: str) -> Body:
        previous, self.break_on_blocks = self.break_on_blocks, names
        body = self.parse_nodes()
        self.break_on_blocks = previous
        return body

    def parse_nodes(self) -> Body:
        buf: Body = []
        while (tok := self.next_token()) is not None:
            if tok.type == "data":
                buf.append(self._data(tok))
            elif tok.type == "block-start":
                self.drop_leading_whitespace = False
                statement = self.parse_statement()
                if statement is None:
                    break
                buf.extend(statement)
            elif tok.type == "variable-start":
                expr = self.parse_expression()
                self.drop_leading_whitespace = False
                self.advance_after_variable_end()
                buf.append(nodes.Output([expr], lineno=tok.line))
            elif tok.type == "comment":
                self.drop_leading_whitespace = tok.value[-3:-2] == "-"
            else:
                self.fail(f"Unexpected token at top-level: {tok.type}", tok.line)
        return buf

    def _data(self, tok: Tok) -> nodes.Output:
        data = str(tok.value)
        nxt = self.peek_token()
        if self.drop_leading_whitespace:
            data = data.lstrip(_JS_WS)
            self.drop_leading_whitespace = False
        if nxt is not None and (
            (nxt.type == "block-start" and nxt.value.endswith("-"))
            or (nxt.type in ("variable-start", "comment") and nxt.value[2:3] == "-")
        ):
            data = data.rstrip(_JS_WS)
        return nodes.Output([nodes.TemplateData(data)], lineno=tok.line)


def _switch(
    subject: nodes.Expr, cases: list[tuple[nodes.Expr, Body]], default: Body, line: int
) -> Body:
    """JavaScript's ``switch``: ``===`` to each case in turn; an empty case falls through."""
    groups: list[tuple[list[nodes.Expr], Body]] = []
    pending: list[nodes.Expr] = []
    for cond, body in cases:
        pending.append(cond)
        if body:
            groups.append((pending, body))
            pending = []
    if pending:  # empty cases at the end fall through to the default
        groups.append((pending, default))
    out: Body = default
    for conds, body in reversed(groups):
        test: nodes.Expr = nodes.Compare(subject, [nodes.Operand("seq", conds[0])], lineno=line)
        for cond in conds[1:]:
            test = nodes.Or(test, nodes.Compare(subject, [nodes.Operand("seq", cond)]), lineno=line)
        out = [nodes.If(test, body, [], out, lineno=line)]
    return out


def parse(source: str) -> nodes.Template:
    """Parse Nunjucks ``source`` into a Jinja2 tree (not yet given JavaScript meaning).

    Raises:
        TemplateSyntaxError: It does not parse; the message is Nunjucks' own.
    """
    return use_frames(js_tree(nodes.Template(_Parser(source).parse_nodes(), lineno=1)))
