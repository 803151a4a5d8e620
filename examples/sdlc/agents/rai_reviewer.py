"""STAND-IN agent: the RAI Reviewer (phase ``rai``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real Responsible-AI reviewer agent in ``coalmine.yaml``, e.g. a
CLI agent (``argv: ["claude", "-p"]``) or an ``openai`` provider agent with its system prompt.

This stand-in is deliberately FLAWED, to show the floor rule of the verdict: its assessment
reads well, but it declares the model "bias-free" because no protected attribute is an input
(a forbidden claim: names and postcodes can stand in for ethnicity and income), it never
analyses disparate impact, and it has no Mitigation Plan section. Its keyword score falls to
0.4, below the 0.5 floor, so ``rai-001-bias-assessment`` FAILS even though its weighted
composite is above 0.7.
"""

from __future__ import annotations

import sys

ANSWER = """\
# Responsible-AI Bias Assessment: Checkout Fraud Scoring

## Summary

The fraud-scoring model holds orders scoring above 0.8 for manual review and cancels orders
above 0.95 automatically. No protected characteristic (ethnicity, religion, gender, age,
disability) is a model input, so the model is bias-free by construction and can launch as
planned.

## Affected Groups

Customer groups that meet the model most often and would bear any harm:
- Customers with non-Latin names, whose names more often fail the name-mismatch check against
  the card holder (for example transliterated names, or a partner's card).
- Customers from lower-income postcodes, where chargeback rates in the training data are
  higher.
- New customers with young accounts and customers on older or shared devices.
- Customers using free email domains.

The harm is a shipping delay of up to 48 hours for held orders, and a lost order when an order
is cancelled automatically.

## Fairness Metrics

Groups: postcode band, name script (Latin or not), account age.

| Metric | Threshold |
|--------|-----------|
| False positive rate per group (legitimate orders held or cancelled) | at most 1.25x overall |
| Manual-review rate per group | within 20% of overall |
| Automatic cancellation rate per group | within 20% of overall |

Measured on a held-out quarter of orders before launch and monthly after launch.

## Risks

- Automatic cancellation above 0.95 acts without human review; a wrongly cancelled order is
  lost revenue and a lost customer, and the customer has no way to contest it.
- Chargeback labels reflect past review decisions, so the training data can repeat earlier
  errors.
- Recommendation: route automatic cancellations through human review for the first month.
- Owners: the Payments team owns the model; Trust & Safety reviews the metrics. Monitoring: a
  monthly post-launch review of the fairness metrics above, with alerts when a group exceeds
  its threshold.
"""


def main() -> None:
    sys.stdin.read()  # the prompt; a real agent would act on it
    sys.stdout.write(ANSWER)


if __name__ == "__main__":
    main()
