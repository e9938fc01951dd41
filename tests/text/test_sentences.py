"""Sentence splitting beyond English: CJK, Korean, Hindi, Arabic; English unchanged."""

import pytest

from stylebench_jax.text.sentences import (
    _spacy_sentencizer,
    regex_split,
    script_split,
    split_sentences,
    splitter_name,
    uses_script_rules,
)


@pytest.mark.parametrize("text, expected", [
    # Chinese: no spaces after 。！？; a run of marks and a closing quote stay with their sentence.
    ("我喜欢猫。他喜欢狗！你呢？！“好的。”我们走吧",
     ["我喜欢猫。", "他喜欢狗！", "你呢？！", "“好的。”", "我们走吧"]),
    # Japanese: 。 and 」 (closing bracket after the full stop), half-width ｡
    ("私は猫が好きです。「本当ですか。」彼は犬が好きです｡明日は雨",
     ["私は猫が好きです。", "「本当ですか。」", "彼は犬が好きです｡", "明日は雨"]),
    # Korean: Western punctuation followed by spaces; a decimal number is not a boundary.
    ("나는 고양이를 좋아한다. 그는 개를 3.5마리 키운다! 정말? 그렇다",
     ["나는 고양이를 좋아한다.", "그는 개를 3.5마리 키운다!", "정말?", "그렇다"]),
    # Hindi: danda with and without a following space, double danda, a question mark.
    ("मुझे बिल्लियाँ पसंद हैं।उसे कुत्ते पसंद हैं। क्या तुम्हें? हाँ॥ ठीक",
     ["मुझे बिल्लियाँ पसंद हैं।", "उसे कुत्ते पसंद हैं।", "क्या तुम्हें?", "हाँ॥", "ठीक"]),
    # Arabic: Arabic question mark and full stop followed by spaces, a blank line.
    ("أحب القطط. هل تحب الكلاب؟ نعم!\n\nفقرة جديدة بدون نقطة",
     ["أحب القطط.", "هل تحب الكلاب؟", "نعم!", "فقرة جديدة بدون نقطة"]),
])
def test_script_rules_split(text, expected):
    assert uses_script_rules(text)
    assert split_sentences(text) == expected
    assert script_split(text) == expected


def test_english_and_mostly_latin_keep_the_english_splitter():
    texts = ['He left. "Why?" she asked! Then silence.\n\nNew paragraph without stop',
             "Dr. Smith met Mr. Wang (王先生) in the U.S. yesterday. They talked for 3.5 hours.",
             "Le chat est assis. Кошка сидит на ковре. Η γάτα κάθεται."]
    nlp = _spacy_sentencizer()
    for text in texts:
        assert not uses_script_rules(text)
        if nlp is None:
            expected = regex_split(text)
        else:
            expected = [s.text.strip() for s in nlp(text).sents if s.text.strip()]
        assert split_sentences(text) == expected


def test_nothing_lost_and_name_versioned():
    text = "第一句。第二句！Third one? 第四句"
    assert "".join(split_sentences(text)).replace(" ", "") == text.replace(" ", "")
    assert splitter_name().endswith("+scripts1")
    # No sentence marks at all (Thai): one piece, later cut into token windows by the chunker.
    assert split_sentences("แมวนั่งบนเสื่อ หมาวิ่งเร็ว") == ["แมวนั่งบนเสื่อ หมาวิ่งเร็ว"]
