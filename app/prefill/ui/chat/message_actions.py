"""What a message's buttons do: regenerate, page an answer's versions, edit in place, branch, delete."""

from __future__ import annotations

from PySide6.QtCore import QObject

from prefill.ui.chat.controller import ChatController
from prefill.ui.chat.transcript.view import ChatView


class MessageActions(QObject):
    """Runs a message action (the view's `message_action`) on the chat's controller.

    One per view, made when the window is wired: it joins the view's Undo toast and inline
    editor to the controller.
    """

    def __init__(self, controller: ChatController, view: ChatView):
        super().__init__(view)
        self.controller, self.view = controller, view
        pending = controller.pending
        pending.offered.connect(view.toast.offer)
        pending.closed.connect(view.toast.hide)
        view.toast.undo_requested.connect(pending.undo)
        view.edit_saved.connect(self._on_view_edit_saved)

    def run(self, name: str, row: int) -> None:
        """Do `name` ("regenerate", "retry", "delete", "edit", "branch", "older", "newer"; "copy" is
        the view's own) on the message at `row`."""
        c = self.controller
        if name == "regenerate":
            c.edits.regenerate(row)
        elif name == "retry":
            c.edits.retry(row)
        elif name == "delete":
            c.edits.delete(row)
        elif name == "edit":
            if not c.busy:
                self.view.begin_edit(row)
        elif name == "branch":
            c.edits.branch(row)
        elif name in ("older", "newer"):
            c.edits.page(row, -1 if name == "older" else 1)

    def _on_view_edit_saved(self, row: int, text: str) -> None:
        if text != self.controller.model.row(row).content:
            self.controller.edits.edit(row, text)
