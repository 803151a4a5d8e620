"""STAND-IN agent: the grader of the review pipeline (seed 003).

An offline placeholder, so the example runs with no model and no network. A real grader is an
LLM agent (for instance an ``eval-grader`` sub-agent run with ``claude -p``, or a model behind
an ``openai`` provider) that reads each assertion and judges it against the resolver's and the
reviewer's outputs, never against the fixture, which it does not see.

This one judges by keywords. It reads the prompt the runner builds from the ``resolver``,
``reviewer`` and ``assertions`` inputs::

    Assertions:
    - [1.1] (resolver) The resolver activates the kubernetes profile for the Deployment manifest.
    - [1.2] (reviewer) The reviewer flags that the container has no resource limits.

    Resolver output:
    ---
    <the resolver's answer>
    ---

    Reviewer output:
    ---
    <the reviewer's answer>
    ---

An assertion is a line ``- [<id>] (<target>) <text>`` after the line ``Assertions:``; a role's
output is the text between the ``---`` line after ``<Role> output:`` and the last ``---`` line
before the next section (so an output may itself hold ``---`` lines). Other text (instructions,
the answer form) is ignored.

For each assertion it takes up to four key terms from the text: the concepts of a small table
(kubernetes, resource limits, cpu, SQL injection, parameterised queries, AWS access key,
rotation, no findings, …, each with its synonyms) and any file path. It looks for them in the
output the target names: the resolver's, the reviewer's, or for ``both`` either of the two. All
found: ``pass``; some: ``partial``; none: ``fail``. An assertion that says the role does *not*
do something ("does not flag …") is inverted: none found is a pass.

It prints only the JSON the runner parses::

    {"assertions": {"1.1": {"verdict": "pass", "reason": "…"}}}

Run it by hand: ``python3 agents/grader.py < prompt.txt``.
"""

from __future__ import annotations

import json
import re
import sys

# concept -> (cues: how an assertion names it, evidence: how an output shows it); each pattern
# is matched case-insensitively from a word start
CONCEPTS: dict[str, tuple[list[str], list[str]]] = {
    "kubernetes": (["kubernetes", "k8s"], ["kubernetes", "k8s"]),
    "python": (["python"], ["python"]),
    "secrets": (["secret", "credential"], ["secret", "credential"]),
    "general profile": (["general profile"], ["general"]),
    "deployment": (["deployment"], ["deployment"]),
    "container": (["container"], ["container"]),
    "resource limits": (
        ["resource limit", r"limits?\b"],
        ["resource limit", r"resources\.limits", r"limits?\b"],
    ),
    "cpu": (["cpu"], ["cpu"]),
    "memory": (["memory"], ["memory"]),
    "SQL injection": (["sql injection", r"sqli\b", "injection"], ["sql injection", r"sqli\b"]),
    "parameterised queries": (
        ["parameteri[sz]ed", "parametri[sz]ed", "placeholder", "bind param", "prepared statement"],
        ["parameteri[sz]ed", "parametri[sz]ed", "placeholder", "bind param", "prepared statement"],
    ),
    "AWS access key": (["aws access key", "access key"], ["aws access key", "access key", "akia"]),
    "hard-coded": (
        ["hard-?coded", "hard coded", "committed"],
        ["hard-?coded", "hard coded", "committed", "plain ?text"],
    ),
    "rotation": (["rotat"], ["rotat", "revok"]),
    "environment": (
        ["environment", "env var", "secrets? manager"],
        ["environment", "env var", "secrets? manager", "vault"],
    ),
    "no findings": (
        ["no findings", "no issues", "nothing to report"],
        ["no findings", "no issues", "nothing to report"],
    ),
}
MAX_TERMS = 4
NEGATION = re.compile(r"(?i)\b(?:does not|doesn't|do not|don't|never|is not|isn't)\b")
PATH = re.compile(
    r"(?<![\w/.-])(?:[\w.-]+/)*[\w-]+\."
    r"(?:py|ya?ml|json|cfg|ini|env|toml|txt|md|js|ts|go|sql|sh|conf)\b"
)
STOP = frozenset(
    "the a an and or of to in on for with that this its it is are be by as at from under into "
    "resolver reviewer grader output flags flag reports report finding findings names activates "
    "activate raised says asks both every each".split()
)

ASSERTION = re.compile(r"^\s*-\s*\[([^\]]+)\]\s*\((resolver|reviewer|both)\)\s*(.*?)\s*$")
_OUTPUT_HEADER = re.compile(r"^\s*(.+?)\s+output:\s*$", re.IGNORECASE)
_ANY_HEADER = re.compile(r"^\s*\S.*:\s*$")


def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(r"(?<![A-Za-z0-9])" + text, re.IGNORECASE)


def parse(prompt: str) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """The assertions ``(id, target, text)`` and the role outputs (name -> text) of a prompt."""
    lines = prompt.splitlines()
    # a section starts at a header line directly followed by "---", or at "Assertions:"
    starts = [
        i
        for i, line in enumerate(lines)
        if line.strip() == "Assertions:"
        or (_ANY_HEADER.match(line) and i + 1 < len(lines) and lines[i + 1].strip() == "---")
    ]
    assertions: list[tuple[str, str, str]] = []
    outputs: dict[str, str] = {}
    for k, start in enumerate(starts):
        end = starts[k + 1] if k + 1 < len(starts) else len(lines)
        header = lines[start].strip()
        if header == "Assertions:":
            for line in lines[start + 1 : end]:
                match = ASSERTION.match(line)
                if match:
                    assertions.append((match.group(1).strip(), match.group(2), match.group(3)))
            continue
        named = _OUTPUT_HEADER.match(header)
        if not named:
            continue
        body = lines[start + 2 : end]
        closing = [j for j, line in enumerate(body) if line.strip() == "---"]
        if closing:
            body = body[: closing[-1]]
        name = named.group(1).lower()
        outputs[name] = (outputs.get(name, "") + "\n" + "\n".join(body)).strip("\n")
    return assertions, outputs


def key_terms(text: str) -> list[tuple[str, list[re.Pattern[str]]]]:
    """Up to four (term, evidence patterns) of an assertion, in the order the text has them."""
    found: list[tuple[int, str, list[re.Pattern[str]]]] = []
    for match in PATH.finditer(text):
        found.append((match.start(), match.group(0), [re.compile(re.escape(match.group(0)))]))
    plain = PATH.sub(lambda m: " " * len(m.group(0)), text)  # no concept cues inside paths
    for concept, (cues, evidence) in CONCEPTS.items():
        positions = [m.start() for cue in cues if (m := _pattern(cue).search(plain))]
        if positions:
            found.append((min(positions), concept, [_pattern(e) for e in evidence]))
    if not found:  # nothing the table knows: fall back on the assertion's content words
        for match in re.finditer(r"[A-Za-z][A-Za-z-]{3,}", plain):
            word = match.group(0).lower()
            if word not in STOP and not NEGATION.match(word):
                found.append((match.start(), word, [_pattern(re.escape(word))]))
    found.sort(key=lambda item: item[0])
    terms: list[tuple[str, list[re.Pattern[str]]]] = []
    for _, term, patterns in found:
        if term not in [t for t, _ in terms]:
            terms.append((term, patterns))
    return terms[:MAX_TERMS]


def grade(target: str, text: str, outputs: dict[str, str]) -> dict[str, str]:
    """The verdict and reason of one assertion."""
    roles = ["resolver", "reviewer"] if target == "both" else [target]
    where = " and ".join(f"{r} output" for r in roles)
    texts = [body for name, body in outputs.items() if any(r in name for r in roles)]
    if not texts:
        return {"verdict": "fail", "reason": f"no {where} in the prompt to grade against"}
    haystack = "\n".join(texts)
    terms = key_terms(text)
    if not terms:
        return {"verdict": "fail", "reason": "no key terms in the assertion to look for"}
    present = [term for term, patterns in terms if any(p.search(haystack) for p in patterns)]
    absent = [term for term, _ in terms if term not in present]
    if NEGATION.search(text):
        verdict = "pass" if not present else "fail" if not absent else "partial"
        reason = f"must be absent from the {where}: {', '.join(t for t, _ in terms)}; " + (
            f"found: {', '.join(present)}" if present else "none found"
        )
        return {"verdict": verdict, "reason": reason}
    verdict = "pass" if not absent else "fail" if not present else "partial"
    parts = []
    if present:
        parts.append(f"found in the {where}: {', '.join(present)}")
    if absent:
        parts.append(f"missing from the {where}: {', '.join(absent)}")
    return {"verdict": verdict, "reason": "; ".join(parts)}


def answer(prompt: str) -> str:
    assertions, outputs = parse(prompt)
    graded = {aid: grade(target, text, outputs) for aid, target, text in assertions}
    return json.dumps({"assertions": graded}, ensure_ascii=False)


def main() -> None:
    prompt = sys.stdin.buffer.read().decode("utf-8", "replace")
    sys.stdout.write(answer(prompt) + "\n")


if __name__ == "__main__":
    main()
