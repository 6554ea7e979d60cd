"""The FTS index kept whole in LanceDB's index cache for the searches of this process.

LanceDB reads an FTS index lazily: each query fetches the posting lists of its terms,
and they are not kept, so on object storage every query paid a handful of ranged GETs
of the index (3–9 at 10k chunks, the same ranges again and again). ``prewarm_index``
loads the whole index into the session's cache once (at 100k chunks of the bench corpus
about 8 MB in 17 requests); the keyword leg then reads no index file.

A table's index changes only with a new table version (an optimize folds rows in, a
rebuild creates it), so the prewarm is repeated when the version moves: one cheap
request while the index is unchanged, a full load after it changed.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any


class FtsWarmth:
    """Which table version's FTS index this process last loaded, per table handle (held
    weakly: a handle dropped with its generation leaves no entry a new one could reuse)."""

    def __init__(self, index: str) -> None:
        self.index = index
        self._lock = threading.Lock()
        self._warm: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()

    def warm(self, table: Any, version: int) -> bool:
        """Whether ``table``'s index was loaded at ``version`` (no call, no lock)."""
        return self._warm.get(table) == version

    def ensure(self, table: Any) -> None:
        """Load ``table``'s FTS index into the cache unless done at its current version."""
        version = int(table.version)
        if self.warm(table, version):
            return
        with self._lock:
            if self.warm(table, version):
                return
            if self.index in {i.name for i in table.list_indices()}:  # from the manifest
                table.prewarm_index(self.index)
            self._warm[table] = version
