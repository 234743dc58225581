"""Facts about Hermes itself, as pure code: names, schedules, defaults, avatar formats.

Everything here restates what Hermes does (docs/hermes/), so that manifests, the planner and the
adapters share one copy. No I/O: nothing in this package reads a file, the clock or the network.
"""

from __future__ import annotations

DEFAULT_PROFILE = "default"  # the root profile; `hermes profile` never creates or deletes it
AVATAR_EXTENSIONS = ("png", "jpg", "webp")  # what Hermes' asset writer accepts, in its order


def image_extension(head: bytes) -> str | None:
    """png / jpg / webp by magic bytes (as Hermes' set_asset detects them), else None."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpg"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "webp"
    return None
