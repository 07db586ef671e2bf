"""The Textual app (the only package that imports Textual).

`run_app(transcript, settings, follower=...)` opens a transcript under a run's settings
(`inspector.replay.settings.RunSettings`; followed live when the follower that read it is given);
`run_app(None)` opens the session picker.
"""

from inspector.tui.app import InspectorApp, MainScreen, run_app

__all__ = ["InspectorApp", "MainScreen", "run_app"]
