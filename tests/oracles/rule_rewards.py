#!/usr/bin/python3
"""Expected values for tests/unit/reward_crossthinkqa_test.cpp and reward_ifeval_test.cpp.

Runs ROLL's own pure-Python reward functions (taken out of its worker modules with `ast`, so ray,
torch and nltk are not needed) on the cases below and writes crossthinkqa_cases.jsonl and
ifeval_cases.jsonl into tests/data/rule_rewards/. The per-sample loop of each worker's compute_rewards (special
tokens removed, </think> extraction, float16 sums) is repeated here with numpy.float16 in place of
torch.float16 tensors. Run with Debian's python3 (numpy, and python3-langdetect for language_cases.jsonl):

    /usr/bin/python3 tests/oracles/rule_rewards.py ROLL_CHECKOUT_OR_BARE_REPO
"""
import ast
import json
import os
import subprocess
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "rule_rewards")
REWARDS = "roll/pipeline/rlvr/rewards/"


def roll_source(repo, path):
    if os.path.isfile(os.path.join(repo, path)):
        with open(os.path.join(repo, path), encoding="utf-8") as f:
            return f.read()
    return subprocess.run(["git", "-C", repo, "show", "HEAD:" + path], check=True, capture_output=True,
                          text=True).stdout


def pure_functions(source, keep_assignments=()):
    """The module's function definitions (and the named top-level assignments), importing only re/json."""
    tree = ast.parse(source)
    body = [n for n in tree.body if isinstance(n, ast.FunctionDef) or
            (isinstance(n, ast.Assign) and any(getattr(t, "id", None) in keep_assignments for t in n.targets))]
    ns = {}
    exec("import re, json, inspect, string\nfrom typing import List\n", ns)
    exec(compile(ast.Module(body=body, type_ignores=[]), "roll", "exec"), ns)
    return ns


def f16(x):
    return np.float16(np.float32(x))


def strip_special(text):
    return text.replace("<|endoftext|>", "").replace("<pad>", "").replace("<|im_end|>", "")


def crossthinkqa(repo):
    ns = pure_functions(roll_source(repo, REWARDS + "crossthinkqa_rule_reward_worker.py"))
    rep = ns["get_repetition_penalty_reward"](ngram_size=3, max_penalty=-0.5)
    length = ns["get_response_length_reward"](min_len=100, max_len=400)
    cases = [
        # (response, ground_truth, reward_type, coef, responses_width)
        ("The answer is \\boxed{B}.", "B", "soft", 0.0, 512),
        ("The answer is \\boxed{B}.", "B", "loose", 0.0, 512),
        ("The answer is \\boxed{B}.", "B", "strict", 0.0, 512),
        ("The answer is \\boxed{C}.", "B", "soft", 0.0, 512),
        ("The answer is \\boxed{C}.", "B", "loose", 0.0, 512),
        ("The answer is \\boxed{C}.", "B", "strict", 0.0, 512),
        ("so the answer is B", "B", "soft", 0.0, 512),
        ("so the answer is B", "B", "loose", 0.0, 512),
        ("so the answer is B", "B", "strict", 0.0, 512),
        ("so the answer is C", "B", "soft", 0.0, 512),
        ("I think (B) is right", "B", "soft", 0.0, 512),
        ("Because Alpha fails, the Answer Is D.", "D", "soft", 0.0, 512),
        ("Because Alpha fails, D is best", "D", "soft", 0.0, 512),
        ("<think>maybe A</think>\n\n\\boxed{A}<|im_end|>", "A", "strict", 0.0, 512),
        ("<think>The answer is \\boxed{A}</think>\nno idea", "A", "soft", 0.0, 512),
        ("\\boxed{a} then \\boxed{C}<|endoftext|><pad><pad>", "C", "soft", 0.0, 512),
        ("\\boxed{C} then \\boxed{}", "C", "soft", 0.0, 512),
        ("\\boxed{\\text{B}}", "B", "soft", 0.0, 512),
        ("\\boxed{the option b}", "B", "soft", 0.0, 512),
        ("answer is \\boxed{B", "B", "soft", 0.0, 512),
        ("\\boxed{B}", "B) Paris", "strict", 0.0, 512),
        ("all lowercase answer b", "B", "loose", 0.0, 512),
        ("the cat sat the cat sat the cat sat \\boxed{A}", "A", "soft", 0.0, 512),
        ("A B C A B C A B C A B C", "A", "loose", 0.0, 512),
        ("The answer is \\boxed{B}.", "B", "soft", 1.0, 50),
        ("The answer is \\boxed{B}.", "B", "soft", 1.0, 250),
        ("The answer is \\boxed{B}.", "B", "soft", 0.1, 399),
        ("The answer is \\boxed{C}.", "B", "soft", 0.5, 100),
        ("The answer is \\boxed{É}.", "É", "soft", 0.0, 512),
        ("", "A", "soft", 0.0, 512),
    ]
    rows = []
    for response, truth, reward_type, coef, width in cases:
        text = strip_special(response)
        answer = ns["extract_after_last_think"](text)
        extracted, rule, fmt, correct = ns["crossthinkqa_reward_fn"](answer, truth, reward_type)
        rp = rep(text)
        lr = length([0] * width)  # ROLL passes the padded response tensor row: its width
        shaped = (f16(rule) + f16(rp)) + f16(np.float32(coef) * f16(lr))
        rows.append({"response": response, "ground_truth": truth, "reward_type": reward_type,
                     "response_length_penalty_coef": coef, "responses_width": width,
                     "score": 1.0 if rule > 0 else 0.0, "rule_reward": rule, "format": fmt, "correct": correct,
                     "extracted": extracted, "repetition_penalty": rp, "length_reward": lr,
                     "response_level_reward": float(np.float16(shaped))})
    return rows


def ifeval(repo):
    ns = pure_functions(roll_source(repo, REWARDS + "ifeval_rule_reward_worker.py"), ("IF_FUNCTIONS_MAP",))
    rep = ns["get_repetition_penalty_reward"](ngram_size=3, max_penalty=-0.5)
    G = lambda name, **kw: json.dumps(dict(func_name=name, **kw))
    cases = [
        ("I love apples and Bananas.", G("verify_keywords", keyword_list=["apple", "banana"])),
        ("I love apples.", G("verify_keywords", keyword_list=["apple", "banana"])),
        ("one two three", G("verify_keyword_frequency", word="cat", N=3)),
        ("the cat, the cat", G("verify_keyword_frequency", word="cat", N=2)),
        ("no bad words here", G("validate_forbidden_words", forbidden_words=["Evil", "nasty"])),
        ("this is NASTY stuff", G("validate_forbidden_words", forbidden_words=["Evil", "nasty"])),
        ("banana", G("verify_letter_frequency", letter="a", N=3)),
        ("Banana", G("verify_letter_frequency", letter="b", N=1)),
        ("banana", G("verify_letter_frequency", letter="an", N=2)),
        ("First.\n* * *\nSecond.\n  * * *  \nThird.", G("verify_paragraph_count", N=3)),
        ("First.\n* * *\n* * *\nThird.", G("verify_paragraph_count", N=3)),
        ("one two three four five six seven eight nine ten", G("validate_word_constraint", N=10, quantifier="at least")),
        ("one two three", G("validate_word_constraint", N=10, quantifier="at most")),
        ("a b c d e f g h i j k l", G("validate_word_constraint", N=10, quantifier="around")),
        ("a b c d e f g h i j k l m", G("validate_word_constraint", N=10, quantifier="around")),
        ("a b c", G("validate_word_constraint", N=3, quantifier="exactly")),
        ("Hi there. How are you? I am fine.", G("verify_sentence_constraint", N=3, quantifier="at least")),
        ("Mr. Smith went home. He slept.", G("verify_sentence_constraint", N=2, quantifier="at most")),
        ("See e.g. this. Done.", G("verify_sentence_constraint", N=2, quantifier="at most")),
        ("Intro\n\nBody starts here\n\nEnd", G("validate_paragraphs", N=3, first_word="Body", i=2)),
        ("Intro\n\nBody starts here\n\nEnd", G("validate_paragraphs", N=3, first_word="End", i=0)),
        ("Intro\n\nBody", G("validate_paragraphs", N=3, first_word="Body", i=2)),
        ("Letter body.\nP.S. see you", G("verify_postscript", postscript_marker="P.S.")),
        ("Letter body.\nP.S.   ", G("verify_postscript", postscript_marker="P.S.")),
        ("Send to [name] at [address]", G("validate_placeholders", N=2)),
        ("Send to [name\n] at [address]", G("validate_placeholders", N=2)),
        ("* one\n- two\n  * three\nfour", G("verify_bullet_points", N=3)),
        ("* one\n- two", G("verify_bullet_points", N=3)),
        ("<<My Poem>>\nroses", G("validate_title")),
        ("<<My\nPoem>>", G("validate_title")),
        ("yes", G("validate_choice", options=["My answer is yes.", "My answer is no."])),
        ("My answer is maybe.", G("validate_choice", options=["My answer is yes.", "My answer is no."])),
        ("*one* and *two* and **", G("validate_highlighted_sections", N=3)),
        ("*one* and *two\n*", G("validate_highlighted_sections", N=2)),
        ("SECTION 1 a SECTION 2 b", G("validate_sections", N=2, section_splitter="SECTION")),
        ("intro SECTION 1 a SECTION 2 b", G("validate_sections", N=2, section_splitter="SECTION")),
        ('{"a": [1, 2.5e3, null, NaN]}', G("validate_json_format")),
        ('```json\n{"a": 1}\n```', G("validate_json_format")),
        ('  [1, 2]\n', G("validate_json_format")),
        ("Write a poem. Here it is.", G("validate_repeat_prompt", original_prompt="Write a poem.")),
        ("Answer one ****** Answer two", G("validate_two_responses")),
        ("same ****** same ", G("validate_two_responses")),
        ("one ******* two", G("validate_two_responses")),
        ("ALL CAPS 123!", G("validate_uppercase")),
        ("ALL CAPS but one", G("validate_uppercase")),
        ("all lower, 123", G("validate_lowercase")),
        ("The NASA and ESA crews met USA_TODAY", G("validate_frequency_capital_words", N=2, quantifier="at least")),
        ("The NASA and ESA crews", G("validate_frequency_capital_words", N=3, quantifier="around")),
        ("Is there anything else I can help with?", G("validate_end", end_phrase="Is there anything else I can help with?")),
        ("Is there anything else I can help with? ", G("validate_end", end_phrase="Is there anything else I can help with?")),
        ('"quoted answer"', G("validate_quotation")),
        ('"', G("validate_quotation")),
        ("no commas here", G("validate_no_commas")),
        ("one, two", G("validate_no_commas")),
        ("<think>draft, with commas</think>\n\nfinal answer", G("validate_no_commas")),
        ("fine text<|im_end|>", G("validate_lowercase")),
        ("text", G("validate_word_constraint", N="3", quantifier="at least")),
        ("text", G("verify_keywords")),
        ("text", G("verify_keywords", keyword_list=["text"], unused=1)),
        ("go go go go go go", G("validate_lowercase")),
        ("text", json.dumps({"func_name": "no_such_check"})),
        ("text", G("validate_word_constraint", N=1.0, quantifier="at least")),
        ("Intro\n\nBody", G("validate_paragraphs", N=2, first_word="Body", i=2.0)),
    ]
    rows = []
    for response, truth in cases:
        text1 = strip_special(response)
        text = ns["extract_after_last_think"](text1)
        constraint = json.loads(truth)
        name = constraint.pop("func_name", None)
        if name not in ns["IF_FUNCTIONS_MAP"]:
            result = False  # ROLL: score 0 (and a missing penalty entry, which breaks its tensor sum)
        else:
            try:
                result = ns["call_ifeval_function"](ns["IF_FUNCTIONS_MAP"][name], text, constraint)
            except Exception:
                result = False
        score = 1.0 if result else 0.0
        rp = rep(text1)
        rows.append({"response": response, "ground_truth": truth, "tag": "ifeval", "score": score,
                     "repetition_penalty": rp, "response_level_reward": float(f16(score) + f16(rp))})
    return rows


LANGUAGE_TEXTS = [
    "The committee will meet again next week to discuss the budget and the new schedule.",
    "Der Ausschuss wird sich nächste Woche wieder treffen, um den Haushalt und den neuen Zeitplan zu besprechen.",
    "Le comité se réunira de nouveau la semaine prochaine pour discuter du budget et du nouveau calendrier.",
    "El comité se reunirá de nuevo la próxima semana para hablar del presupuesto y del nuevo calendario.",
    "Il comitato si riunirà di nuovo la prossima settimana per discutere il bilancio e il nuovo calendario.",
    "O comitê vai se reunir novamente na próxima semana para discutir o orçamento e o novo cronograma.",
    "De commissie komt volgende week opnieuw bijeen om de begroting en het nieuwe schema te bespreken.",
    "Kommittén kommer att träffas igen nästa vecka för att diskutera budgeten och det nya schemat.",
    "Komitet zbierze się ponownie w przyszłym tygodniu, aby omówić budżet i nowy harmonogram prac.",
    "Komite akan bertemu lagi minggu depan untuk membahas anggaran dan jadwal yang baru itu.",
    "Komite gelecek hafta bütçeyi ve yeni programı görüşmek için yeniden toplanacak.",
    "Комитет снова соберётся на следующей неделе, чтобы обсудить бюджет и новое расписание работы.",
    "委員会は来週再び集まり、予算と新しいスケジュールについて話し合います。",
    "위원회는 다음 주에 다시 모여 예산과 새로운 일정에 대해 논의할 것입니다.",
    "委员会下周将再次开会，讨论预算和新的时间表。",
    "ستجتمع اللجنة مرة أخرى الأسبوع المقبل لمناقشة الميزانية والجدول الزمني الجديد.",
    "Η επιτροπή θα συνεδριάσει ξανά την επόμενη εβδομάδα για να συζητήσει τον προϋπολογισμό.",
    "समिति अगले सप्ताह बजट और नए कार्यक्रम पर चर्चा करने के लिए फिर से बैठक करेगी।",
]


def language():
    """langdetect's detect() (seeded, as ROLL's check calls it unseeded) on sentences long enough
    that its answer does not change with the seed; None when python3-langdetect is not installed."""
    try:
        from langdetect import DetectorFactory, detect
    except ImportError:
        return None
    DetectorFactory.seed = 0
    return [{"text": t, "detected": detect(t)} for t in LANGUAGE_TEXTS]


def write(name, rows):
    with open(os.path.join(OUT, name), "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    write("crossthinkqa_cases.jsonl", crossthinkqa(sys.argv[1]))
    write("ifeval_cases.jsonl", ifeval(sys.argv[1]))
    lang = language()
    if lang is None:
        print("python3-langdetect is not installed: language_cases.jsonl left as it is", file=sys.stderr)
    else:
        write("language_cases.jsonl", lang)
