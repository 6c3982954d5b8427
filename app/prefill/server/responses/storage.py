"""The kept responses as the routes use them: `store/api_responses.py`'s `ResponseLog` on one thread
of its own (its SQLite connection lives there), so no read or write blocks the event loop.

A response is found by its id and the hashed key of the client that made it (`core.client_of`), so a
client with another key cannot read, continue or delete it.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

from prefill.server.errors import ApiError, server_error
from prefill.store.api_responses import MAX_AGE_S, MAX_RESPONSES, ResponseLog, StoredResponse
from prefill.store.errors import StoreError

log = logging.getLogger(__name__)
T = TypeVar("T")
__all__ = ["MAX_AGE_S", "MAX_RESPONSES", "ResponseStorage", "StoredResponse"]


class ResponseStorage:
    """Kept responses, read and written off the event loop.

    Args:
        path: The database (None: the history's).
        limit: Responses kept at most (0: none is kept); none older than `max_age_s`.
    """

    def __init__(self, path: Path | None = None, limit: int = MAX_RESPONSES, max_age_s: float = MAX_AGE_S):
        self.limit = limit
        self._log = ResponseLog(path, limit=limit, max_age_s=max_age_s)
        self._thread: ThreadPoolExecutor | None = None

    async def _run(self, fn: Callable[..., T], *args: Any) -> T:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(1, thread_name_prefix="prefill-responses")
        try:
            return await asyncio.get_running_loop().run_in_executor(self._thread, fn, *args)
        except (StoreError, sqlite3.Error) as e:
            raise server_error(f"The kept responses could not be read or written: {e}.") from None

    async def get(self, response_id: str, owner: str) -> StoredResponse | None:
        return await self._run(self._log.get, response_id, owner)

    async def delete(self, response_id: str, owner: str) -> bool:
        return await self._run(self._log.delete, response_id, owner)

    async def save(self, response_id: str, owner: str, input_items: list[Any], body: dict[str, Any]) -> None:
        """Keep a finished response. A failure is logged, not raised: the answer it was is still sent."""
        if self.limit <= 0:
            return
        try:
            await self._run(self._log.save, response_id, owner, input_items, body)
        except ApiError as e:
            log.warning("%s", e.message)

    def close(self) -> None:
        """Close the database on its thread and end the thread (at the server's end)."""
        if self._thread is not None:
            self._thread.submit(self._log.close).result()
            self._thread.shutdown()
            self._thread = None
