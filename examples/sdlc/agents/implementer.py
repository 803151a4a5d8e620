"""STAND-IN agent: the Implementer (phase ``implement``), called in-process.

An offline placeholder that returns a canned answer, so the example runs with no model and no
network. Replace it with your real Implementer agent. This one shows the ``python`` provider:
``coalmine.yaml`` names it as ``target: "agents.implementer:run"`` and coalmine calls
``run(prompt, context)`` in its own process (``context`` carries the case id, agent name and
phase; it is never part of the prompt). Your real ``run`` could call your agent framework here.

``python3 agents/implementer.py < prompt.txt`` runs it from the command line too.
"""

from __future__ import annotations

import sys
from typing import Any

ANSWER = """\
# Product CRUD Endpoints

Handlers implement create, read, list, update and delete for products with the requested status
codes: 201 on create, 200 on read, list and update, 204 on delete, 404 for an unknown id, 409
for a duplicate SKU.

## Schemas

`src/orders_api/products/schemas.py`: Pydantic v2 models validate every request and response.

```python
from decimal import Decimal
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

Currency = Annotated[str, Field(pattern=r"^[A-Z]{3}$")]  # ISO 4217 currency codes


class ProductIn(BaseModel):
    sku: Annotated[str, Field(min_length=1, max_length=64)]
    name: Annotated[str, Field(min_length=1, max_length=200)]
    description: str = ""
    price: Annotated[Decimal, Field(gt=0, max_digits=10, decimal_places=2)]
    currency: Currency
    stock_quantity: Annotated[int, Field(ge=0)]
    category: Annotated[str, Field(min_length=1)]


class ProductPatch(BaseModel):
    name: str | None = None
    description: str | None = None
    price: Annotated[Decimal, Field(gt=0, max_digits=10, decimal_places=2)] | None = None
    currency: Currency | None = None
    stock_quantity: Annotated[int, Field(ge=0)] | None = None
    category: str | None = None


class ProductOut(ProductIn):
    model_config = ConfigDict(from_attributes=True)

    id: int
```

The models reject negative prices, negative stock and malformed currency codes with a 422
before any handler runs.

## Endpoints

`src/orders_api/products/router.py`: SQLAlchemy 2.0 async sessions; every query is built with
the SQLAlchemy expression API, so all database access is parameterized (no string-built SQL).

```python
from fastapi import APIRouter, Depends, HTTPException, Query, Response, status
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from orders_api.database import get_session
from orders_api.products.models import Product
from orders_api.products.schemas import ProductIn, ProductOut, ProductPatch

router = APIRouter(prefix="/products", tags=["products"])


async def _get_or_404(session: AsyncSession, product_id: int) -> Product:
    product = await session.get(Product, product_id)
    if product is None:
        raise HTTPException(status_code=404, detail=f"product {product_id} not found")
    return product


@router.post("", response_model=ProductOut, status_code=status.HTTP_201_CREATED)
async def create_product(body: ProductIn, session: AsyncSession = Depends(get_session)):
    product = Product(**body.model_dump())
    session.add(product)
    try:
        await session.commit()
    except IntegrityError:
        await session.rollback()
        raise HTTPException(status_code=409, detail=f"SKU {body.sku} already exists") from None
    await session.refresh(product)
    return product


@router.get("/{product_id}", response_model=ProductOut)
async def read_product(product_id: int, session: AsyncSession = Depends(get_session)):
    return await _get_or_404(session, product_id)


@router.get("", response_model=list[ProductOut])
async def list_products(
    limit: int = Query(20, ge=1, le=100),
    offset: int = Query(0, ge=0),
    category: str | None = None,
    session: AsyncSession = Depends(get_session),
):
    query = select(Product).order_by(Product.id).limit(limit).offset(offset)
    if category is not None:
        query = query.where(Product.category == category)
    return (await session.scalars(query)).all()


@router.patch("/{product_id}", response_model=ProductOut)
async def update_product(
    product_id: int, body: ProductPatch, session: AsyncSession = Depends(get_session)
):
    product = await _get_or_404(session, product_id)
    for field, value in body.model_dump(exclude_unset=True).items():
        setattr(product, field, value)
    await session.commit()
    await session.refresh(product)
    return product


@router.delete("/{product_id}", status_code=status.HTTP_204_NO_CONTENT)
async def delete_product(product_id: int, session: AsyncSession = Depends(get_session)):
    product = await _get_or_404(session, product_id)
    await session.delete(product)
    await session.commit()
    return Response(status_code=status.HTTP_204_NO_CONTENT)
```

## Error Handling

| Case | Status | Where |
|------|--------|-------|
| Unknown product id | 404 | `_get_or_404` raises `HTTPException(status_code=404)` |
| Duplicate SKU | 409 | unique constraint on `sku`, `IntegrityError` mapped to 409 |
| Invalid body (negative price or stock, bad currency) | 422 | Pydantic validation |

## Tests

`tests/test_products.py`: pytest with `httpx.AsyncClient`; the tests exercise the happy path
plus the 404 and 409 error cases.

```python
import pytest
from httpx import ASGITransport, AsyncClient

from orders_api.main import app

PRODUCT = {
    "sku": "TENT-2P-GRN",
    "name": "Two-person tent",
    "price": "249.00",
    "currency": "EUR",
    "stock_quantity": 12,
    "category": "tents",
}


@pytest.fixture
async def client():
    transport = ASGITransport(app=app)
    async with AsyncClient(transport=transport, base_url="http://test") as c:
        yield c


async def test_create_read_update_delete(client: AsyncClient) -> None:
    created = await client.post("/products", json=PRODUCT)
    assert created.status_code == 201
    product_id = created.json()["id"]
    assert (await client.get(f"/products/{product_id}")).json()["sku"] == "TENT-2P-GRN"
    patched = await client.patch(f"/products/{product_id}", json={"stock_quantity": 3})
    assert patched.json()["stock_quantity"] == 3
    listed = await client.get("/products", params={"category": "tents", "limit": 10})
    assert [p["id"] for p in listed.json()] == [product_id]
    assert (await client.delete(f"/products/{product_id}")).status_code == 204


async def test_unknown_product_is_404(client: AsyncClient) -> None:
    assert (await client.get("/products/999999")).status_code == 404


async def test_duplicate_sku_is_409(client: AsyncClient) -> None:
    assert (await client.post("/products", json=PRODUCT)).status_code == 201
    assert (await client.post("/products", json=PRODUCT)).status_code == 409


@pytest.mark.parametrize("field, value", [("price", "-1"), ("stock_quantity", -1),
                                          ("currency", "euro")])
async def test_invalid_body_is_422(client: AsyncClient, field: str, value: object) -> None:
    response = await client.post("/products", json={**PRODUCT, "sku": "X-1", field: value})
    assert response.status_code == 422
```

The test database is created per session in `conftest.py` (SQLite via aiosqlite, or a
throwaway PostgreSQL in CI).
"""


def run(prompt: str, context: Any = None) -> str:
    """Return the Implementer's answer to ``prompt`` (``context`` is coalmine's CallContext)."""
    return ANSWER


if __name__ == "__main__":
    sys.stdout.write(run(sys.stdin.read()))
