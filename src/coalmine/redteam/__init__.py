"""Red-team packs by surface (tools, MCP, RAG, browser, general), their strategies, and the report.

``coalmine redteam generate`` writes the packs as the red-team kit's eval suites, built from the
repository's profile (:mod:`coalmine.redteam.packs`, :mod:`coalmine.redteam.suites`);
``coalmine redteam report RUN`` groups a stored run's findings by surface, category, strategy
and severity, mapped to the OWASP LLM Top 10 2025 (:mod:`coalmine.redteam.report`).
"""
