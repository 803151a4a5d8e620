"""orderdesk: support agent for order, shipping and refund questions."""

__version__ = "0.3.1"
