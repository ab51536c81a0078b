"""The in-process driver of the reconcile handlers for `callscope serve` (Kopf drives them in a cluster):
one pass over everything at start, then every change the store's watch reports (with the objects that depend on
the changed one), and a pass over everything every `reconcile_interval_seconds`."""

from __future__ import annotations

import asyncio

import structlog

from callscope.errors import ServiceUnavailable
from callscope.operator.handlers import dependents, reconcile
from callscope.resources import KINDS, Resource
from callscope.services.context import Context
from callscope.store.factory import build_secret_store
from callscope.store.interface import Gone, StaleResourceVersion

log = structlog.get_logger()


class EmbeddedOperator:
    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.secrets = build_secret_store(ctx.settings)
        self._tasks: list[asyncio.Task] = []

    async def reconcile_one(self, obj: Resource) -> None:
        try:
            await reconcile(self.ctx, obj, self.secrets)
        except StaleResourceVersion:
            pass  # someone changed it meanwhile; their change comes back through the watch
        except ServiceUnavailable as exc:  # the catalog is away (logged once there): the periodic re-check retries
            log.info("reconcile_postponed", kind=obj.KIND, account=obj.namespace, name=obj.name, error=exc.message)
        except Exception:
            log.exception("reconcile_failed", kind=obj.KIND, account=obj.namespace, name=obj.name)

    async def reconcile_all(self) -> None:
        for cls in KINDS.values():
            for obj in list(self.ctx.store.cached_list(cls)):
                current = self.ctx.store.cached_get(cls, obj.namespace, obj.name)
                if current is not None:
                    await self.reconcile_one(current)

    async def _follow(self, cls: type[Resource]) -> None:
        while True:
            try:
                _, version = await self.ctx.store.list_with_version(cls)
                async for event in self.ctx.store.watch(cls, None, version):
                    await self.ctx.store.sync()
                    current = self.ctx.store.cached_get(cls, event.object.namespace, event.object.name)
                    if current is not None:
                        await self.reconcile_one(current)
                    # A deleted object's dependents too: references to it dangle, the value it held is free.
                    for obj in dependents(self.ctx, current or event.object):
                        await self.reconcile_one(obj)
            except Gone:
                await self.reconcile_all()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("operator_watch_failed", kind=cls.KIND)
                await asyncio.sleep(1)

    async def _recheck(self) -> None:
        """What the controller's timers do: a value freed by a change elsewhere, or a missed event, is seen here."""
        while True:
            await asyncio.sleep(self.ctx.settings.reconcile_interval_seconds)
            await self.reconcile_all()

    async def start(self) -> None:
        await self.reconcile_all()
        self._tasks = [asyncio.create_task(self._follow(cls), name=f"reconcile-{cls.KIND}") for cls in KINDS.values()]
        self._tasks.append(asyncio.create_task(self._recheck(), name="recheck"))

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        await self.secrets.aclose()
