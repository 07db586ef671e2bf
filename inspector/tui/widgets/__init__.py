"""The app's widgets: gauge, sparkline, pipeline columns, side panes, key bar."""

from inspector.tui.widgets.columns import LedgerColumns
from inspector.tui.widgets.gauge import PressureGauge
from inspector.tui.widgets.keybar import KeyBar
from inspector.tui.widgets.side import MessageDetail, PinnedSources
from inspector.tui.widgets.sparkline import ContextSparkline

__all__ = ["ContextSparkline", "KeyBar", "LedgerColumns", "MessageDetail", "PinnedSources", "PressureGauge"]
