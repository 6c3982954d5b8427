"""SQLite chat history and typed settings. No Qt: this package runs in the CLI and tests."""

from prefill.engine.settings import SamplingSettings
from prefill.store.app_settings import (
    HubSettings,
    ModelSettings,
    SettingInfo,
    Settings,
    UiSettings,
)
from prefill.store.archive import ArchivedConversation, ArchivedMessage, ImportResult
from prefill.store.errors import (
    ConversationNotFound,
    HistoryUnavailable,
    ImportRejected,
    InvalidSetting,
    MessageNotFound,
    SchemaTooNew,
    SettingsError,
    StoreClosed,
    StoreError,
)
from prefill.store.history import HistoryStore, default_history_path
from prefill.store.records import ConversationRecord, MessageRecord, Role, title_from_text
from prefill.store.search import SearchHit
from prefill.store.settings_file import SettingsFile, SettingsRead, default_settings_path

__all__ = [
    "ArchivedConversation",
    "ArchivedMessage",
    "ConversationNotFound",
    "ConversationRecord",
    "HistoryStore",
    "HistoryUnavailable",
    "HubSettings",
    "ImportRejected",
    "ImportResult",
    "InvalidSetting",
    "MessageRecord",
    "MessageNotFound",
    "ModelSettings",
    "Role",
    "SamplingSettings",
    "SchemaTooNew",
    "SearchHit",
    "SettingInfo",
    "Settings",
    "SettingsError",
    "SettingsFile",
    "SettingsRead",
    "StoreClosed",
    "StoreError",
    "UiSettings",
    "default_history_path",
    "default_settings_path",
    "title_from_text",
]
