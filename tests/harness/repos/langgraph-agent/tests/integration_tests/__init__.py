"""Integration checks: these call the real model and Tavily."""
