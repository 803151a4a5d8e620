"""STAND-IN agent: the Analyst (phases ``requirements`` and ``design``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real Analyst agent in ``coalmine.yaml``, e.g. a CLI agent
(``argv: ["claude", "-p"]``) or an ``openai`` provider agent with the Analyst's system prompt.

Like the real agent it receives the canary prompt on stdin, byte for byte, and writes its answer
on stdout. Being one agent for two phases, it picks the design answer when the prompt asks for
an architecture, the requirements answer otherwise.
"""

from __future__ import annotations

import sys

REQUIREMENTS = """\
# Northwind Outfitters E-commerce API: Requirements

## 1. Scope and Context

REST API behind the web storefront and the mobile app of Northwind Outfitters: about 5,000
SKUs, 20k daily active users, peaks of 300 orders per minute during sales. Customers are in the
EU, so GDPR applies to every personal data flow.

## 2. Functional Requirements

### 2.1 Catalog
- **FR-CAT-1** List products with pagination, filtering by category, brand, size, price range
  and availability, and sorting by price, newest and relevance.
- **FR-CAT-2** Full-text search over name, description and brand with typo tolerance.
- **FR-CAT-3** Product detail returns variants (size, color), price, stock status and images.

### 2.2 Cart
- **FR-CART-1** Guests get an anonymous cart identified by a cart token.
- **FR-CART-2** Signed-in customers have one persistent cart shared across devices; a guest
  cart is merged into it at login.
- **FR-CART-3** Adding an item re-checks stock and price; the cart shows totals with VAT.

### 2.3 Checkout and Payment
- **FR-CHK-1** Checkout works for guests (email only) and for signed-in customers.
- **FR-CHK-2** Payment is taken through Stripe PaymentIntents with 3-D Secure (SCA).
- **FR-CHK-3** Checkout is idempotent: a retried request with the same idempotency key never
  creates a second order or a second charge.

### 2.4 Orders
- **FR-ORD-1** Customers see their order history and the status of each order (placed, paid,
  shipped, delivered, cancelled, refunded).
- **FR-ORD-2** Order status changes are pushed to the customer by email.

### 2.5 Customer Accounts and Authentication
- **FR-ACC-1** Registration, login and password reset; authentication with short-lived
  access tokens and refresh tokens.
- **FR-ACC-2** Customers manage addresses and marketing consent.
- **FR-ACC-3** GDPR: a customer can export their data and request account deletion.

## 3. Non-Functional Requirements

| ID | Category | Requirement | Target |
|----|----------|-------------|--------|
| NFR-1 | Performance | Catalog and cart read latency | p95 < 200 ms at 300 orders/min |
| NFR-2 | Performance | Checkout latency, excluding the payment provider | p95 < 800 ms |
| NFR-3 | Availability | Monthly availability of checkout and orders | 99.9% |
| NFR-4 | Security | OWASP API Top 10 controls; TLS 1.2+ everywhere | zero open High findings |
| NFR-5 | Security | No card data stored or logged; Stripe handles card data | PCI DSS SAQ A |
| NFR-6 | Compliance | GDPR export within 30 days; deletion within 30 days | 100% of requests |
| NFR-7 | Scalability | Horizontal scaling for sale peaks | 3x normal load |

## 4. Acceptance Criteria

**AC-1 Guest checkout**
- Given a guest with a cart of two in-stock items
- When they submit checkout with a valid email, address and card
- Then an order is created with status "paid" and a confirmation email is sent within 60 s.

**AC-2 Idempotent payment**
- Given a checkout request that timed out on the client
- When the client retries with the same idempotency key
- Then the API returns the original order and Stripe shows exactly one charge.

**AC-3 Cart across devices**
- Given a signed-in customer who added an item on the mobile app
- When they open the web storefront
- Then the cart shows the same item, quantity and price.

**AC-4 Account deletion**
- Given a customer who requests deletion of their account
- When the deletion job runs
- Then personal data is erased or anonymized and order records keep only legally required
  fields.

## 5. Prioritization (MoSCoW)

- **Must have** (no revenue, or legal exposure, without them): FR-CAT-1, FR-CAT-3, FR-CART-1,
  FR-CHK-1..3, FR-ORD-1, FR-ACC-1, FR-ACC-3, NFR-1..6.
- **Should have** (conversion and retention): FR-CAT-2, FR-CART-2, FR-ORD-2, NFR-7.
- **Could have** (a nicer cart page): the VAT breakdown per line of FR-CART-3.
- **Won't have this release** (business impact too low for now): wish lists, product reviews,
  loyalty points.

## 6. Assumptions and Open Questions

**Assumptions**
- Stripe is the only payment provider; prices are in EUR only.
- Stock is owned by the existing warehouse system and read through its API.

**Open questions for the product owner**
1. Should guest orders be attachable to an account created later?
2. How long must order history be retained, and which fields are legally required?
3. Is search expected to cover multiple languages at launch?
"""

DESIGN = """\
# Northwind Outfitters E-commerce API: Architecture

## Overview

A modular monolith in Python (FastAPI) on Azure, sized for a team of six Python developers.
It meets the stated requirements (300 orders per minute at peak, 99.9% availability, Stripe
payments, EU data residency in West Europe) without the operational cost of microservices.

## Components

- **API** (FastAPI, modular monolith): modules `catalog`, `cart`, `checkout`, `orders` and
  `accounts`, each with its own router, service layer and tables.
- **PostgreSQL** (Azure Database for PostgreSQL, West Europe): system of record for products,
  carts, orders and customers.
- **Redis** (Azure Cache for Redis): cache for catalog reads and category listings, cart
  sessions, rate-limit counters.
- **Queue** (Azure Service Bus): order events, emails and Stripe webhook processing, off the
  request path.
- **Worker** (same codebase, separate process): consumes the queue for confirmations, stock
  sync and GDPR export/deletion jobs.
- **Stripe**: payments; card data never touches our servers.

Modules talk through Python interfaces, never through each other's tables, so a module can be
extracted later if load or team size ever justifies it.

## Data Model

- `product(id, sku UNIQUE, name, description, price NUMERIC(10,2), currency, category_id)`
- `cart(id, customer_id NULL, token, updated_at)` and `cart_item(cart_id, product_id, qty)`
- `order(id, customer_id NULL, email, status, total, currency, idempotency_key UNIQUE)`
- `order_line(order_id, product_id, sku, unit_price, qty)`: prices copied at purchase time
- `payment(id, order_id, stripe_payment_intent_id UNIQUE, status)`
- `customer(id, email UNIQUE, password_hash, marketing_consent, deleted_at)`

## API Design

- Resource-oriented REST under `/v1`, JSON bodies, snake_case fields, ISO 8601 UTC timestamps.
- Cursor pagination for lists; errors as RFC 7807 problem details.
- `Idempotency-Key` header required on `POST /v1/checkout`; the key is stored with the order so
  a retry returns the original order.
- OpenAPI generated by FastAPI is the contract; breaking changes only in a new major version.

## Scalability

- The API is stateless: App Service scales out horizontally from 2 to 8 instances on CPU and
  request-queue length; sale peaks are absorbed by scaling out before the sale starts.
- Catalog reads are served from the Redis cache (TTL 60 s, invalidated on product updates), so
  PostgreSQL mostly sees writes from checkout.
- Slow work (emails, webhooks, stock sync) goes through the queue and the worker, keeping
  checkout latency flat under load.
- PostgreSQL with a read replica for reporting; connection pooling via PgBouncer.

## Trade-offs

| Choice | Gain | Cost |
|--------|------|------|
| Modular monolith, not microservices | one deploy, one database | one release cadence |
| Redis cache for the catalog | fast reads at peak | prices stale up to 60 s |
| Service Bus queue | resilience to slow providers | eventual consistency of emails |

Checkout always re-reads prices from PostgreSQL, so a stale cached price is never charged.

## Architecture Decisions

### ADR-001: Modular monolith
- **Context:** six developers, one product, peak of 300 orders per minute.
- **Decision:** one FastAPI application with strict module boundaries and one PostgreSQL.
- **Consequences:** low operational cost; boundaries enforced by import rules in CI; extraction
  of a module stays possible.

### ADR-002: Idempotent checkout with Stripe PaymentIntents
- **Context:** mobile clients retry on timeouts; double charges are unacceptable.
- **Decision:** require an idempotency key, store it uniquely on the order, pass it to Stripe.
- **Consequences:** retries are safe; clients must generate and keep the key per checkout.
"""


def main() -> None:
    prompt = sys.stdin.read()
    design = "architecture" in prompt.casefold()
    sys.stdout.write(DESIGN if design else REQUIREMENTS)


if __name__ == "__main__":
    main()
