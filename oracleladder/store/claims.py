"""``claims``: the calls being asked right now, each by the store (a process) that asks it, so that
two processes on one store pay each call once.

Before a call goes out, its asker claims its key (``claim``): one upsert, committed with the other
writes of its group. A key another live asker holds is waited for, its answer read from the file
once stored; a claim whose process is gone (same host: its pid no longer runs) or whose lease
lapsed (its asker stopped renewing: killed on another host, or hung) is taken over. Storing the call
(``put_call``, result or error) ends its claim in the same transaction; a call that ends without
being stored (refused by the budget, cancelled) ends it with ``release``.
"""

from __future__ import annotations

import asyncio
import time

from ..schemas.calls import ChatResult
from .calls import CallsTable, release_statement
from .rows import pack_key, process_gone

CLAIM_LEASE_S = 60.0  # a claim not renewed for this long is taken over; renewed every third of it
FIRST_POLL_S = 0.05  # a waiter looks for the answer after this long, then 1.5x as long each time
MAX_POLL_S = 1.0

_CLAIM = """
INSERT INTO claims (key, owner, expires) VALUES (?1, ?2, ?3)
ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
WHERE claims.owner = excluded.owner OR claims.expires < ?4 OR ladder_process_gone(claims.owner)
"""
_RENEW = "UPDATE claims SET expires = ? WHERE owner = ?"
_RELEASE_ALL = "DELETE FROM claims WHERE owner = ?"


def claim_gone(owner: str) -> bool:
    """The SQL function ``ladder_process_gone``: whether the process of a claim's owner (its
    ``process_owner``, "/", the store's own id) no longer runs."""
    return process_gone(owner.partition("/")[0])


class ClaimsTable(CallsTable):
    async def claim(self, key: str) -> ChatResult | None:
        """Claim the call ``key`` for this store: None once it is this store's to ask (then
        ``put_call`` or ``release`` ends the claim); its answer, when another process asked it."""
        packed = pack_key(key)
        poll = FIRST_POLL_S
        while True:
            t = time.time()
            await self._submit(_CLAIM, (packed, self._claimer, t + CLAIM_LEASE_S, t))
            holder = self._claim_of(packed)
            answer = await self.get_call(key)  # stored by another just before this claim: not asked again
            if holder is not None and holder[0] == self._claimer:
                if answer is not None:
                    await self.release(key)
                    return answer
                self._claimed.add(key)
                if self._renewal is None or self._renewal.done():
                    self._renewal = asyncio.get_running_loop().create_task(self._renew())
                return None
            # another process asks it: its answer once stored, or the claim once it lapses
            while answer is None and holder is not None and not _lapsed(*holder):
                await asyncio.sleep(poll)
                poll = min(poll * 1.5, MAX_POLL_S)
                answer = await self.get_call(key)
                holder = self._claim_of(packed)
            if answer is not None:
                return answer

    async def release(self, key: str) -> None:
        """End this store's claim on ``key`` without storing the call (queued, never awaited: it
        may be a cancelled task's last act)."""
        self._claimed.discard(key)
        if not self._closed and self._failure is None:
            await self._submit(*release_statement(key, self._claimer), wait=False)

    def _claim_of(self, packed: str | bytes) -> tuple[str, float] | None:
        """The owner of the claim on a key and when its lease ends (read from the file)."""
        row = self._reader.execute("SELECT owner, expires FROM claims WHERE key = ?", (packed,)).fetchone()
        return None if row is None else (row[0], row[1])

    async def _renew(self) -> None:
        """Renew this store's claims while it holds any."""
        while self._claimed and not self._closed:
            await asyncio.sleep(CLAIM_LEASE_S / 3)
            if self._claimed and not self._closed:
                await self._submit(_RENEW, (time.time() + CLAIM_LEASE_S, self._claimer), wait=False)

    async def close(self) -> None:
        """End every claim of this store, then close it."""
        try:
            if self._renewal is not None:
                self._renewal.cancel()
            self._claimed.clear()
            if not self._closed and not self.readonly and self._failure is None:
                await self._submit(_RELEASE_ALL, (self._claimer,), wait=False)
        finally:
            await super().close()


def _lapsed(owner: str, expires: float) -> bool:
    return expires < time.time() or claim_gone(owner)
