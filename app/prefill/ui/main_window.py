"""The main window: conversations | chat | engine sidebar, with the model picker on top."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QAction, QCloseEvent, QShowEvent
from PySide6.QtWidgets import (
    QDockWidget,
    QFileDialog,
    QMainWindow,
    QSplitter,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from prefill.engine.local.kv_disk import Usage
from prefill.session.loaded import LoadedModel
from prefill.store.app_settings import Settings
from prefill.store.endpoints import SavedEndpoint
from prefill.ui.chat.composer.image_attach import attach_images
from prefill.ui.chat.composer.input_box import InputBox
from prefill.ui.chat.composer.reasoning_controls import ReasoningControls
from prefill.ui.chat.controller import ChatController
from prefill.ui.chat.prompt_count import PromptCount
from prefill.ui.chat.room import ChatParts, wire_chat, wire_sidebar, wire_tools
from prefill.ui.chat.sidebar.sidebar import EngineSidebar, last_answer_figures
from prefill.ui.chat.tools.chat_tools import ChatToolsButton
from prefill.ui.chat.tools.tool_approval import ToolApprovalPanel
from prefill.ui.chat.transcript.transcript_model import Row, TranscriptModel
from prefill.ui.chat.transcript.view import ChatView
from prefill.ui.documents.index_panel import IndexPanel
from prefill.ui.documents.room import DocumentsRoom
from prefill.ui.history.conversation_list import ConversationList
from prefill.ui.history.menu import HistoryMenu
from prefill.ui.history.room import HistoryRoom
from prefill.ui.keyboard_access import install_focus_order
from prefill.ui.models.loading import ModelLoading
from prefill.ui.models.main_tabs import MainTabs, build_models_page
from prefill.ui.models.models_folder import usable_at_start
from prefill.ui.models.picker import ModelPicker, loaded_name
from prefill.ui.models.room import LibraryListing, wire_finder, wire_model_choice, wire_residents
from prefill.ui.panels import PanelToggles, StatusLabel, ask_export_chat, set_toolbar_icons, toolbar_spacer
from prefill.ui.server.room import ServerRoom
from prefill.ui.settings_apply import follow_engine_settings, follow_theme, reload_on_load_settings
from prefill.ui.settings_dialog import SettingsDialog
from prefill.ui.shortcuts import install as install_shortcuts
from prefill.ui.shortcuts import sheet_rows
from prefill.ui.shortcuts_sheet import show_sheet
from prefill.ui.welcome import Welcome
from prefill.ui.widgets.icons import icon
from prefill.ui.widgets.notices import NoticeAction, NoticeArea
from prefill.ui.widgets.text_sheet import TextSheet
from prefill.ui.widgets.theme import ThemeFollower, code_palette
from prefill.ui.widgets.tokens import COLUMN, ICON
from prefill.ui.wiring.room_actions import RoomActions
from prefill.ui.wiring.settings_changes import SettingsChanges
from prefill.ui.workers.documents_worker import DocumentsThread
from prefill.ui.workers.engine_worker import EngineThread
from prefill.ui.workers.store_worker import StoreProxy

if TYPE_CHECKING:
    from prefill.server.lifecycle import ServeOptions
    from prefill.ui.models.download_worker import DownloadWorker
    from prefill.ui.models.page import ModelsPage
    from prefill.ui.tools_dialog import ToolsDialog
    from prefill.ui.workers.mcp_servers import McpServers

CLOSE_GRACE_MS = 1500  # how long a close waits for a streaming answer to stop and be saved


class MainWindow(QMainWindow):
    """Signals:
        shown(): the window was first shown (for the start-up time measurement).
        model_loaded(object): a LoadedModel.
        closed(): the window closed, after a streaming answer was stopped and saved.
        cache_usage_changed(object): the saved-cache folder's kv_disk.Usage.
    """

    shown = Signal()
    model_loaded = Signal(object)
    closed = Signal()
    cache_usage_changed = Signal(object)

    def __init__(self, settings: Settings, store: StoreProxy, engine: EngineThread,
                 bundled: Path | None, theme: str = "light", mcp: McpServers | None = None,
                 documents: DocumentsThread | None = None):
        super().__init__()
        self.setWindowTitle("Prefill")
        settings, folder_notice = usable_at_start(settings)  # a Models folder that cannot be used: the default
        self.settings_changes = SettingsChanges(settings, self)  # `settings` below; parts subscribe to theirs
        self.store, self.engine, self.bundled = store, engine, bundled
        self.theme = theme
        self.theme_follower: ThemeFollower | None = None
        self.models_page: ModelsPage | None = None
        self.downloads: DownloadWorker | None = None
        self._closing = False  # a close is waiting for the answer to stop (a second close does not)
        self._closed = False
        self._grace = QTimer(self)
        self._grace.setSingleShot(True)
        self._grace.setInterval(CLOSE_GRACE_MS)
        self._grace.timeout.connect(self.close)
        self.cache_usage: Usage | None = None

        self.transcript = TranscriptModel()
        self.chat_view = ChatView(self.transcript, code_palette(theme))
        self.sidebar = EngineSidebar(theme)
        self.conversations = ConversationList()
        self.input = InputBox()
        self._notice_lasting = False  # the notice shown holds until replaced (else a load, a switch clear it)
        self._problems: list[str] = []  # what keeps failing (the history, the settings file), said apart
        self.welcome = Welcome(bundled)
        self.mcp = mcp  # the MCP servers whose tools chats may call (None: no tools)
        self.tools_dialog: ToolsDialog | None = None
        self.system_sheet: TextSheet | None = None  # the last System prompt sheet opened (kept until the next)
        self.tool_approval = ToolApprovalPanel()
        self.controller = ChatController(store, engine.worker, self.transcript, self.sidebar, lambda: self.settings,
                                         lambda: self.loaded.source if self.loaded else "",
                                         mcp.offered if mcp is not None else None)
        self.images = attach_images(self.input, self.chat_view, self, self.show_notice)
        # documents.sqlite3 beside the history; the thread starts when a document is first attached
        self.index_panel = IndexPanel()
        self.documents = DocumentsRoom(documents or DocumentsThread(store.history_path), self.controller.choices,
                                       self.input, self.index_panel, engine.worker, self.show_notice, self)

        self.stack = QStackedWidget()
        self.stack.addWidget(self.welcome)
        self.stack.addWidget(self.chat_view)
        middle = QWidget()
        ml = QVBoxLayout(middle)
        ml.setContentsMargins(0, 0, 0, 0)
        ml.addWidget(self.stack, 1)
        # Notices over the page, never in its layout: a banner for what needs action (the lasting problem
        # above it), a toast for passing news. A notice coming or going moves nothing.
        self.notices = NoticeArea(self.stack)
        self.notice, self.problem, self.toast = self.notices.banner, self.notices.problem, self.notices.toast
        self.notice.closed.connect(self._on_notice_closed)
        self.problem.closed.connect(self._problems.clear)  # said again if it comes again
        ml.addWidget(self.tool_approval)
        ml.addWidget(self.index_panel)
        ml.addWidget(self.input)
        self.splitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.addWidget(self.conversations)
        self.splitter.addWidget(middle)
        self.splitter.addWidget(self.sidebar)
        self.sidebar.setMinimumWidth(COLUMN.side_min_width)  # a label beside its value, never a sliver
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([220, 640, 300])
        self.tabs = MainTabs(self.splitter, self._build_models_page)
        self.setCentralWidget(self.tabs)
        self._build_toolbar()
        self.panels = PanelToggles(self.splitter, {"chats": self.conversations, "sidebar": self.sidebar},
                                   self.findChildren(QToolBar)[0])
        self.toolbar_fit = set_toolbar_icons(  # in a narrow window the longest words give way to shorter ones
            self, self.model_loaded, self.model_combo,
            [(self.system_action, "Prompt"), (self.history_menu.button, "Export"), (self.shortcuts_action, "Keys")])
        self.actions_offered = RoomActions()  # what the shortcuts run, offered by each room
        self._wire()
        self._restore_geometry()
        self.stack.setCurrentWidget(self.welcome)
        self.focus_order = install_focus_order(self, self)
        if folder_notice:
            self.show_notice(folder_notice, lasting=True)

    @property
    def settings(self) -> Settings:
        """The settings in force; setting them tells the parts that subscribed to what changed."""
        return self.settings_changes.settings

    @settings.setter
    def settings(self, new: Settings) -> None:
        self.settings_changes.set(new)

    # --- layout --------------------------------------------------------------------------
    def _build_toolbar(self) -> None:
        """The tool bar: the chat list's switch, the model picker and what is loaded at the left; the
        window's doors at the right, each an icon with its word beside it (ui/panels.py fits them)."""
        bar = QToolBar("Model")
        bar.setObjectName("main-toolbar")
        bar.setMovable(False)
        bar.setIconSize(QSize(ICON.toolbar, ICON.toolbar))
        bar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.addToolBar(bar)
        self.picker = ModelPicker(self)
        self.model_combo = self.picker.combo
        bar.addWidget(self.model_combo)
        self._fill_model_combo()
        self.load_state = StatusLabel("no model loaded")  # cut with "…" when the window is narrow
        self.load_state.setObjectName("load-state")
        bar.addWidget(self.load_state)
        self.cancel_load_action = QAction("Cancel", self)
        self.cancel_load_action.setToolTip("Stop loading this model")
        self.cancel_load_action.setVisible(False)
        bar.addAction(self.cancel_load_action)
        self.reasoning_controls = ReasoningControls()
        self.reasoning_action = bar.addWidget(self.reasoning_controls)  # a toolbar shows it by its action
        self.reasoning_action.setVisible(False)
        bar.addWidget(toolbar_spacer())  # the doors at the right end, over the sidebar
        self.system_action = QAction("System prompt", self)
        self.system_action.setToolTip("This chat's system prompt: how the model should answer (Ctrl+Shift+S)")
        self.settings_action = QAction("Settings", self)
        self.settings_action.setToolTip("Settings (Ctrl+,)")
        # The Models tab is the one entry to the Models page; the action is its shortcut (Ctrl+Shift+M).
        self.models_action = QAction("Models", self)
        self.serve_action = QAction("Serve", self)
        self.serve_action.setCheckable(True)
        self.serve_action.setToolTip("Serve the loaded model over an OpenAI-compatible API, with its request "
                                     "slots live")
        bar.addAction(self.serve_action)
        self.tools_button = ChatToolsButton(self)  # this chat's tools, and the MCP servers' dialog
        self.tools_button.setIcon(icon("tools"))
        self.tools_button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.tools_action = bar.addWidget(self.tools_button)
        self.tools_action.setVisible(self.mcp is not None)
        bar.addAction(self.system_action)
        bar.addAction(self.settings_action)
        self.history_menu = HistoryMenu(self, self.store, lambda: self.controller.conversation_id)
        # Named for what it does: chats out to files and back in (and, first, compacting the open chat).
        button = self.history_menu.button
        button.setObjectName("export-import")
        button.setText("Export/Import")
        button.setIcon(icon("export"))
        button.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        button.setToolTip("Export chats to files, import them back, compact this chat")
        button.setAccessibleName("Export or import chats; compact this chat")
        bar.addWidget(button)
        # The chat's own action, first in its menu: the model summarises the earlier turns (compaction_rows).
        self.compact_action = QAction("Compact this chat (summarise the earlier turns)", self)
        self.history_menu.menu.insertAction(self.history_menu.menu.actions()[0], self.compact_action)
        self.history_menu.menu.insertSeparator(self.history_menu.menu.actions()[1])
        self.shortcuts_action = bar.addAction("Shortcuts")
        self.shortcuts_action.setToolTip("Every keyboard shortcut (Ctrl+/)")
        self.quit_action = QAction("Quit", self)  # Ctrl+Q (shortcuts.py); the app quits when the window closes
        self.quit_action.setToolTip("Quit Prefill (Ctrl+Q)")

    def _models_dir(self) -> Path:
        from prefill.hub.paths import default_models_dir

        return Path(self.settings.ui.models_dir) if self.settings.ui.models_dir else default_models_dir()

    def _fill_model_combo(self) -> None:
        paths = [str(self.bundled)] if self.bundled is not None else []
        self.picker.set_paths([*paths, self.settings.model.last_model_path] if self.settings.model.last_model_path
                              else paths)

    def _wire(self) -> None:
        """Each room wires its own parts; here only what passes between rooms, and the window's own."""
        w = self.engine.worker
        self.loading = ModelLoading(w, self.store, self.load_state, self.cancel_load_action, lambda: self.settings,
                                    self)
        chat = ChatParts(self.controller, self.chat_view, self.transcript, self.input, self.tool_approval,
                         self.reasoning_controls, self.tools_button)
        self.message_actions = wire_chat(chat, self.actions_offered, self.show_notice, self.show_toast)
        self.prompt_count = PromptCount(w, self.controller, self.transcript, self.input, lambda: self.loaded, self)
        self.prompt_count.follow_tools(self.mcp)  # the tools' schemas are in every prompt: counted again
        wire_sidebar(self.sidebar, w)
        wire_tools(self.tools_button, self.mcp, w, self.open_tools)
        self.history = HistoryRoom(self.conversations, self.history_menu, self.store, self.controller,
                                   self._close_chat, lambda cid: ask_export_chat(self, self.history_menu, cid),
                                   self.show_notice, self)
        self.history.offer_actions(self.actions_offered)
        wire_model_choice(self.picker, self.store, self.load_model, self.load_remote, self._open_file,
                          self._add_remote)
        wire_residents(self.picker, w, self.show_notice)
        self.model_finder = wire_finder(self.picker, self.actions_offered, lambda: self.settings, self)
        self.library_listing = LibraryListing(self.picker, self._models_dir, self.show_notice, self)
        self.library_listing.refresh()
        self.welcome.use_model.connect(self.load_model)
        self.welcome.open_file.connect(self._open_file)
        self.server = ServerRoom(self, w, self.serve_action, self.show_notice, self._serve_options)
        follow_engine_settings(w, self.settings_changes)
        self.documents.follow_settings(self.settings_changes)  # the embedding model
        follow_theme(self.settings_changes, lambda: self.theme_follower, self.set_theme)
        reload_on_load_settings(self.settings_changes, lambda: self.loaded, lambda: self.controller.busy,
                                self.controller.busy_changed, self.load_model, self)
        # What a load changes across the rooms.
        self.loading.started.connect(self.sidebar.set_loading)
        self.loading.started.connect(lambda _name: self.clear_passing_notice())  # "Load a model first"…
        self.loading.loaded.connect(self._on_loading_loaded)
        self.loading.failed.connect(self._on_loading_failed)
        self.loading.cancelled.connect(lambda: self.sidebar.set_model(None, "Loading was cancelled."))
        w.cache_note.connect(self.show_notice)
        w.disk_cache.connect(self._on_worker_disk_cache)
        w.speculation_refused.connect(self.show_notice)
        self.history_menu.news.connect(self.show_toast)  # "Exported…", "Imported…": passing news
        # Between the chat and the other rooms.
        self.input.send.connect(self._on_input_send)
        self.controller.unsent.connect(self._on_controller_unsent)
        self.controller.conversations_changed.connect(self.refresh_conversations)
        self.controller.conversation_opened.connect(self._on_controller_conversation_opened)
        self.store.error.connect(self.show_problem)
        # The tool bar's own actions, and the window's shortcuts.
        self.system_action.triggered.connect(self._edit_system_prompt)
        self.compact_action.triggered.connect(self.controller.compact)
        self.settings_action.triggered.connect(self._open_settings)
        self.models_action.triggered.connect(self.tabs.toggle_models)
        self.shortcuts_action.triggered.connect(lambda: show_sheet(self, sheet_rows()))
        self.quit_action.triggered.connect(self.close)
        self._offer_window_actions(self.actions_offered)
        self.shortcuts = install_shortcuts(self, self.actions_offered)

    def _offer_window_actions(self, actions: RoomActions) -> None:
        """The window's own shortcut actions: its tool bar's buttons and its side panels."""
        for name, action in (("system-prompt", self.system_action), ("settings", self.settings_action),
                             ("models", self.models_action), ("shortcuts", self.shortcuts_action),
                             ("quit", self.quit_action)):
            actions.offer(name, action.trigger)
        actions.offer("toggle-chats", lambda: self.panels.toggle("chats"))
        actions.offer("toggle-sidebar", lambda: self.panels.toggle("sidebar"))

    # --- models ---------------------------------------------------------------------------
    @property
    def loaded(self) -> LoadedModel | None:
        """The model in use (None: none, or one loading)."""
        return self.loading.model

    def load_model(self, path: str) -> None:
        self.loading.load(path)

    def load_remote(self, endpoint: SavedEndpoint) -> None:
        """Chat through a saved remote endpoint instead of a local model."""
        self.loading.load_remote(endpoint)

    def _add_remote(self, existing: SavedEndpoint | None = None) -> None:
        from prefill.ui.models.endpoint_dialog import edit_endpoint

        edit_endpoint(self, existing, self.picker, self.store, self.load_remote)
        self.picker.show_current(self.loading.picker_entry())

    def _open_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a model", str(Path.home()), "GGUF models (*.gguf)")
        if path:
            self.load_model(path)

    def _on_loading_loaded(self, m: LoadedModel) -> None:
        self.sidebar.set_model(m, name=loaded_name(m))
        self.images.set_model(m, loaded_name(m))
        self.setWindowTitle(f"{loaded_name(m)} — Prefill")
        self.reasoning_action.setVisible(self.reasoning_controls.set_model(m))
        self.stack.setCurrentWidget(self.chat_view)
        if not m.format_from_model:  # said once in the chat, and kept in the sidebar
            self.transcript.append_row(Row("notice", [f"{m.name}: {m.chat_format_label}."]))
        if not m.remote and self.settings.model.last_model_path != str(m.path):
            self.settings = replace(self.settings, model=replace(self.settings.model, last_model_path=str(m.path)))
            self.store.save_settings(self.settings)
            self._fill_model_combo()
        self.picker.show_current(self.loading.picker_entry())
        if m.backend_warning:
            self.show_notice(f"⚠ {m.backend_warning}")
        self.input.editor.setFocus()  # the model was picked from a list or a button: now type
        self.prompt_count.ask()
        self.model_loaded.emit(m)

    def _on_loading_failed(self, reason: str, sentence: str) -> None:
        self.sidebar.set_model(None, reason)
        self.setWindowTitle("Prefill")
        self.show_notice(sentence)

    def open_models(self) -> None:
        """The Models tab: search the hub, download, the local library (chats go on meanwhile)."""
        self.tabs.show_models()

    def _build_models_page(self) -> QWidget:
        """Built on the tab's first showing, so start-up imports no hub client."""
        self.models_page, self.downloads = build_models_page(lambda: self.settings, code_palette(self.theme), self)
        self.models_page.load_requested.connect(self.load_model)
        self.models_page.load_requested.connect(lambda _path: self.tabs.show_chat())
        self.models_page.fit_compared.connect(self.models_page.show_message)  # the page's business, not the chat's
        self.models_page.library_panel.refreshed.connect(self.library_listing.refresh)  # a download, an import
        self.model_loaded.connect(self.models_page.compare_loaded)
        return self.models_page

    # --- chat --------------------------------------------------------------------------------
    def _on_input_send(self, text: str) -> None:
        if self.loaded is None:
            self.show_notice("Load a model first: pick one at the top, or the bundled SmolLM2.",
                             action=("Choose a model", self.model_combo.showPopup))
            self.input.editor.setPlainText(text)
            return
        self.controller.send(text, self.input.take_images())

    def _on_controller_unsent(self, text: str, reason: str) -> None:
        if not self.input.editor.toPlainText().strip():
            self.input.editor.setPlainText(text)
        self.show_problem(reason)

    def _serve_options(self) -> ServeOptions | None:
        """What the Serve button serves: the local model loaded, speculating as the chat does."""
        from prefill.server.lifecycle import ServeOptions  # the HTTP stack loads on first use

        if self.loaded is None or self.loaded.remote:
            return None
        path = self.loaded.path
        return ServeOptions(model=path, settings=self.settings.load_settings_for(str(path)),
                            speculation=self.settings.model.speculation())

    @property
    def server_dock(self) -> QDockWidget | None:
        """The Server dock (None until Serve is first pressed: the HTTP stack loads then)."""
        return self.server.dock

    def show_notice(self, text: str, lasting: bool = False, action: NoticeAction | None = None) -> None:
        """A banner over the top of the page, with `action` as its button ("" hides it, and the toast).
        One not `lasting` tells of the moment, and goes when the moment does: a load, a chat switch or
        an answer clears it; a `lasting` one (what start-up found) stays until another replaces it, it is
        closed, or an answer starts."""
        self.notice.say(text, action)
        self._notice_lasting = lasting and bool(text)
        if not text:
            self.toast.clear()

    def show_toast(self, text: str) -> None:
        """Passing news ("Exported…") over the bottom of the page, gone in a few seconds."""
        self.toast.show_text(text)

    def clear_passing_notice(self) -> None:
        """What no longer holds goes: the toast, and the banner unless it is a lasting one."""
        self.toast.clear()
        if not self._notice_lasting:
            self.show_notice("")

    def _on_notice_closed(self) -> None:
        self._notice_lasting = False

    def show_problem(self, text: str) -> None:
        """A fault of the history or the settings file: kept in view, each sentence once."""
        if text in self._problems:
            return
        self._problems[:] = [*self._problems[-2:], text]
        self.problem.say("\n".join(self._problems))

    # --- conversations ---------------------------------------------------------------------------
    def refresh_conversations(self) -> None:
        self.history.refresh()

    def _close_chat(self) -> None:
        """The chat shown was deleted: show none."""
        self.controller.close_chat()
        self.transcript.set_rows([])
        self.sidebar.show_answer({})

    def _on_controller_conversation_opened(self, cid: int) -> None:
        self.clear_passing_notice()  # "Exported…", an answer's note: about the chat shown before
        self.sidebar.show_answer(last_answer_figures(self.transcript))  # this chat's last answer, not the last run
        self.chat_view.set_system_prompt(self.controller.system_prompt)
        if self.loaded is not None:
            self.stack.setCurrentWidget(self.chat_view)
        self.refresh_conversations()
        self.prompt_count.ask()

    # --- settings -------------------------------------------------------------------------------
    def open_tools(self) -> None:
        """The Tools dialog: the MCP servers, their state and tools; which tools chats are offered."""
        from prefill.ui.tools_dialog import ToolsDialog

        if self.mcp is None:
            return
        dialog = ToolsDialog(self.mcp, self)
        dialog.finished.connect(lambda _r: self._keep_tools_off())
        self.tools_dialog = dialog
        dialog.open()

    def _keep_tools_off(self) -> None:
        if self.mcp is not None:
            self.tools_button.set_tools(self.mcp.tools, self.mcp.off)
            self.settings = self.settings.replace("ui.tools_off", ",".join(sorted(self.mcp.off)))
            self.store.save_settings(self.settings)

    def _edit_system_prompt(self) -> None:
        """The system prompt's sheet; Save sets it for this chat (and the chats started after it)."""
        if self.system_sheet is not None:
            self.system_sheet.deleteLater()  # the one before, done with
        self.system_sheet = TextSheet(
            self, "System prompt", "Sent before your messages in this chat: who the model is and how it should "
            "answer. Leave it empty for none.", self.controller.system_prompt, multiline=True, allow_empty=True,
            placeholder="You are a helpful assistant. Answer briefly.")
        self.system_sheet.saved.connect(self._on_system_sheet_saved)
        self.system_sheet.open()

    def _on_system_sheet_saved(self, text: str) -> None:
        self.controller.choices.set_system_prompt(text)
        self.chat_view.set_system_prompt(text)
        self.prompt_count.ask()

    def _on_worker_disk_cache(self, usage: Usage) -> None:
        self.cache_usage = usage
        self.cache_usage_changed.emit(usage)

    def _open_settings(self) -> None:
        dialog = SettingsDialog(self.settings, self, self.cache_usage, self.loaded)
        dialog.clear_cache_requested.connect(self.engine.worker.clear_cache)
        self.cache_usage_changed.connect(dialog.set_cache_usage)
        accepted = dialog.exec()
        self.cache_usage_changed.disconnect(dialog.set_cache_usage)
        if not accepted:
            return
        new = dialog.result_settings()
        self.store.save_settings(new)
        self.settings = new  # each part subscribed to a setting changed takes it (settings_apply)

    def set_theme(self, effective: str) -> None:
        """Light or dark: recolour what the palette does not reach (code, the KV bar)."""
        self.theme = effective
        self.sidebar.theme = effective
        self.chat_view.set_code_palette(code_palette(effective))
        if self.models_page is not None:
            self.models_page.set_code_palette(code_palette(effective))

    # --- window state ---------------------------------------------------------------------------
    def focusNextPrevChild(self, next: bool) -> bool:
        # Tab's order is the window's parts, not the order Qt made the widgets in (keyboard_access).
        return self.focus_order.move(next) or super().focusNextPrevChild(next)

    def _restore_geometry(self) -> None:
        ui = self.settings.ui
        if ui.window_geometry:
            self.restoreGeometry(QByteArray.fromBase64(ui.window_geometry.encode()))
        else:  # the first start: a roomy window, within a small laptop's screen
            screen = self.screen().availableGeometry()
            self.resize(min(1280, screen.width()), min(800, screen.height()))
        self.panels.restore(ui.splitter_states)  # the positions, and the panels hidden

    def window_state_settings(self) -> Settings:
        geometry = bytes(self.saveGeometry().toBase64().data()).decode()
        splitter = self.panels.state()
        return replace(self.settings, ui=replace(self.settings.ui, window_geometry=geometry, splitter_states=splitter))

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not event.spontaneous():  # opened (not restored from the taskbar): ready to type
            self.input.editor.setFocus()
        self.shown.emit()

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._closed:
            return
        if self.controller.busy and not self._closing:
            # Stop the answer after its current token; it is saved as such, then the window
            # closes. A prefill step that outlasts the grace time is not waited for.
            event.ignore()
            self._closing = True
            self.controller.busy_changed.connect(self._close_when_idle)
            self._grace.start()
            self.controller.stop()
            return
        self._closed = True
        self._grace.stop()
        self.controller.stop()
        self.engine.worker.cancel_load()
        if self.models_page is not None:
            self.models_page.close_jobs(2000)
        self.images.jobs.close(2000)
        self.library_listing.close(2000)
        self.documents.close(3000)  # indexing stops after its batch in hand; what is done is kept
        if self.downloads is not None:
            self.downloads.close(wait=False)  # a download killed mid-way resumes on the next run
        self.settings = self.window_state_settings()
        self.store.save_settings(self.settings)
        super().closeEvent(event)
        self.closed.emit()

    def _close_when_idle(self, busy: bool) -> None:
        if not busy:
            self.controller.busy_changed.disconnect(self._close_when_idle)
            self.close()
