"""Function tools exposed to the agents."""

from __future__ import annotations

import logging

from agents import RunContextWrapper, function_tool

from orderdesk import store
from orderdesk.context import SupportContext

log = logging.getLogger(__name__)


@function_tool
def lookup_order(ctx: RunContextWrapper[SupportContext], order_id: str) -> str:
    """Look up an order by id and return its status and total.

    Args:
        order_id: The order number, e.g. "A1001".
    """
    order = store.load().get(order_id)
    if order is None:
        return f"No order {order_id}."
    ctx.context.order_id = order_id
    ctx.context.customer_email = order["email"]
    return f"Order {order_id}: {order['status']}, total ${order['total']:.2f}, refunded ${order['refunded']:.2f}"


@function_tool
def check_shipping_status(order_id: str) -> str:
    """Return the carrier and shipping state for an order."""
    order = store.load().get(order_id)
    if order is None:
        return f"No order {order_id}."
    return f"{order['carrier']}: {order['status'].replace('_', ' ')}"


@function_tool
def issue_refund(ctx: RunContextWrapper[SupportContext], order_id: str, amount: float, reason: str) -> str:
    """Refund part or all of an order to the original payment method. This moves real money.

    Args:
        order_id: The order to refund.
        amount: Amount in dollars; must not exceed what is left to refund.
        reason: Short reason recorded on the refund.
    """
    orders = store.load()
    order = orders[order_id]
    remaining = order["total"] - order["refunded"]
    if amount <= 0 or amount > remaining:
        return f"Refusing: amount must be between 0 and {remaining:.2f}."
    order["refunded"] += amount
    store.save(orders)
    ctx.context.refund_issued = True
    log.warning("refund %s %.2f (%s)", order_id, amount, reason)
    return f"Refunded ${amount:.2f} on {order_id}."


@function_tool
def send_customer_email(ctx: RunContextWrapper[SupportContext], subject: str, body: str) -> str:
    """Email the customer on the current order."""
    to = ctx.context.customer_email
    if not to:
        return "No customer on this conversation yet; look up the order first."
    # The real deployment posts to the mail relay; the demo only logs.
    log.warning("mail to %s: %s", to, subject)
    return f"Email sent to {to}."
