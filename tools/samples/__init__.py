"""Generators of the sample sessions bundled in `inspector/samples/` (not shipped in the wheel).

`generate` writes general Claude Code sessions, `scripted` the teaching scenarios, `opencollab` the
OpenCollab run folder; `regenerate` is their command line.
"""
