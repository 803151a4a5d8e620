"""Run context shared by all agents in one conversation."""

from __future__ import annotations

from pydantic import BaseModel


class SupportContext(BaseModel):
    customer_email: str | None = None
    order_id: str | None = None
    refund_issued: bool = False
