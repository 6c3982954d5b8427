"""The Models folder is checked before it is used: made when missing, a folder, written in; each fault
in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefill.hub.errors import ModelsDirUnusable
from prefill.hub.paths import check_models_dir


def test_a_missing_folder_is_made_with_its_parents(tmp_path: Path) -> None:
    folder = tmp_path / "a" / "b" / "models"
    assert check_models_dir(folder, create=False) == folder and not folder.exists()  # a look writes nothing
    assert check_models_dir(folder) == folder and folder.is_dir()
    assert list(folder.iterdir()) == []  # the file written to be sure is gone


@pytest.mark.parametrize(("where", "words"), [
    ("/proc/prefill-models", "cannot be created there"),
    ("relative/models", "give the whole path"),
])
def test_a_folder_that_cannot_be_made_is_refused_in_words(where: str, words: str) -> None:
    with pytest.raises(ModelsDirUnusable) as refused:
        check_models_dir(Path(where))
    assert words in refused.value.why and where in str(refused.value)


def test_a_file_is_not_a_folder(tmp_path: Path) -> None:
    (tmp_path / "models").write_text("not a folder")
    for create in (False, True):
        with pytest.raises(ModelsDirUnusable, match="is a file, not a folder"):
            check_models_dir(tmp_path / "models", create)
    with pytest.raises(ModelsDirUnusable, match="is a file, not a folder"):
        check_models_dir(tmp_path / "models" / "inside", create=False)
