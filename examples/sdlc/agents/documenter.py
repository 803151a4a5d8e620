"""STAND-IN agent: the Documenter (phase ``document``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real Documenter agent in ``coalmine.yaml``, e.g. a CLI agent
(``argv: ["claude", "-p"]``) or an ``openai`` provider agent with the Documenter's system prompt.

It reads the canary prompt on stdin and writes its answer on stdout.
"""

from __future__ import annotations

import sys

ANSWER = """\
# Northwind Outfitters Orders API v1

## Overview

The Orders API lets partner integrators create orders for Northwind Outfitters products,
retrieve an order and list orders. It is a JSON over HTTPS API.

- Base URL: `https://api.northwind-outfitters.example/v1`
- Field names use snake_case, amounts are strings with two decimals, and timestamps are
  ISO 8601 in UTC; these conventions stay consistent across all endpoints.

## Authentication

The API uses OAuth 2.0 client credentials. Exchange your client id and secret for an access
token, then send it as a Bearer token on every request.

```bash
curl -s -X POST https://auth.northwind-outfitters.example/oauth2/token \\
  -d grant_type=client_credentials -d client_id=$CLIENT_ID -d client_secret=$CLIENT_SECRET
```

Every API call then carries the header `Authorization: Bearer <access_token>`. Tokens expire
after one hour; request a new one when you receive a 401.

## Endpoints

### Create an order: `POST /v1/orders`

```bash
curl -s -X POST https://api.northwind-outfitters.example/v1/orders \\
  -H "Authorization: Bearer $TOKEN" -H "Content-Type: application/json" \\
  -H "Idempotency-Key: 6f1c2a9e-0b7d-4c1e-9a51-3d2f8e4b7c10" \\
  -d '{"customer_email": "ana@example.com", "lines": [{"sku": "TENT-2P-GRN", "quantity": 1}],
       "shipping_address": {"country": "DE", "postal_code": "10115", "city": "Berlin",
                            "line1": "Invalidenstr. 1"}}'
```

Response `201 Created`:

```json
{"id": "ord_8Kq2", "status": "pending_payment", "total": "249.00", "currency": "EUR",
 "created_at": "2026-04-10T09:12:03Z",
 "lines": [{"sku": "TENT-2P-GRN", "quantity": 1, "unit_price": "249.00"}]}
```

### Retrieve an order: `GET /v1/orders/{order_id}`

```bash
curl -s https://api.northwind-outfitters.example/v1/orders/ord_8Kq2 \\
  -H "Authorization: Bearer $TOKEN"
```

Returns `200 OK` with the same JSON fields as above, or `404` when the order does not exist
or belongs to another client.

### List orders: `GET /v1/orders`

Cursor pagination: pass `limit` (1 to 100, default 20) and the `next_cursor` of the previous
page as `cursor`.

```bash
curl -s "https://api.northwind-outfitters.example/v1/orders?limit=20&cursor=eyJpZCI6Im9yZF84In0" \\
  -H "Authorization: Bearer $TOKEN"
```

```json
{"data": [{"id": "ord_8Kq2", "status": "paid", "total": "249.00", "currency": "EUR"}],
 "next_cursor": null}
```

A `next_cursor` of `null` means the last page.

## Errors

Errors use RFC 7807 problem details with the content type `application/problem+json`:

```json
{"type": "https://api.northwind-outfitters.example/problems/out-of-stock",
 "title": "Out of stock", "status": 409, "detail": "TENT-2P-GRN has 0 units left"}
```

| Status | Meaning |
|--------|---------|
| 400 | malformed JSON or query parameters |
| 401 | missing or expired Bearer token |
| 403 | the token lacks the `orders:write` scope |
| 404 | unknown order |
| 409 | out of stock, or an idempotency key reused with a different body |
| 422 | a field failed validation; `errors` lists each field |
| 429 | rate limit exceeded |

## Rate Limits

Each client may send 600 requests per minute. Above that the API answers `429 Too Many
Requests` with a `Retry-After` header giving the seconds to wait; back off for at least that
long before retrying.

## Versioning

The version is part of the path (`/v1`). Within v1 we only add fields and endpoints; breaking
changes ship as `/v2`. A deprecation is announced at least six months ahead in the changelog
and with `Deprecation` and `Sunset` response headers on the affected endpoints.
"""


def main() -> None:
    sys.stdin.read()  # the prompt; a real agent would act on it
    sys.stdout.write(ANSWER)


if __name__ == "__main__":
    main()
