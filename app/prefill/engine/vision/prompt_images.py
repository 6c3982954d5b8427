"""Prompt text with image markers into tokens, and a token list into what evaluates it.

The chat module renders each image as its marker (`ImagePart.marker`, which carries its digest);
here the text between markers is tokenized as usual and each marker becomes the image's tokens
from the projector (`Projector.image`): wrapping text tokens around its run of pseudo-tokens.
A marker whose image the request does not hold is someone's text, and stays text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence

from prefill.engine.message import IMAGE_MARKER, ImagePart
from prefill.engine.vision.errors import ImagesNeedProjector
from prefill.engine.vision.projector import Projector, is_image_token


def tokenize_with_images(
    text: str, at_start: bool, tokenize: Callable[[str, bool], list[int]], images: Mapping[str, ImagePart],
    projector: Projector | None, model_name: str = "",
) -> list[int]:
    """Tokens of prompt text whose image markers stand for `images` (by digest).

    Raises:
        ImagesNeedProjector: the text holds an image and no projector is loaded.
        EngineError: the projector refused an image.
    """
    parts = IMAGE_MARKER.split(text)  # text, digest, text, digest, …, text
    if len(parts) == 1:
        return tokenize(text, at_start)
    out: list[int] = []
    pending = ""  # text not yet tokenized (a marker without its image joins it)
    for i, piece in enumerate(parts):
        if i % 2 == 0:
            pending += piece
            continue
        part = images.get(piece)
        if part is None:
            pending += f"<__image_{piece}__>"
            continue
        if projector is None:
            raise ImagesNeedProjector(model_name)
        if pending or (at_start and not out):
            out.extend(tokenize(pending, at_start and not out))
        pending = ""
        out.extend(projector.image(part).tokens)
    if pending:
        out.extend(tokenize(pending, at_start and not out))
    return out


def spans(tokens: Sequence[int], n_batch: int) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is_image) pieces of `tokens` to evaluate in order: text in pieces of at most
    `n_batch`, each image's run whole (the projector decodes it in batches of its own)."""
    i, n = 0, len(tokens)
    while i < n:
        j = i + 1
        if is_image_token(tokens[i]):
            j = run_end(tokens, i)
            yield i, j, True
        else:
            while j < n and j - i < n_batch and not is_image_token(tokens[j]):
                j += 1
            yield i, j, False
        i = j


def run_end(tokens: Sequence[int], start: int) -> int:
    """Where the image run that starts at `start` ends (one past its last pseudo-token)."""
    j = start + 1
    while j < len(tokens) and tokens[j] == tokens[j - 1] + 1:
        j += 1
    return j


def text_before_image(tokens: Sequence[int], start: int, most: int) -> list[int]:
    """At most `most` tokens from `start`, up to the next image's run (a batch of text tokens).
    Called for every prefill chunk of every step: a chunk without an image (image ids are the
    largest) is returned whole, without a Python loop over its tokens."""
    chunk = list(tokens[start : start + most])
    if not is_image_token(max(chunk, default=0)):
        return chunk
    return chunk[: next(i for i, t in enumerate(chunk) if is_image_token(t))]


def run_start(tokens: Sequence[int], at: int) -> int:
    """`at`, moved back to the start of the image run it falls inside (a cache cannot keep part of
    an image: its embeddings are decoded whole)."""
    while 0 < at < len(tokens) and is_image_token(tokens[at]) and tokens[at - 1] == tokens[at] - 1:
        at -= 1
    return at


def image_tokens(tokens: Sequence[int], projector: Projector | None) -> int:
    """How many image embeddings `tokens` hold (a run's length where the projector no longer knows it)."""
    if projector is None:
        return 0
    total = 0
    for start, end, image in spans(tokens, len(tokens) or 1):
        if image:
            total += projector.n_tokens_of(tokens[start]) or end - start
    return total
