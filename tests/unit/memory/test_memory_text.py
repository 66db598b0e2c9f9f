"""Tokenizer, write gates, query cleaning and scene folding."""

from __future__ import annotations

from services.memory.gates import clean_query_for_recall, is_volatile_note, shape_rejection, write_rejection
from services.memory.scenes import SCENE_SYNONYMS, fold_scene, governed_scenes, normalize_scene, top_scenes
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
    assert fold_scene("  记忆系统 ") == "记忆模块"
    assert fold_scene("Build") == "构建"
    for value in SCENE_SYNONYMS.values():
        assert fold_scene(value) == value, "a canonical label must not itself be folded"
    assert normalize_scene("x" * 100) == "x" * 80


def test_governed_scenes_count_folded_spellings_together() -> None:
    assert governed_scenes(["记忆模块", "记忆系统", "记忆配置", "发布"]) == {"记忆模块"}


def test_top_scenes_rank_by_heat_then_name() -> None:
    assert top_scenes([("构建", 2), ("发布", 5), ("build", 4), ("CI", 0)]) == [
        ("构建", 2, 6), ("发布", 1, 5), ("CI/CD", 1, 0)
    ]


def test_lead_phrases_do_not_make_notes_different() -> None:
    assert strip_lead("The user prefers tabs over spaces") == "tabs over spaces"
    assert is_near_duplicate("用户偏好:回答使用中文", "回答使用中文。")
    assert similarity("The build uses uv", "The release uses npm") < 0.8
