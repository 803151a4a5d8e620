"""STAND-IN judge: a deterministic word-overlap heuristic, NOT a language model.

It lets the example's ``llm-judge`` graders run offline, with no API key and no network. Replace
it with a real judge model before trusting any judge score: in ``coalmine.yaml`` set, e.g.

    judge: {provider: openai, model: gpt-4o-mini, api_key_env: OPENAI_API_KEY}

or point ``base_url`` at any OpenAI-compatible server (vLLM, llama.cpp, Ollama, LM Studio), or
write ``judge: none`` (or pass ``--no-judge``) to skip the llm-judge graders.

What it does: coalmine sends the judge prompt built by ``coalmine.graders.llm_judge`` on stdin.
The agent's response sits between a ``<response-HEX>`` line and a ``</response-HEX>`` line; the
criteria follow a ``Criteria:`` line as ``- name: description`` (or ``- name``) up to a blank
line. For each criterion this script takes the significant words of its description (five
letters or more, minus a few filler words; the name's words when there is no description) and
counts how many occur in the response, case-insensitively, after stripping a plural or
``-ing``/``-ed`` ending. A share of at least 0.5 scores 1, at least 0.25 scores 0.5, less scores
0. It prints exactly one JSON object:

    {"criteria": {"<name>": {"score": 0|0.5|1, "reason": "..."}}}

A word count says nothing about quality: a real judge can and will disagree with it.
"""

from __future__ import annotations

import json
import re
import sys

FULL, PARTIAL = 0.5, 0.25
"""Share of significant words found needed for a score of 1 and of 0.5."""

MIN_LEN = 5

# Words of five letters or more that say how to grade rather than what to look for.
FILLER = frozenset(
    """
    about above addresses after again against among answer appropriate based being below
    between clear clearly concrete correct correctly could cover covers describes does doing
    during every explains explicit explicitly given gives identifies includes including
    instead lists mentions other properly proposes provides rather realistic relevant response
    should specific states suitable their there these those through under until using where
    which while whether within without would
    """.split()
)

_TASK_OPEN = re.compile(r"^<task-([0-9a-f]+)>$")
_WORD = re.compile(r"[a-z0-9][a-z0-9'/+.-]*[a-z0-9]")


def parse_prompt(prompt: str) -> tuple[str, dict[str, str]]:
    """Return (response, criteria name -> description) from a coalmine judge prompt."""
    lines = prompt.splitlines()
    digest = next((m.group(1) for m in map(_TASK_OPEN.match, lines) if m), None)
    response, end = "", 0
    if digest is not None:
        open_tag, close_tag = f"<response-{digest}>", f"</response-{digest}>"
        task_end = lines.index(f"</task-{digest}>") if f"</task-{digest}>" in lines else 0
        try:
            start = lines.index(open_tag, task_end) + 1
            end = len(lines) - 1 - lines[::-1].index(close_tag)
            response = "\n".join(lines[start:end])
        except ValueError:
            response, end = "", 0
    # The criterion names, exactly, from the example JSON at the end of the prompt.
    names: list[str] = []
    for line in reversed(lines):
        if line.startswith('{"criteria"'):
            try:
                names = list(json.loads(line)["criteria"])
            except (ValueError, KeyError, TypeError):
                names = []
            break
    listed: list[str] = []
    # The criteria come after the response (a "Criteria:" line inside the response is material).
    # They end at a blank line, unless the next line is one more "- " criterion (a description
    # written as a folded YAML block ends in a newline, which leaves a blank line behind it).
    if "Criteria:" in lines[end:]:
        rest = lines[lines.index("Criteria:", end) + 1 :]
        for i, line in enumerate(rest):
            if not line.strip():
                if i + 1 < len(rest) and rest[i + 1].startswith("- "):
                    continue
                break
            if line.startswith("- "):
                listed.append(line[2:])
            elif listed:
                listed[-1] += " " + line.strip()
    criteria: dict[str, str] = {}
    for item in listed:
        name = next((n for n in names if item == n or item.startswith(n + ": ")), None)
        if name is None:
            name, _, description = item.partition(": ")
        else:
            description = item[len(name) + 2 :]
        criteria[name] = description.strip()
    for name in names:
        criteria.setdefault(name, "")
    return response, criteria


def significant_words(text: str) -> list[str]:
    """Return the distinct words of ``text`` worth looking for, in order."""
    seen: list[str] = []
    for word in _WORD.findall(text.casefold()):
        if len(word) >= MIN_LEN and word not in FILLER and word not in seen:
            seen.append(word)
    return seen


def stem(word: str) -> str:
    """Drop one plural or -ing/-ed ending, keeping at least four letters."""
    for suffix in ("ing", "ies", "es", "ed", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 4:
            return word[: -len(suffix)]
    return word


def score(response: str, name: str, description: str) -> dict[str, object]:
    """Score one criterion by the share of its significant words found in the response."""
    words = significant_words(description) or significant_words(re.sub(r"[_-]", " ", name))
    if not words:
        return {"score": 0.5, "reason": "no words to look for; partial credit by default"}
    haystack = response.casefold()
    found = [w for w in words if w in haystack or stem(w) in haystack]
    missing = [w for w in words if w not in found]
    share = len(found) / len(words)
    value: float = 1 if share >= FULL else 0.5 if share >= PARTIAL else 0
    reason = f"heuristic: {len(found)}/{len(words)} key terms found"
    if found:
        reason += f" ({', '.join(found)})"
    if missing:
        reason += f"; not found: {', '.join(missing)}"
    return {"score": value, "reason": reason}


def main() -> None:
    """Read a judge prompt on stdin, write one JSON verdict on stdout."""
    response, criteria = parse_prompt(sys.stdin.read())
    verdict = {"criteria": {n: score(response, n, d) for n, d in criteria.items()}}
    sys.stdout.write(json.dumps(verdict, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
