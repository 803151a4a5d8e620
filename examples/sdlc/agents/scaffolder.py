"""STAND-IN agent: the Scaffolder (phase ``scaffold``).

An offline placeholder that prints a canned answer, so the example runs with no model and no
network. Replace it with your real Scaffolder agent in ``coalmine.yaml``, e.g. a CLI agent
(``argv: ["claude", "-p"]``) or an ``openai`` provider agent with the Scaffolder's system prompt.

It reads the canary prompt on stdin and writes its answer on stdout.
"""

from __future__ import annotations

import sys

ANSWER = """\
# Scaffold: Northwind Outfitters Orders API

FastAPI on Python 3.12, SQLAlchemy 2.0 with Alembic migrations, pydantic-settings, pytest.
The layout follows common FastAPI conventions: separate routers, settings and database modules.

## Project Structure

```text
orders-api/
├── pyproject.toml
├── Dockerfile
├── alembic.ini
├── migrations/
│   ├── env.py
│   └── versions/
├── src/orders_api/
│   ├── __init__.py
│   ├── main.py            # application entry point
│   ├── settings.py        # pydantic-settings configuration
│   ├── database.py        # async engine and session factory
│   └── routers/
│       ├── __init__.py
│       └── health.py
├── tests/
│   ├── conftest.py
│   └── test_health.py
└── .github/workflows/ci.yml
```

## Dependencies

`pyproject.toml`:

```toml
[project]
name = "orders-api"
version = "0.1.0"
requires-python = ">=3.12"
dependencies = [
  "fastapi>=0.115",
  "uvicorn[standard]>=0.30",
  "sqlalchemy[asyncio]>=2.0",
  "asyncpg>=0.29",
  "alembic>=1.13",
  "pydantic-settings>=2.4",
]

[project.optional-dependencies]
dev = ["pytest>=8", "pytest-asyncio>=0.23", "httpx>=0.27", "ruff>=0.6"]

[build-system]
requires = ["hatchling"]
build-backend = "hatchling.build"

[tool.ruff]
line-length = 100

[tool.pytest.ini_options]
asyncio_mode = "auto"
```

## Configuration

`src/orders_api/settings.py`: connection strings and secrets come from environment variables,
never hard-coded values.

```python
from pydantic_settings import BaseSettings, SettingsConfigDict


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_file=".env", extra="ignore")

    database_url: str  # read from DATABASE_URL
    log_level: str = "INFO"


settings = Settings()
```

`src/orders_api/database.py`:

```python
from sqlalchemy.ext.asyncio import async_sessionmaker, create_async_engine

from orders_api.settings import settings

engine = create_async_engine(settings.database_url, pool_pre_ping=True)
SessionLocal = async_sessionmaker(engine, expire_on_commit=False)


async def get_session():
    async with SessionLocal() as session:
        yield session
```

## Application Entry Point

`src/orders_api/main.py` and `src/orders_api/routers/health.py`:

```python
from fastapi import FastAPI

from orders_api.routers import health

app = FastAPI(title="Northwind Outfitters Orders API", version="0.1.0")
app.include_router(health.router)
```

```python
from fastapi import APIRouter

router = APIRouter()


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    return {"status": "ok"}
```

`Dockerfile`:

```dockerfile
FROM python:3.12-slim
WORKDIR /app
COPY pyproject.toml ./
COPY src ./src
RUN pip install --no-cache-dir .
EXPOSE 8000
CMD ["uvicorn", "orders_api.main:app", "--host", "0.0.0.0", "--port", "8000"]
```

## Testing

`tests/test_health.py`:

```python
from httpx import ASGITransport, AsyncClient

from orders_api.main import app


async def test_healthz() -> None:
    transport = ASGITransport(app=app)
    async with AsyncClient(transport=transport, base_url="http://test") as client:
        response = await client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
```

`.github/workflows/ci.yml`:

```yaml
name: ci
on: [push, pull_request]
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: actions/setup-python@v5
        with:
          python-version: "3.12"
      - run: pip install -e ".[dev]"
      - run: ruff check .
      - run: pytest -q
```

## Getting Started

```bash
python3.12 -m venv .venv && source .venv/bin/activate
pip install -e ".[dev]"                      # installing the service and dev tools
export DATABASE_URL=postgresql+asyncpg://orders:orders@localhost:5432/orders
docker run -d -p 5432:5432 -e POSTGRES_USER=orders -e POSTGRES_PASSWORD=orders postgres:16
alembic upgrade head                         # migrating the database
pytest -q                                    # running tests
uvicorn orders_api.main:app --reload         # starting the server; curl localhost:8000/healthz
```

The server starts and the health check answers without edits once `DATABASE_URL` points at a
running PostgreSQL.
"""


def main() -> None:
    sys.stdin.read()  # the prompt; a real agent would act on it
    sys.stdout.write(ANSWER)


if __name__ == "__main__":
    main()
