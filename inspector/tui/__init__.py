"""The Textual app (the only package that imports Textual): `run_app(transcript, policy, window)`."""

from inspector.tui.app import InspectorApp, MainScreen, run_app

__all__ = ["InspectorApp", "MainScreen", "run_app"]
