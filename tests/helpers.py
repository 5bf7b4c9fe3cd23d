"""Helpers shared by the export tests."""

import struct


def png_size(data: bytes) -> tuple[int, int]:
    """Width and height of a PNG, after checking its signature."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR"
    return struct.unpack(">II", data[16:24])
