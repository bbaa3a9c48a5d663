"""Part-of-speech tagsets: the Brown corpus tags mapped to a small universal tagset.

The Brown corpus uses about 80 base tags (``nn`` singular noun, ``vbd`` past-tense verb,
``pp$`` possessive pronoun, ...), decorated in four ways:

- a suffix ``-tl`` (word in a title), ``-hl`` (in a headline), ``-nc`` (cited word);
  the suffixes can stack (``nn-tl-hl``) and a few are cut short in the corpus (``ber-n``);
- a prefix ``fw-`` for a foreign word (``fw-nn``, ``fw-in+at-tl``);
- a ``+`` between the tags of a contraction (``ppss+bem`` "I'm", ``vb+ppo`` "gimme");
- a trailing ``*`` for a negated form (``do*`` "don't") and ``$`` for a possessive (``np$``).

:func:`brown_to_universal` reduces any such tag to one of the twelve tags of Petrov, Das and
McDonald (2012), "A Universal Part-of-Speech Tagset": foreign words become ``X``; the
decorations are stripped; a contraction takes the tag of its first part; ``*`` alone
(the negator "not", "n't") is an adverb.
"""

from __future__ import annotations

from functools import lru_cache

from seqlab.i18n import _

__all__ = ["UNIVERSAL_TAGS", "BROWN_BASE_TO_UNIVERSAL", "brown_to_universal", "universal_tags"]

#: The twelve universal tags, in a fixed order (an HMM's state i is UNIVERSAL_TAGS[i]).
UNIVERSAL_TAGS: tuple[str, ...] = ("NOUN", "VERB", "ADJ", "ADV", "PRON", "DET", "ADP", "NUM", "CONJ", "PRT", ".", "X")

_GROUPS: dict[str, str] = {
    # nouns: common, proper, adverbial ("home", "west"), singular and plural
    "NOUN": "nn nns np nps nr nrs",
    # verbs: every form of be, have, do, the modals and the lexical verbs
    "VERB": "vb vbd vbg vbn vbz be bed bedz beg bem ben ber bez hv hvd hvg hvn hvz do dod doz md",
    # adjectives: positive, comparative, superlative; ordinal numerals ("first")
    "ADJ": "jj jjr jjs jjt od",
    # adverbs, qualifiers ("very"), wh-adverbs, wh-qualifiers ("how"), the negator "not"
    "ADV": "rb rbr rbt rn ql qlp wrb wql *",
    # personal, reflexive, possessive, nominal and wh- pronouns
    "PRON": "pn pp$ pp$$ ppl ppls ppo pps ppss wp$ wpo wps",
    # articles, determiners, pre-/post-determiners, wh-determiners, existential "there"
    "DET": "at abl abn abx ap dt dti dts dtx wdt ex",
    # prepositions and subordinating conjunctions ("because", "if")
    "ADP": "in cs",
    "NUM": "cd",
    "CONJ": "cc",
    # particles ("up" in "give up") and infinitival "to"
    "PRT": "rp to",
    # punctuation
    ".": ". , : ; ( ) `` '' ' -- ! ?",
    # interjections, and the tag "nil" the corpus gives a few untaggable tokens
    "X": "uh nil",
}

#: Every base tag of the Brown tagset (no decorations) and its universal tag.
BROWN_BASE_TO_UNIVERSAL: dict[str, str] = {base: tag for tag, bases in _GROUPS.items() for base in bases.split()}


@lru_cache(maxsize=4096)
def brown_to_universal(tag: str) -> str:
    """The universal tag (one of :data:`UNIVERSAL_TAGS`) of a Brown tag, decorations included.

    >>> [brown_to_universal(t) for t in ["nn-tl", "vbd-hl", "np$", "ppss+bem", "*", "--", "fw-nn"]]
    ['NOUN', 'VERB', 'NOUN', 'PRON', 'ADV', '.', 'X']

    Raises ``ValueError`` for a tag that is not a Brown tag.
    """
    if not isinstance(tag, str):
        raise TypeError(_("a tag must be a string, got {kind}").format(kind=type(tag).__name__))
    original = tag
    tag = tag.strip().lower()
    if not tag:
        raise ValueError(_("an empty string is not a Brown tag"))
    if tag.startswith("fw-"):
        return "X"
    if tag.startswith("--"):  # the dash itself, possibly with a suffix: "--", "---hl"
        return "."
    base = tag.split("-")[0]  # drop -tl, -hl, -nc (stacked or cut short)
    base = base.split("+")[0]  # a contraction takes the tag of its first part
    if base in BROWN_BASE_TO_UNIVERSAL:  # "pp$", "pp$$", "wp$", "*" are base tags themselves
        return BROWN_BASE_TO_UNIVERSAL[base]
    stripped = base.rstrip("$*")  # possessive "np$", negated "md*", "bez*"
    if stripped in BROWN_BASE_TO_UNIVERSAL:
        return BROWN_BASE_TO_UNIVERSAL[stripped]
    raise ValueError(_("{tag!r} is not a Brown corpus tag").format(tag=original))


def universal_tags(tags: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """Map a sentence's Brown tags to universal tags."""
    return tuple(brown_to_universal(t) for t in tags)
