"""The Textual app (the only package that imports Textual).

`run_app(transcript, policy, window, follower=...)` opens a transcript (followed live when the
follower that read it is given); `run_app(None)` opens the session picker.
"""

from inspector.tui.app import InspectorApp, MainScreen, run_app

__all__ = ["InspectorApp", "MainScreen", "run_app"]
