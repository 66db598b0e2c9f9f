"""Tokenizer, write gates, query cleaning and scene folding."""

from __future__ import annotations

from services.memory.gates import clean_query_for_recall, is_volatile_note, shape_rejection, write_rejection
from services.memory.scenes import (
    SCENE_SYNONYMS,
    TOPICS,
    display_language,
    fold_scene,
    governed_scenes,
    normalize_scene,
    scene_label,
    top_scenes,
)
from services.memory.similarity import is_near_duplicate, similarity, strip_lead
from services.memory.tokenizer import tokenize


def test_cjk_text_becomes_bigrams_with_function_words_cut_out() -> None:
    assert tokenize("构建使用的工具") == ["构建", "建使", "使用", "工具"]
    assert "么构" not in tokenize("怎么构建")
    assert tokenize("怎么构建") == ["构建"]


def test_latin_words_are_lowercased_and_stop_words_dropped() -> None:
    assert tokenize("The CI runs on GitHub Actions") == ["ci", "runs", "github", "actions"]


def test_mixed_text_keeps_both_scripts() -> None:
    assert tokenize("用 uv 管理依赖") == ["uv", "管理", "理依", "依赖"]


def test_json_fragments_and_field_lines_are_rejected_by_the_shape_gate() -> None:
    assert shape_rejection('[{"text": "CI 跑在') == "json_fragment"
    assert shape_rejection('"kind": "decision",') == "json_fragment"
    assert shape_rejection("kind: decision") == ""  # prose-like; not a JSON field line
    assert shape_rejection('text: "CI 跑在 GitHub"') == "field_line"
    assert shape_rejection("},") == "too_short"
    assert shape_rejection("The build uses uv") == ""


def test_task_progress_is_volatile_and_knowledge_is_not() -> None:
    assert is_volatile_note("下一步:修改 main.py")
    assert is_volatile_note("当前进度 3/5")
    assert is_volatile_note("Next step: run the tests")
    assert is_volatile_note("Draft saved to /tmp/x.txt")
    assert not is_volatile_note("The project builds with uv")
    assert write_rejection("下一步:修改 main.py") == "volatile_state"


def test_query_cleaning_strips_tool_output_and_tail_blocks_but_keeps_comparisons() -> None:
    query = (
        "why is a < b here <tool_output>read output tool</tool_output> "
        "<memory-constraints>- (decision) old words</memory-constraints> <b>bold</b>"
    )
    cleaned = clean_query_for_recall(query)
    assert "a < b" in cleaned
    assert "tool" not in cleaned and "old words" not in cleaned and "<b>" not in cleaned
    assert "bold" in cleaned
    assert len(clean_query_for_recall("x" * 5000)) == 2048


def test_an_unclosed_volatile_block_is_stripped_to_the_end() -> None:
    assert clean_query_for_recall("build? <task-state>step 1 done") == "build?"


def test_scene_folding_is_idempotent_and_normalizes_first() -> None:
    assert fold_scene("  记忆系统 ") == "memory"
    assert fold_scene("Build") == "build"
    for value in SCENE_SYNONYMS.values():
        assert fold_scene(value) == value, "a key must not itself be folded"
    assert normalize_scene("x" * 100) == "x" * 80


def test_a_scene_is_stored_as_its_key_whatever_language_it_was_written_in() -> None:
    assert fold_scene("testing") == fold_scene("测试") == fold_scene("Tests") == "testing"
    assert fold_scene("CI/CD") == fold_scene("持续集成") == "ci"
    assert fold_scene("前端") == "前端" and fold_scene("Frontend") == "Frontend"  # no topic: kept as written
    for topic in TOPICS:
        assert topic.key.isascii() and topic.key == topic.key.lower()
        assert all(fold_scene(label) == topic.key for label in topic.labels.values())


def test_a_key_is_translated_only_for_display() -> None:
    assert scene_label("testing", "zh") == "测试" and scene_label("testing", "en") == "testing"
    assert scene_label("ci", "en") == "CI/CD" and scene_label("ci", "fr") == "CI/CD"
    assert scene_label("前端", "en") == "前端"
    assert display_language({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert display_language({"LC_ALL": "C", "LANG": "zh_CN.UTF-8"}) == "en"  # LC_ALL wins
    assert display_language({"LC_MESSAGES": "de_DE.UTF-8", "LANG": "zh_CN.UTF-8"}) == "de"
    assert display_language({}) == "en"


def test_governed_scenes_count_folded_spellings_together() -> None:
    assert governed_scenes(["记忆模块", "记忆系统", "记忆配置", "发布"]) == {"memory"}


def test_top_scenes_rank_by_heat_then_name() -> None:
    assert top_scenes([("构建", 2), ("发布", 5), ("build", 4), ("CI", 0)]) == [
        ("build", 2, 6), ("release", 1, 5), ("ci", 1, 0)
    ]


def test_lead_phrases_do_not_make_notes_different() -> None:
    assert strip_lead("The user prefers tabs over spaces") == "tabs over spaces"
    assert is_near_duplicate("用户偏好:回答使用中文", "回答使用中文。")
    assert similarity("The build uses uv", "The release uses npm") < 0.8
