"""Local helpers around the Agents SDK. Named agents_helpers so it never shadows the SDK's `agents` package."""
