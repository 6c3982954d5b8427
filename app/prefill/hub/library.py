"""The local model library: what is on disk, importing, deleting.

Three places hold models: the models folder (downloads, and imports under
`local/`), the Hugging Face cache (offered where they are, never copied), and the
bundled SmolLM2 package. `ModelLibrary.models()` lists them all with what their
GGUF headers say; `.partial/` is never listed, so a half-written file never shows.
A vision projector (mmproj) is not a model: it is listed as the `projector` of the
model beside it, found by the engine's own rule (`engine/gguf/projector_files.py`).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from prefill.engine.gguf.header import GGUFError, read_header
from prefill.engine.gguf.projector_files import find_projector, is_projector_name
from prefill.hub.abandoned import AbandonedDownload, abandoned_downloads, remove_abandoned
from prefill.hub.bundled import bundled_model_path
from prefill.hub.errors import HubError, NoSuchModel
from prefill.hub.paths import IMPORTED_DIR, PARTIAL_DIR, inside
from prefill.hub.quants import split_part

Source = Literal["library", "imported", "hf-cache", "bundled"]
ImportMode = Literal["copy", "symlink"]


@dataclass(frozen=True)
class LocalModel:
    """A model on this machine and what its header says.

    Attributes:
        name: how to name it to `find`/`delete`/the CLI (its path in the library, or
            `hf-cache:owner/repo/file`, `bundled:file`).
        path: the file llama.cpp opens (the first part of a set).
        parts: every file of the model.
        size: bytes on disk, all parts (a symlink counts what it points to).
        source: library (downloaded), imported, hf-cache or bundled.
        error: why the header could not be read (the other fields are then empty).
        projector: a vision model's projector (mmproj) beside it, loaded with it; None for a
            model that reads text only (or whose projector is not here).
    """

    name: str
    path: Path
    parts: tuple[Path, ...]
    size: int
    source: Source
    architecture: str = ""
    n_params: int = 0
    quantization: str = ""
    context_length: int = 0
    has_chat_template: bool = False
    error: str | None = None
    projector: Path | None = None

    @property
    def removable(self) -> bool:
        return self.source in ("library", "imported")


class ModelLibrary:
    """The models folder plus the models Prefill finds elsewhere.

    Args:
        models_dir: the library folder (created when missing).
        hf_cache_dir: the Hugging Face cache to offer models from; None for its default
            location, False to skip it.
        include_bundled: list the bundled SmolLM2 when its package is installed.
    """

    def __init__(
        self, models_dir: Path, hf_cache_dir: Path | None | Literal[False] = None, include_bundled: bool = True
    ):
        self.models_dir = models_dir
        self.hf_cache_dir = hf_cache_dir
        self.include_bundled = include_bundled
        models_dir.mkdir(parents=True, exist_ok=True)

    def models(self) -> list[LocalModel]:
        """Every model found, library first, then the HF cache, then the bundled one."""
        found = [self._describe(self._name(parts[0]), parts, self._source(parts[0])) for parts in self._own_sets()]
        found += self._hf_cache_models()
        bundled = bundled_model_path() if self.include_bundled else None
        if bundled is not None:
            found.append(self._describe(f"bundled:{bundled.name}", (bundled,), "bundled"))
        # A projector named like a model is still known by its header ("clip"): never a model.
        return [m for m in found if m.architecture != "clip"]

    def find(self, name: str) -> LocalModel:
        """The model called `name`, or whose file name is `name` when only one is.

        Raises:
            NoSuchModel: none, or more than one, matches.
        """
        models = self.models()
        exact = [m for m in models if m.name == name]
        if exact:
            return exact[0]
        by_file = [m for m in models if m.path.name == name or m.name.rsplit("/", 1)[-1] == name]
        if len(by_file) == 1:
            return by_file[0]
        if by_file:
            names = ", ".join(m.name for m in by_file)
            raise NoSuchModel(f"{name!r} is ambiguous: it could be {names}")
        raise NoSuchModel(f"no model called {name!r} in {self.models_dir} (see `prefill ls`)")

    def delete(self, name: str) -> LocalModel:
        """Remove a downloaded or imported model (a symlink import leaves its target alone).

        Raises:
            NoSuchModel: no such model.
            HubError: the model lives outside the library (HF cache, bundled).
        """
        model = self.find(name)
        if not model.removable:
            raise HubError(f"{model.name} is not in the library folder ({model.source}); Prefill leaves it alone")
        for part in model.parts:
            part.unlink(missing_ok=True)
        if model.projector is not None and not _models_in(model.projector.parent):
            model.projector.unlink(missing_ok=True)  # the folder's last model takes its projector along
        self._prune_empty(model.path.parent)
        return model

    def import_file(self, source: Path, mode: ImportMode = "copy") -> LocalModel:
        """Bring a `.gguf` from anywhere into the library, as a copy or a symlink.

        The file's header is checked first, so a broken file never enters the library.

        Raises:
            GGUFError: not a readable GGUF model.
            HubError: a model of that name is already imported.
        """
        source = source.expanduser().resolve()
        read_header(source)  # raises GGUFError with the reason
        folder = self.models_dir / IMPORTED_DIR
        folder.mkdir(parents=True, exist_ok=True)
        target = inside(folder, source.name)
        if target.exists() or target.is_symlink():
            raise HubError(f"a model named {source.name} is already imported; delete it first")
        if mode == "symlink":
            target.symlink_to(source)
        else:
            tmp = self.models_dir / PARTIAL_DIR / f"import-{source.name}.part"
            tmp.parent.mkdir(parents=True, exist_ok=True)
            try:
                shutil.copyfile(source, tmp)
                os.replace(tmp, target)
            finally:
                tmp.unlink(missing_ok=True)
        return self._describe(self._name(target), (target,), "imported")

    def abandoned(self) -> list[AbandonedDownload]:
        """Unfinished downloads nobody touched for a week (not in use now), with their sizes."""
        return abandoned_downloads(self.models_dir)

    def remove_abandoned(self, name: str) -> AbandonedDownload:
        """Delete an abandoned download's bytes (named as `abandoned()` names it).

        Raises:
            NoSuchModel: no abandoned download has that name.
            DownloadBusy: a download took it up meanwhile; it was left alone.
        """
        return remove_abandoned(self.models_dir, name)

    # --- finding -----------------------------------------------------------------
    def _own_sets(self) -> list[tuple[Path, ...]]:
        files = []
        for root, dirs, names in os.walk(self.models_dir, followlinks=False):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))  # skips .partial
            files += [Path(root) / n for n in sorted(names)
                      if n.lower().endswith(".gguf") and not is_projector_name(n)]
        return group_parts(files)

    def _hf_cache_models(self) -> list[LocalModel]:
        if self.hf_cache_dir is False:
            return []
        from huggingface_hub import constants

        folder = self.hf_cache_dir or Path(constants.HF_HUB_CACHE)
        if not folder.is_dir():  # no cache: the client and its HTTP stack stay unimported (start-up's scan)
            return []
        from huggingface_hub import scan_cache_dir
        from huggingface_hub.errors import CacheNotFound

        try:
            info = scan_cache_dir(folder)
        except (CacheNotFound, OSError):
            return []
        out = []
        for repo in sorted(info.repos, key=lambda r: r.repo_id):
            if repo.repo_type != "model":
                continue
            for rev in repo.revisions:
                paths = [f.file_path for f in rev.files
                         if f.file_name.lower().endswith(".gguf") and not is_projector_name(f.file_name)]
                for parts in group_parts(sorted(paths)):
                    rel = parts[0].relative_to(rev.snapshot_path).as_posix()
                    out.append(self._describe(f"hf-cache:{repo.repo_id}/{rel}", parts, "hf-cache"))
        return out

    def _name(self, path: Path) -> str:
        return path.relative_to(self.models_dir).as_posix()

    def _source(self, path: Path) -> Source:
        rel = path.relative_to(self.models_dir)
        return "imported" if rel.parts[0] == IMPORTED_DIR else "library"

    def _describe(self, name: str, parts: tuple[Path, ...], source: Source) -> LocalModel:
        size = sum(_size(p) for p in parts)
        base = LocalModel(name, parts[0], parts, size, source, projector=find_projector(parts[0]))
        try:
            headers = [read_header(p) for p in parts]
        except GGUFError as e:
            return _with(base, error=str(e))
        first = headers[0]
        return _with(
            base,
            architecture=first.architecture,
            n_params=sum(h.n_params for h in headers),
            quantization=first.quantization,
            context_length=first.context_length,
            has_chat_template=first.chat_template is not None,
        )

    def _prune_empty(self, folder: Path) -> None:
        root = self.models_dir.resolve()
        while folder.resolve() != root and root in folder.resolve().parents:
            try:
                folder.rmdir()
            except OSError:
                return
            folder = folder.parent


def group_parts(paths: Iterable[Path]) -> list[tuple[Path, ...]]:
    """Local `.gguf` paths as models: a `-0000k-of-0000n` set is one entry, in part order."""
    singles: list[tuple[Path, ...]] = []
    sets: dict[tuple[Path, str, int], dict[int, Path]] = {}
    for p in paths:
        part = split_part(p.name)
        if part is None:
            singles.append((p,))
        else:
            base, index, total = part
            sets.setdefault((p.parent, base, total), {})[index] = p
    for found in sets.values():
        singles.append(tuple(found[i] for i in sorted(found)))
    return sorted(singles, key=lambda s: str(s[0]))


def _models_in(folder: Path) -> bool:
    """Whether a folder still holds a model (a `.gguf` that is not a projector)."""
    try:
        return any(p.suffix.lower() == ".gguf" and not is_projector_name(p.name) for p in folder.iterdir())
    except OSError:
        return False


def _size(p: Path) -> int:
    try:
        return p.stat().st_size
    except OSError:
        return 0


def _with(model: LocalModel, **changes: object) -> LocalModel:
    from dataclasses import replace

    return replace(model, **changes)  # type: ignore[arg-type]
