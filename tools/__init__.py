"""Tools for developers, outside the wheel: the generators of the bundled sample sessions."""
