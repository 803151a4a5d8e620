"""Tools the agent can call.

`search` wraps Tavily web search; `fetch_page` downloads one page so the model
can read it; `get_current_time` is a trivial helper that keeps the model from
inventing dates.
"""

from datetime import UTC, datetime
from typing import Any, Callable, List, Optional, cast

import httpx
from langchain_core.tools import tool
from langchain_tavily import TavilySearch
from langgraph.runtime import get_runtime

# from langchain_community.tools import DuckDuckGoSearchRun  # old fallback, kept for reference

from react_agent.configuration import Context


async def search(query: str) -> Optional[dict[str, Any]]:
    """Search for general web results.

    Useful for answering questions about current events or anything that
    needs fresh information from the web.
    """
    runtime = get_runtime(Context)
    wrapped = TavilySearch(max_results=runtime.context.max_search_results)
    return cast(dict[str, Any], await wrapped.ainvoke({"query": query}))


@tool
async def fetch_page(url: str) -> str:
    """Fetch a web page and return its text (truncated).

    Args:
        url: An http(s) URL previously returned by `search`.
    """
    runtime = get_runtime(Context)
    async with httpx.AsyncClient(follow_redirects=True, timeout=15.0) as client:
        resp = await client.get(url, headers={"User-Agent": "react-agent/0.0.3"})
        resp.raise_for_status()
    return resp.text[: runtime.context.max_page_chars]


@tool
def get_current_time() -> str:
    """Return the current UTC time in ISO 8601 format."""
    return datetime.now(tz=UTC).isoformat()


TOOLS: List[Callable[..., Any]] = [search, fetch_page, get_current_time]
