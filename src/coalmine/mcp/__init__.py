"""``coalmine mcp``: coalmine as a Model Context Protocol server, for coding agents.

:mod:`coalmine.mcp.tools` holds what each tool does (library calls, no MCP);
:mod:`coalmine.mcp.server` alone imports the MCP SDK (``pip install 'coalmine[mcp]'``).
"""
