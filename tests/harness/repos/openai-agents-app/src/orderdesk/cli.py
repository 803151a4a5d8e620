"""Command-line entry point: `orderdesk "Where is my order A1002?"`."""

from __future__ import annotations

import argparse
import asyncio
import sys

from dotenv import load_dotenv
from agents import Runner, trace

# from openai import AsyncOpenAI                    # only needed for a custom client;
# from agents import set_default_openai_client      # OPENAI_BASE_URL is picked up already

from agents_helpers.printing import print_run
from orderdesk.context import SupportContext
from orderdesk.triage import triage_agent


async def ask(question: str, *, verbose: bool = False) -> str:
    context = SupportContext()
    with trace("orderdesk"):
        result = await Runner.run(triage_agent, question, context=context, max_turns=10)
    if verbose:
        print_run(result)
    return str(result.final_output)


def main(argv: list[str] | None = None) -> int:
    load_dotenv()
    parser = argparse.ArgumentParser(prog="orderdesk", description="Ask the support desk agent a question.")
    parser.add_argument("question", help="The customer's message, in quotes.")
    parser.add_argument("-v", "--verbose", action="store_true", help="Print tool calls and handoffs.")
    args = parser.parse_args(argv)
    print(asyncio.run(ask(args.question, verbose=args.verbose)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
