"""The models room wires its picker: the saved remote endpoints listed from the store, and what a
choice in it asks for (load a file, connect to an endpoint, open a file, add or edit an endpoint)."""

from __future__ import annotations

from collections.abc import Callable

from prefill.store.endpoints import SavedEndpoint
from prefill.ui.models.picker import ModelPicker
from prefill.ui.workers.store_worker import StoreProxy


def wire_model_choice(picker: ModelPicker, store: StoreProxy, load_local: Callable[[str], None],
                      load_remote: Callable[[SavedEndpoint], None], open_file: Callable[[], None],
                      edit_remote: Callable[[SavedEndpoint | None], None]) -> None:
    """Connect the picker to what its choices do; `edit_remote(None)` adds an endpoint."""
    picker.local_chosen.connect(load_local)
    picker.remote_chosen.connect(load_remote)
    picker.open_file_requested.connect(open_file)
    picker.add_remote_requested.connect(lambda: edit_remote(None))
    picker.edit_remote_requested.connect(edit_remote)
    store.load_endpoints(then=picker.set_endpoints)
