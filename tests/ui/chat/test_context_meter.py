"""The context meter's bar and words (ui/chat/composer/context_meter.py): each part drawn in proportion,
the figures in the words, and near or past the context the words say what will happen; when the tools'
schemas are what leaves no room, the words say so and give no advice about the overflow policy (which
cannot help then)."""

from __future__ import annotations

from prefill.session.prompt_parts import PromptParts
from prefill.ui.chat.composer.context_meter import ContextMeter, meter_words


def test_the_bar_draws_each_part_in_proportion_and_the_words_name_them(qtbot) -> None:
    meter = ContextMeter()
    qtbot.addWidget(meter)
    meter.resize(760, 40)
    meter.show()
    p = PromptParts(total=1204, system=40, tools=312, documents=610, n_ctx=4096, reserve=1024, policy="rolling_window")
    meter.show_parts(p)
    assert meter.text() == "1,204 of 4,096 tokens · system 40 · tools 312 · documents 610 · conversation 242"
    assert meter.words.property("level") == "ok"
    lay = meter.bar.layout()
    stretch = {name: lay.stretch(lay.indexOf(seg)) for name, seg in meter.segments.items()}
    assert stretch == {"meter-system": 40, "meter-tools": 312, "meter-documents": 610, "meter-conversation": 242,
                       "meter-reserve": 1024, "meter-free": 4096 - 1204 - 1024}
    assert all(seg.isVisible() for seg in meter.segments.values())
    qtbot.waitUntil(lambda: meter.segments["meter-documents"].width() > meter.segments["meter-tools"].width()
                    > meter.segments["meter-system"].width())
    assert "tools' schemas 312" in meter.toolTip() and "1,024 tokens are kept free" in meter.toolTip()
    # a chat without tools, documents or a system prompt: no empty parts
    meter.show_parts(PromptParts(52, 0, 0, 0, 4096, 1024, "rolling_window"))
    assert meter.text() == "52 of 4,096 tokens"
    assert not meter.segments["meter-tools"].isVisible() and meter.segments["meter-conversation"].isVisible()


def test_near_the_end_the_words_say_what_the_overflow_policy_will_do() -> None:
    near = PromptParts(2900, 40, 0, 0, 4096, 1024, "truncate_middle")
    words, level = meter_words(near)
    assert level == "near" and "Nearly full: 172 more tokens before turns after the first are left out" in words
    over = PromptParts(3900, 40, 0, 0, 4096, 1024, "rolling_window", floor=300, floor_without_tools=300)
    words, level = meter_words(over)
    assert level == "over" and "Past the context by 828" in words and "oldest turns will be left out" in words
    stop = PromptParts(3900, 40, 0, 0, 4096, 1024, "stop", floor=300, floor_without_tools=300)
    words, _ = meter_words(stop)
    assert "the model will refuse it" in words and "“When the chat is too long” in Settings" in words


def test_when_the_tools_leave_no_room_the_words_say_so_and_not_the_policy() -> None:
    p = PromptParts(4000, 40, 3000, 0, 4096, 1024, "stop", floor=3900, floor_without_tools=900)
    words, level = meter_words(p)
    assert level == "over" and "the tools' schemas take 3,000 of the 4,096-token context" in words
    assert "Turn tools off for this chat" in words
    assert "policy" not in words and "too long” in Settings" not in words and "refuse" not in words
    # the tools make the difference between every turn kept and the oldest left out: said too
    p = PromptParts(3300, 40, 400, 0, 4096, 1024, "rolling_window", floor=800, floor_without_tools=400)
    words, _ = meter_words(p)
    assert "oldest turns will be left out" in words and "The tools' schemas take 400 of it" in words
    # what no policy and no tools can help
    p = PromptParts(4000, 40, 0, 0, 4096, 1024, "rolling_window", floor=3500, floor_without_tools=3500)
    words, _ = meter_words(p)
    assert "Too long even with every earlier turn left out" in words and "tools" not in words


def test_documents_not_searched_yet_show_their_most(qtbot) -> None:
    p = PromptParts(300, 0, 0, 0, 4096, 1024, "rolling_window", documents_mode="retrieved", documents_budget=1386,
                    documents_searched=False)
    words, _ = meter_words(p)
    assert words == "300 of 4,096 tokens · documents up to 1,386"


def test_a_remote_model_counts_its_own_prompt(qtbot) -> None:
    meter = ContextMeter()
    qtbot.addWidget(meter)
    meter.show_remote()
    assert "counted by the remote" in meter.text() and meter.parts is None and not meter.bar.isVisible()
