"""The sidebar's words: each figure's label in plain words, and on hover what it is in the engine's terms.

One table serves the labels and their tooltips, so a figure's name and its explanation change together.
"""

from __future__ import annotations

from typing import NamedTuple

from prefill.ui.chat.transcript.finish_words import REASONS


class Words(NamedTuple):
    label: str  # what a person reads beside the figure
    tip: str  # on hover: the engine's word for it, and what it means


GROUPS: dict[str, Words] = {
    "model": Words("Model", "The model answering, and where it runs."),
    "prompt": Words("What the model read", "The prompt: this chat as the model reads it (system prompt and every "
                    "message, in the model's chat format), counted in tokens.\nA token is a piece of a word: "
                    "about ¾ of an English word on average."),
    "kv": Words("Memory for this chat", "The KV cache: for every token of the chat the model keeps the keys and "
                "values its attention layers worked out, so earlier text is not worked out again for each new "
                "word. Each token takes one memory cell (a KV cell); the context size is how many cells there are. "
                "(The server's slots are something else: requests decoded together.)"),
    "speed": Words("Speed", "How long you waited and how fast the answer was written."),
    "answer": Words("This answer", "What the last answer took: its tokens and why it ended, how fast the model "
                    "read your message, and how much of the chat it remembered from the answer before."),
    "details": Words("Details", "The rarer figures: the pauses between words, the prompt's tokens read now and "
                     "restored from disk, images, the chat format and whether the model sees images."),
    "documents": Words("Documents", "What the chat's documents did for the last question, apart from reading "
                       "the prompt: whether they went in whole or passages were searched for it, how long those "
                       "are, and what the search cost."),
    "speculation": Words("Guessing ahead", "Speculative decoding: a few tokens are guessed ahead and the model "
                         "checks the guesses all at once."),
}

FIGURES: dict[str, Words] = {
    "model": Words("Name", "The name read from the model's file and repository; hover the name itself for the "
                   "name written inside the file (its general.name) and where the file is."),
    "backend": Words("Runs on", "Where llama.cpp runs the model's layers: on the CPU, or offloaded to a GPU "
                     "(how many of its layers, the device, and the GPU memory llama.cpp allocated)."),
    "memory": Words("In memory", "The local models kept in memory, so switching back to one costs no load, and "
                    "what they take together against the budget (weights, KV caches, compute buffers, as llama.cpp "
                    "reported them once loaded). The least recently used idle one is unloaded when a new one needs "
                    "the room or has been idle too long; a pinned one never is. Settings > Memory sets the budget, "
                    "the count and the idle time; right-click a model in the picker to unload or pin it."),
    "context": Words("Context", "How many tokens the model holds at once: one memory cell (KV cell) each. "
                     "llama.cpp rounds the context you ask for up to a multiple of 256, so a smaller setting "
                     "runs at the size shown; the line says so where the two differ."),
    "vision": Words("Sees images", "Whether this model can read images: a vision model needs its projector, an "
                    "mmproj GGUF from the same repository, loaded beside it."),
    "format": Words("Chat format", "How the chat is written out for the model: its own chat template (from the "
                    "GGUF file), a built-in format llama.cpp knows, or plain text for a base model."),
    "prompt": Words("Chat length", "The prompt's length in tokens: everything the model reads before it answers."),
    "reused": Words("Remembered", "Prompt tokens still in the KV cache from the last answer (prefix reuse): the "
                    "model did not have to read them again."),
    "evaluated": Words("Read now", "Prompt tokens the model read for this answer (evaluated in the prefill): "
                       "your new message, and whatever could not be reused."),
    "restored": Words("Saved memory", "This chat's KV cache, saved to disk when you left the chat and loaded "
                      "back now, instead of reading the whole chat again."),
    "images": Words("Images read", "Image tokens in the prompt, and the time the vision encoder took to turn "
                    "this message's images into them (apart from reading the text)."),
    "kv": Words("", "Memory cells used of the context size, and the memory they take.\nA memory cell (a KV cell) "
                "holds what the model keeps of one token. When every cell is full, the oldest messages are "
                "dropped or the answer stops, as the overflow setting says."),
    "ttft": Words("first word", "Time to first token (TTFT): from sending to the first token of the reply. Most "
                  "of it is the prefill: reading your message (Reading, below)."),
    "ttfa": Words("First word of the answer", "Time to the first token of the answer proper, after the model's "
                  "thinking (for models that reason first)."),
    "prefill": Words("Reading", "Prefill: the model reads the prompt's new tokens many at a time, in "
                     "batches, so reading is much faster per token than writing. Tokens per second, and how long "
                     "it took."),
    "decode": Words("writing speed", "Decode: the model writes one token at a time, each one a full pass through "
                    "the model. Tokens per second (tok/s) over this answer."),
    "itl": Words("Pauses", "The pause between two words as the answer was written (inter-token latency)."
                 "\nTypical is the median (p50): half the pauses were shorter.\nWorst 5% is the 95th percentile "
                 "(p95): only one pause in twenty was longer. A p95 far above the p50 feels "
                 "like stutter."),
    "tokens": Words("Answer", "Tokens written (thinking included), and why the answer ended:\n" + "\n".join(
        f"{words}: {reason}" for reason, words in REASONS.items()) + "\nWith a thinking budget, the thinking is "
        "counted against it (\"120 of 512 thinking\"); where the budget cut it, the line that closed it counts too."),
    "tools": Words("Tool rounds", "Where a turn with tool calls spent its time: the model, the tools, waiting "
                   "for you to allow a call, and Prefill between rounds."),
    "plot": Words("", "Writing speed while the answer was written, in tokens per second, against the seconds "
                  "since you sent the message (a new point four times a second). The line starts at the first "
                  "token; before it the model was reading your message.\nA chat opened again draws the curve kept with "
                  "its last answer (an answer kept before Prefill kept curves shows its average, dashed)."),
    "docs-how": Words("How they were read", "Whole: every document fits in half the context left free, so each "
                      "goes in whole under the system prompt and stays in the model's memory for the next "
                      "question.\nSearched: they do not fit, so the passages that best answer each question are "
                      "found (by meaning and by words) and given to the model before it."),
    "docs-tokens": Words("Their length", "Tokens the documents or passages take in the prompt (the citing rule and "
                         "their labels included), of the budget they were allowed: half the context left free."),
    "docs-embed": Words("Embedding the question", "Time the embedding model took to turn the question into a "
                        "vector, to find passages close to it in meaning (none when the documents went in whole)."),
    "docs-search": Words("Searching", "Time the search took: passages close in meaning and passages sharing its "
                         "words, ranked together (none when the documents went in whole)."),
    "spec-drafts": Words("Guessed / accepted", "Speculative decoding guesses a few tokens ahead and has the model "
                         "check the guesses all at once.\nDrafted: tokens guessed so far. Accepted: the guesses "
                         "the model agreed with, which it then did not have to work out one by one. The "
                         "percentage is how often the guesses were right."),
    "spec-step": Words("Tokens per step", "How many tokens each step of the model wrote on average. Without "
                       "speculation it is exactly 1; at 2.0 the answer took half as many model steps."),
    "spec-rate": Words("Writing speed", "How fast this answer is written with speculation, and how that compares "
                       "with this model's last answer written without it (a different answer, so a rough guide)."),
    "spec-exact": Words("Same text as without", "Whether guessing ahead changes only the speed.\nThe guesses are "
                        "checked several at a time, and Prefill measures on each model whether that gives exactly "
                        "the numbers checking one at a time gives. Yes: the answer is word for word the one "
                        "written without guessing. Nearly: this model's maths rounds a little differently in a "
                        "batch (by the amount shown), so where two words were almost tied the answer may take "
                        "the other one and go on differently from there."),
}
