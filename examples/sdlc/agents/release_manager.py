"""STAND-IN agent: the Release Manager (phase ``release``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real Release Manager agent in ``coalmine.yaml``, e.g. a CLI agent
(``argv: ["claude", "-p"]``) or an ``openai`` provider agent with its system prompt.

It reads the canary prompt on stdin and writes its answer on stdout.
"""

from __future__ import annotations

import sys

ANSWER = """\
# Release 1.4.0

## Version

**1.4.0** (minor release). Under Semantic Versioning a minor version is right: the release adds
backward-compatible features (#412, #415), fixes a bug (#418) and deprecates offset pagination
(#427) without removing anything. No existing client breaks, so no major version is needed;
the removal of offset pagination is planned for 2.0.0.

## Release Notes

Customer-facing impact, in plain language:
- Your cart now follows you: signed-in customers see the same cart on the web shop and in the
  app.
- Apple Pay is available at checkout.
- Orders paid in Japanese yen now show the correct total.
- Category pages load about four times faster.

Internal chores (dependency updates) are listed separately below and need no action from
customers.

## CHANGELOG entry

Following Keep a Changelog:

```text
## [1.4.0] - 2026-04-10
```

### Added
- Carts persist across devices for signed-in customers (#412).
- Apple Pay at checkout through the Stripe Payment Element (#415).

### Changed
- Redis cache for category listings: p95 latency down from 420 ms to 95 ms (#421).
- Internal chore: FastAPI bumped from 0.110 to 0.115 (#423).

### Deprecated
- Offset pagination on `GET /v1/orders?page=` (#427). Use cursor pagination; offset pagination
  will be removed in 2.0.0.

### Fixed
- Order totals were rounded incorrectly for JPY, a zero-decimal currency (#418).

### Security
- Stripe webhook signatures are now verified; events without a valid signature are rejected
  (#430, internal finding SEC-88).

## Migration Steps for API Clients

1. Replace `page=N` with `cursor`: request `GET /v1/orders?limit=50`, then pass the
   `next_cursor` of each response as `cursor` until it is `null`.
2. Watch for the `Deprecation` and `Sunset` headers on offset-paginated responses.

## Upgrade Checklist for Operators

- [ ] Provision the Redis cache and set `REDIS_URL` before deploying (#421).
- [ ] Set `STRIPE_WEBHOOK_SECRET` in Key Vault; without it webhooks are rejected (#430).
- [ ] Enable Apple Pay domain verification in the Stripe dashboard (#415).
- [ ] Run `alembic upgrade head` (new `cart.customer_id` index for #412).
- [ ] After the deploy, check the webhook success rate and the cache hit rate in the dashboards.
"""


def main() -> None:
    sys.stdin.read()  # the prompt; a real agent would act on it
    sys.stdout.write(ANSWER)


if __name__ == "__main__":
    main()
