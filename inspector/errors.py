"""The base of every error a user can cause and fix (a bad path, file, policy, settings file or
request number): the command line prints such an error as its one line and exits 2, whichever
module raised it, without importing that module to name its errors (a command that needs no
replay never imports the replay). Imports nothing."""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix; printed as one line."""
