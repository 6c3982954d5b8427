"""Typed errors of the image path; each message is a sentence a person can act on."""

from __future__ import annotations

from prefill.engine.errors import EngineError, ModelLoadError


class ImageRejected(EngineError):
    """An image was refused at the door: not an image, damaged, a decompression bomb, too large
    a file. `reason` is the sentence without the image's name."""

    def __init__(self, reason: str, name: str = ""):
        self.reason = reason
        self.name = name
        super().__init__(f"{name}: {reason}" if name else reason)


class ImagesNeedProjector(EngineError):
    """A turn has images, but the model was loaded without its projector (its mmproj file)."""

    def __init__(self, model_name: str = ""):
        self.model_name = model_name
        what = f"{model_name} was loaded" if model_name else "this model was loaded"
        super().__init__(
            f"{what} without a projector, and images need one: load it with its mmproj file "
            "(a GGUF named mmproj-….gguf from the same repository, beside the model or named with --mmproj)"
        )


class ProjectorError(ModelLoadError):
    """The projector (mmproj) file could not be loaded, or does not belong to the text model."""
