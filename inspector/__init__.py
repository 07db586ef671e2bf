"""context-inspector: what an AI coding agent's context window really held, request by request."""

__version__ = "0.1.0"
