"""Following growing transcripts and finding sessions on this machine (no Textual here)."""

from .discovery import SessionInfo, discover, sessions_table
from .follow import (
    Follower,
    FollowUpdate,
    ReaderFactory,
    ReloadingReader,
    TranscriptReader,
    factory_for_format,
    follower_for,
    reader_factory_for,
)

__all__ = [
    "FollowUpdate",
    "Follower",
    "ReaderFactory",
    "ReloadingReader",
    "SessionInfo",
    "TranscriptReader",
    "discover",
    "factory_for_format",
    "follower_for",
    "reader_factory_for",
    "sessions_table",
]
