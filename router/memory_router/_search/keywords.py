"""Keyword query building for full-text search (ref §1.8).

* :func:`build_match_query` — the hybrid-mode FTS5 query: every ``[\\p{L}\\p{N}_]+`` token
  quoted and joined with ``AND`` (no stop words, no lower-casing).
* :func:`extract_keywords` — OpenClaw's ``extractKeywords``: lower-cased content words with
  stop words (EN/ES/PT/AR/ZH/KO/JA) removed, CJK bigrams, Korean particles stripped.
* :func:`query_keywords` — the keywords of the ``OR`` query (the default keyword side):
  :func:`extract_keywords` without the English function words and question filler
  ("her", "both", "kind", "likely", …) that OpenClaw's list keeps, plus the query's numbers.
* :func:`build_or_query` — the quoted ``OR`` of keywords (one BM25 query, match-any).
* :func:`bm25_to_score` — FTS5's ``bm25()`` rank mapped into [0, 1] (:func:`score_to_bm25`
  maps it back).

Every string these functions return is safe inside ``MATCH``: each term is a quoted FTS5
string with ``"`` removed, so no user text is ever parsed as FTS5 syntax.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Iterable, Sequence

# Python's \w is Unicode letters, digits and underscore: the reference's [\p{L}\p{N}_].
_TOKEN = re.compile(r"\w+")
_KANA = re.compile(r"[\u3040-\u30ff]")
_HAN = re.compile(r"[\u4e00-\u9fff]")
_HAN_RUN = re.compile(r"^[\u4e00-\u9fff]+$")
_HANGUL = re.compile(r"[\uac00-\ud7af\u3131-\u3163]")
_HANGUL_SYLLABLE = re.compile(r"[\uac00-\ud7af]")
_JA_PARTS = re.compile(r"[a-z0-9_]+|[\u30a0-\u30ffー]+|[\u4e00-\u9fff]+|[\u3040-\u309f]{2,}")
_ASCII_LETTERS = re.compile(r"^[a-zA-Z]+$")
_ASCII = re.compile(r"^[\x00-\x7f]+$")
CJK = re.compile(
    r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\u1100-\u11ff\u3130-\u318f]"
)
"""A character of a script written without spaces between words (kana, Han, Hangul)."""


# Stop words per language, in the reference's categories: articles, pronouns,
# prepositions, auxiliaries, vague time words and request words.
_EN = """a an the this that these those i me my we our you your he she it they them is are was
were be been being have has had do does did will would could should can may might in on at to
for of with by from about into through during before after above below between under over and
or but if then because as while when where what which who how why yesterday today tomorrow
earlier later recently ago just now thing things stuff something anything everything nothing
please help find show get tell give"""
_ES = """el la los las un una unos unas este esta estos estas ese esa yo me mi tu te nosotros
ellos ellas usted es son era fue ser estar está están hay ha han tiene en de del al con por para
sobre entre sin hasta desde y o pero si porque como cuando cuándo donde dónde qué que cuál quién
cómo ayer hoy
mañana antes después ahora ya algo nada cosa cosas todo por favor ayuda buscar mostrar dime dame
encontrar"""
_PT = """o a os as um uma uns umas este esta isto esse essa eu me meu minha você nós eles elas
ele ela é são era foi ser estar está estão tem têm em de do da dos das no na com por para sobre
entre sem até e ou mas se porque como quando onde que qual quem ontem hoje amanhã antes depois
agora já algo nada coisa coisas tudo favor ajuda ajude encontrar mostrar diga"""
_AR = """في من إلى على عن مع هذا هذه ذلك تلك أنا أنت هو هي نحن هم هن كان كانت يكون كل بعض
لا لم لن ما ماذا متى أين كيف لماذا هل الذي التي الذين و أو ثم لكن إذا لأن قد بين بعد قبل عند
أمس اليوم غدا الآن فقط شيء أشياء من فضلك ساعد ساعدني أعطني أرني"""
_ZH = """我 你 他 她 它 我们 你们 他们 她们 这 那 这个 那个 这些 那些 的 了 是 在 有 和 与 或 但
就 也 都 不 没 没有 很 吗 呢 吧 啊 个 把 被 从 到 对 给 为 为了 以 于 而 及 还 又 再 会 能 要 想
可以 应该 什么 怎么 怎样 为什么 哪 哪里 哪个 谁 多少 何时 之前 之后 以前 以后 昨天 今天 明天
最近 刚才 现在 东西 事情 请 帮 帮我 帮忙 找 告诉 给我 显示 一下 一些 一个"""
_KO = """은 는 이 가 을 를 의 에 에서 에게 으로 로 와 과 도 만 나 저 저는 나는 내 제 우리 너 당신
그 그녀 그들 이것 그것 저것 여기 거기 저기 이 그 저 것 수 등 및 또는 그리고 하지만 그러나 그래서
그런데 만약 왜 어떻게 무엇 뭐 언제 어디 누구 어느 하다 한다 했다 하는 해요 합니다 했어요 되다 된다
됐다 되는 있다 있어요 없다 없어요 이다 입니다 아니다 어제 오늘 내일 최근 지금 방금 전에 나중에
좀 제발 주세요 알려 알려줘 찾아 찾아줘 보여줘 도와줘 것들"""
_JA = """これ それ あれ この その あの ここ そこ あそこ する した して します です でした ます
ました ある いる なる こと もの ため よう から まで など 私 あなた 彼 彼女 昨日 今日 明日 最近
さっき 今 ください 教えて 探して 見せて 何 なに どう どこ だれ いつ"""
STOP_WORDS_KO: frozenset[str] = frozenset(_KO.split())
STOP_WORDS: frozenset[str] = frozenset(
    word for group in (_EN, _ES, _PT, _AR, _ZH, _KO, _JA) for word in group.split()
)
_KO_PARTICLES = """에서 에게 한테 께서 으로 로 은 는 이 가 을 를 의 에 와 과 도 만 까지
부터 처럼 보다 이나 랑 이랑"""
KOREAN_PARTICLES: tuple[str, ...] = tuple(sorted(_KO_PARTICLES.split(), key=lambda p: -len(p)))


def _clean(term: str) -> str:
    """``term`` without ``"`` and control characters (a NUL would end the FTS5 string)."""
    return "".join(c for c in term if c != '"' and unicodedata.category(c) != "Cc")


def _quote(term: str) -> str:
    return '"' + _clean(term) + '"'


def query_tokens(query: str) -> list[str]:
    """Maximal runs of Unicode letters, digits and underscore, in order."""
    return _TOKEN.findall(query)


def build_match_query(query: str) -> str | None:
    """Every token of ``query`` quoted and ANDed; ``None`` when it has no tokens."""
    tokens = query_tokens(query)
    return " AND ".join(_quote(t) for t in tokens) if tokens else None


def build_or_query(keywords: Sequence[str]) -> str | None:
    """The quoted OR of ``keywords`` (empty ones skipped); ``None`` when none are left."""
    terms = [_quote(k) for k in keywords if _clean(k).strip()]
    return " OR ".join(terms) if terms else None


def bm25_to_score(rank: float) -> float:
    """FTS5 ``bm25()`` (negative is better) to a score in (0, 1]; non-finite gives 0.001."""
    if not math.isfinite(rank):
        return 0.001
    if rank < 0:
        relevance = -rank
        return relevance / (1 + relevance)
    return 1 / (1 + rank)


def score_to_bm25(score: float) -> float:
    """The BM25 relevance behind a :func:`bm25_to_score` score (its inverse): ``s / (1 − s)``.

    Fusion divides a query's keyword scores by its best; on the squashed scale ranks 1–40
    of one query span ~0.05, so that quotient would hardly tell them apart.
    """
    bounded = min(max(score, 0.0), 1.0 - 1e-9)
    return bounded / (1.0 - bounded)


def _segments(text: str) -> list[str]:
    """Split on whitespace and Unicode punctuation (the reference's ``[\\s\\p{P}]+``)."""
    parts: list[str] = []
    current: list[str] = []
    for char in text:
        if char.isspace() or unicodedata.category(char)[0] == "P" or char < " ":
            if current:
                parts.append("".join(current))
                current = []
        else:
            current.append(char)
    if current:
        parts.append("".join(current))
    return parts


def _japanese(segment: str, trigram: bool) -> Iterable[str]:
    for part in _JA_PARTS.findall(segment):
        yield part
        if _HAN_RUN.match(part) and not trigram:
            yield from (part[i : i + 2] for i in range(len(part) - 1))


def _chinese(segment: str, trigram: bool) -> Iterable[str]:
    chars = [c for c in segment if _HAN.match(c)]
    if trigram:
        # Whole Han runs: a trigram index cannot match one or two characters anyway.
        yield from re.findall(r"[\u4e00-\u9fff]+", segment)
        return
    yield from chars
    yield from (chars[i] + chars[i + 1] for i in range(len(chars) - 1))


def strip_korean_particle(word: str) -> str | None:
    """``word`` without its longest trailing particle, or ``None`` when it has none."""
    for particle in KOREAN_PARTICLES:  # sorted longest first
        if len(word) > len(particle) and word.endswith(particle):
            return word[: -len(particle)]
    return None


def _useful_korean_stem(stem: str) -> bool:
    return len(_HANGUL_SYLLABLE.findall(stem)) >= 2 or bool(_ASCII.match(stem))


def _korean(segment: str) -> Iterable[str]:
    stem = strip_korean_particle(segment)
    if segment not in STOP_WORDS_KO and (stem is None or stem not in STOP_WORDS_KO):
        yield segment
    if stem and stem not in STOP_WORDS_KO and _useful_korean_stem(stem):
        yield stem


def _candidates(query: str, trigram: bool) -> Iterable[str]:
    for segment in _segments(query.lower().strip()):
        if _KANA.search(segment):
            yield from _japanese(segment, trigram)
        elif _HAN.search(segment):
            yield from _chinese(segment, trigram)
        elif _HANGUL.search(segment):
            yield from _korean(segment)
        else:
            yield segment


def _valid(token: str) -> bool:
    if not token or token in STOP_WORDS:
        return False
    if _ASCII_LETTERS.match(token) and len(token) < 3:
        return False
    if token.isdigit():
        return False
    return not all(unicodedata.category(c)[0] in "PS" for c in token)


# Words the reference list keeps that carry no topic in a question: possessives and object
# pronouns, quantifiers, auxiliaries, and question filler ("what kind of", "would she
# likely", "what did X say about"). Under an OR query they match most chunks, inflate
# keyword coverage and pull snippets to the wrong lines (docs/performance.md).
_EN_QUERY_FILLER = """her hers him his its their theirs us ours yours mine myself yourself himself
herself itself ourselves themselves whom whose am shall must does done got any all both
each every few more most other others some such own same many much several also again ever
never not only very too than so there here yet still even out up down off once kind kinds type
types sort sorts likely probably say said think happen happened ways"""
QUERY_FILLER: frozenset[str] = frozenset(_EN_QUERY_FILLER.split())
_ACRONYM = re.compile(r"^[A-Z]{2}$")


def query_keywords(query: str, *, trigram: bool = False) -> list[str]:
    """The keywords of the BM25 ``OR`` query: content words, then the query's acronyms and
    numbers.

    :func:`extract_keywords` without :data:`QUERY_FILLER` (all of them when only filler is
    left), followed by two-letter capitals that are no stop word ("GP", "UI", "CI": the
    reference drops every ASCII word under three letters) and the pure numbers of the query
    ("650", "2022": rare, so BM25 weighs them high, although the reference's list drops
    them). Empty for a question of function words only, or a bare operator (``AND``).
    """
    # A lone letter outside CJK ("ÿ" of mis-decoded bytes) is no content word.
    extracted = [k for k in extract_keywords(query, trigram=trigram) if len(k) > 1 or CJK.match(k)]
    keywords = [k for k in extracted if k not in QUERY_FILLER] or extracted
    tokens = dict.fromkeys(query_tokens(query))
    numbers = [t for t in tokens if t.isdigit()]
    acronyms = [t.lower() for t in tokens if _ACRONYM.match(t) and t.lower() not in STOP_WORDS]
    return keywords + [t for t in acronyms + numbers if t not in keywords]


def extract_keywords(query: str, *, trigram: bool = False) -> list[str]:
    """Content words of ``query`` for keyword-only search, first occurrence order kept.

    ``trigram`` matches a trigram FTS tokenizer: Han runs are kept whole instead of being
    cut into single characters and bigrams.
    """
    seen: set[str] = set()
    keywords: list[str] = []
    for token in _candidates(query, trigram):
        if token not in seen and _valid(token):
            seen.add(token)
            keywords.append(token)
    return keywords
