"""One reader per harness, and detection by content."""

from .base import LineSplitter, LoaderError, Progress, Reader
from .detect import detect, load

__all__ = ["LineSplitter", "LoaderError", "Progress", "Reader", "detect", "load"]
