"""One reader per harness, and detection by content."""

from .base import LineSplitter, LoaderError, Reader
from .detect import detect, load

__all__ = ["LineSplitter", "LoaderError", "Reader", "detect", "load"]
