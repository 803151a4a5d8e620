"""STAND-IN agent: the QA Coordinator (phase ``qa``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real QA Coordinator agent in ``coalmine.yaml``, e.g. a CLI agent
(``argv: ["claude", "-p"]``) or an ``openai`` provider agent with its system prompt.

This stand-in is deliberately WEAK, to show what a failing canary looks like: its security
review is a shallow generic checklist. It never mentions OWASP, BOLA, webhook signatures,
PCI, severities or remediations, and it has no Severity, Remediation or Release Recommendation
sections, so ``qa-001-security-review`` FAILS (keyword and structural scores below 0.5,
composite below 0.7). A real QA agent that does the review properly makes it pass.
"""

from __future__ import annotations

import sys

ANSWER = """\
# Security Review - Checkout Flow

## Scope

Looked at the checkout endpoints, the login endpoint and the order lookup of release 1.4.

## Findings

1. JWT access tokens live for 24 hours, which is long for a shop; consider shortening them.
2. The login endpoint should get rate limiting to slow down credential stuffing.
3. Checkout payloads are validated by Pydantic models, so malformed input is rejected.
4. Error responses are generic and do not leak stack traces.
5. All traffic goes over HTTPS.

Overall the checkout flow is in reasonable shape. The team can pick up the items above when
convenient.
"""


def main() -> None:
    sys.stdin.read()  # the prompt; a real agent would act on it
    sys.stdout.write(ANSWER)


if __name__ == "__main__":
    main()
