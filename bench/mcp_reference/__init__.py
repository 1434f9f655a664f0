"""``toolcards serve`` beside the Node reference MCP servers: ``python -m bench.mcp_reference``.

Run by hand (see ``__main__``); neither ``make test`` nor a plain ``python -m bench``
collects this package. The reference servers are installed with npm into a cache directory
outside the repository; nothing of theirs is kept here.
"""
