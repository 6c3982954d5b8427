"""A plain function as a slot of a QObject, so a worker's signal runs it on that object's thread.

With no receiving object, PySide runs a lambda or a plain function connected to a signal on the thread
of the object whose signal it is (the sender stands in for the receiver). A worker moved to its own
thread (the engine's, the documents') is such a sender: a bare function connected to its signals runs
on the worker's thread and would touch widgets there. `owned_slot(owner, fn)` makes `fn` the method of
a small QObject that `owner` owns: the connection then has a receiver on `owner`'s thread (queued from
any other thread), and it ends when `owner` is destroyed. A method of a QObject subclass needs none of
this: it is its own receiver; nor does a signal of an object on the GUI thread (McpServers, PoolJobs,
StoreProxy), whatever thread emits it.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject


class _OwnedSlot(QObject):
    def __init__(self, fn: Callable[..., object], owner: QObject):
        super().__init__(owner)
        self._fn = fn

    def call(self, *args: object) -> None:
        self._fn(*args)


def owned_slot(owner: QObject, fn: Callable[..., object]) -> Callable[..., None]:
    """`fn` as a slot that runs on `owner`'s thread and lives as long as `owner`: connect a worker's
    signal to it (`worker.done.connect(owned_slot(widget, lambda x: widget.show(x)))`)."""
    return _OwnedSlot(fn, owner).call
