"""A message's images in the history: files by digest, kept once, private, swept when no chat shows
them, and carried by the JSON export through the import door."""

from __future__ import annotations

import base64
import io
import json
import stat
from pathlib import Path

import pytest
from PIL import Image

from prefill.engine.message import ImagePart
from prefill.store import HistoryStore, ImportRejected
from prefill.store.history_export import render
from prefill.store.history_import import read_import_file
from tests.store.conftest import ticking_clock


def png(color: tuple[int, int, int] = (200, 30, 30), size: tuple[int, int] = (12, 9)) -> ImagePart:
    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, "PNG")
    return ImagePart(out.getvalue(), "image/png", *size)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_images_are_kept_once_by_digest_in_private_files(store: HistoryStore) -> None:
    a, b = png(), png((0, 0, 255))
    chat = store.create_conversation()
    first = store.add_message(chat.id, "user", "two", images=[a, b])
    store.add_message(chat.id, "user", "the first again", images=[a])
    folder = store.path.parent / "images"
    assert sorted(p.name for p in folder.iterdir()) == sorted([a.digest, b.digest])
    assert _mode(folder) == 0o700 and all(_mode(p) == 0o600 for p in folder.iterdir())
    assert [r.digest for r in first.images] == [a.digest, b.digest]
    assert (first.images[0].mime, first.images[0].width, first.images[0].size) == ("image/png", 12, len(a.data))
    assert store.message_images(store.message(first.id)) == (a, b)


def test_a_deleted_chat_leaves_the_images_another_still_shows(store: HistoryStore) -> None:
    shared, own = png(), png((0, 255, 0))
    one, two = store.create_conversation(), store.create_conversation()
    store.add_message(one.id, "user", "both", images=[shared, own])
    store.add_message(two.id, "user", "shared", images=[shared])
    store.delete_conversation(one.id)
    folder = store.path.parent / "images"
    assert [p.name for p in folder.iterdir()] == [shared.digest]
    store.delete_conversation(two.id)
    assert list(folder.iterdir()) == []


def test_a_branch_keeps_the_images_of_its_messages(store: HistoryStore) -> None:
    image = png()
    chat = store.create_conversation()
    asked = store.add_message(chat.id, "user", "look", images=[image])
    branch = store.branch_conversation(asked.id)
    store.delete_conversation(chat.id)
    (m,) = store.messages(branch.id)
    assert store.message_images(m) == (image,)


def test_a_regenerated_answer_keeps_the_later_turns_images_on_its_version_before(store: HistoryStore) -> None:
    kept, later = png((1, 2, 3)), png((4, 5, 6))
    chat = store.create_conversation()
    store.add_message(chat.id, "user", "first", images=[kept])
    answer = store.add_message(chat.id, "assistant", "one")
    store.add_message(chat.id, "user", "second", images=[later])
    store.add_message(chat.id, "assistant", "two")
    store.regenerate_answer(answer.id)  # the second turn is kept with "one"
    store.sweep_images()
    assert sorted(p.name for p in (store.path.parent / "images").iterdir()) == sorted([kept.digest, later.digest])
    store.show_version(answer.id, 0)
    asked = store.messages(chat.id)[2]
    assert (asked.content, store.message_images(asked)) == ("second", (later,))


def test_a_deleted_answer_lets_the_images_of_the_turns_it_kept_go(store: HistoryStore) -> None:
    later = png((4, 5, 6))
    chat = store.create_conversation()
    store.add_message(chat.id, "user", "first")
    answer = store.add_message(chat.id, "assistant", "one")
    store.add_message(chat.id, "user", "look", images=[later])
    store.regenerate_answer(answer.id)  # "look" is kept with "one"
    folder = store.path.parent / "images"
    assert [p.name for p in folder.iterdir()] == [later.digest]
    store.delete_message(answer.id)  # and goes with it (the window offers Undo before it asks this)
    assert list(folder.iterdir()) == []


def test_a_missing_or_changed_file_is_left_out(store: HistoryStore) -> None:
    a, b = png(), png((1, 2, 3))
    chat = store.create_conversation()
    m = store.add_message(chat.id, "user", "x", images=[a, b])
    (store.path.parent / "images" / a.digest).write_bytes(b"not it")
    assert store.message_images(m) == (b,)


def test_export_and_import_carry_the_images(store: HistoryStore, tmp_path: Path) -> None:
    image = png()
    chat = store.create_conversation()
    store.add_message(chat.id, "user", "what is this?", images=[image, image])
    store.add_message(chat.id, "assistant", "red")
    exported = tmp_path / "out.json"
    exported.write_text(render(store.export_conversations(), "json", 0.0))
    doc = json.loads(exported.read_text())
    assert list(doc["images"]) == [image.digest]  # once, though shown twice
    assert doc["conversations"][0]["messages"][0]["images"] == [image.digest] * 2
    with HistoryStore(tmp_path / "other" / "history.sqlite3", clock=ticking_clock()) as other:
        result = other.import_conversations(list(read_import_file(exported).conversations))
        (conv,) = other.list_conversations()
        asked, _ = other.messages(conv.id)
        assert result.imported == 1
        assert [p.digest for p in other.message_images(asked)] == [image.digest] * 2
        assert other.message_images(asked)[0].data == image.data
        assert [p.name for p in (tmp_path / "other" / "images").iterdir()] == [image.digest]


def test_edit_keeps_the_later_turns_images_on_the_old_version_and_exports_them(
        store: HistoryStore, tmp_path: Path) -> None:
    later = png((7, 8, 9))
    chat = store.create_conversation()
    question = store.add_message(chat.id, "user", "first")
    store.add_message(chat.id, "assistant", "one")
    store.add_message(chat.id, "user", "look", images=[later])
    store.add_message(chat.id, "assistant", "red")
    store.edit_message(question.id, "first, edited")  # the image's turn is kept on the old version
    store.sweep_images()
    assert [p.name for p in (store.path.parent / "images").iterdir()] == [later.digest]
    exported = tmp_path / "out.json"
    exported.write_text(render(store.export_conversations(), "json", 0.0))
    doc = json.loads(exported.read_text())
    assert list(doc["images"]) == [later.digest]
    assert doc["conversations"][0]["messages"][0]["versions"][0]["later"][1]["images"] == [later.digest]
    with HistoryStore(tmp_path / "other" / "history.sqlite3", clock=ticking_clock()) as other:
        other.import_conversations(list(read_import_file(exported).conversations))
        (conv,) = other.list_conversations()
        other.show_version(other.messages(conv.id)[0].id, 0)
        shown = other.messages(conv.id)
        assert [m.content for m in shown] == ["first", "one", "look", "red"]
        assert other.message_images(shown[2]) == (later,)


def _doc_with(images: dict[str, object], named: list[str]) -> dict[str, object]:
    return {"format": "prefill-history", "version": 1, "exported_at": 0, "images": images,
            "conversations": [{"id": "u1", "title": "t", "created_at": 1, "updated_at": 1, "messages": [
                {"role": "user", "content": "x", "created_at": 1, "images": named}]}]}


@pytest.mark.parametrize("case", ["not an image", "wrong digest", "unknown name", "not base64"])
def test_the_import_door_refuses_a_bad_image(tmp_path: Path, case: str) -> None:
    good = png()
    data = base64.b64encode(good.data).decode()
    images: dict[str, object] = {good.digest: {"mime": "image/png", "data": data}}
    named = [good.digest]
    if case == "not an image":
        junk = b"hello, not a picture"
        import hashlib

        digest = hashlib.sha256(junk).hexdigest()
        images, named = {digest: {"data": base64.b64encode(junk).decode()}}, [digest]
    elif case == "wrong digest":
        images = {"0" * 64: {"data": data}}
        named = ["0" * 64]
    elif case == "unknown name":
        named = ["f" * 64]
    else:
        images = {good.digest: {"data": "%%%"}}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(_doc_with(images, named)))
    with pytest.raises(ImportRejected) as caught:
        read_import_file(path)
    assert "images" in str(caught.value)


def test_an_export_without_images_still_imports(tmp_path: Path) -> None:
    doc = _doc_with({}, [])
    del doc["images"]
    del doc["conversations"][0]["messages"][0]["images"]  # type: ignore[index]
    path = tmp_path / "old.json"
    path.write_text(json.dumps(doc))
    (conv,) = read_import_file(path).conversations
    assert conv.messages[0].images == ()
