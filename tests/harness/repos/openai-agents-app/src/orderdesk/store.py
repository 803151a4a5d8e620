"""A tiny JSON-file order store so the demo runs without the real backend."""

from __future__ import annotations

import json
import os
from pathlib import Path

_PATH = Path(os.environ.get("ORDERDESK_ORDERS", "orders.json"))

_SEED = {
    "A1001": {"email": "sam@example.com", "total": 42.50, "status": "delivered", "carrier": "UPS", "refunded": 0.0},
    "A1002": {"email": "kim@example.com", "total": 129.00, "status": "in_transit", "carrier": "DHL", "refunded": 0.0},
}


def load() -> dict[str, dict]:
    if _PATH.exists():
        return json.loads(_PATH.read_text())
    return dict(_SEED)


def save(orders: dict[str, dict]) -> None:
    _PATH.write_text(json.dumps(orders, indent=2))
