"""The language the set speaks to a learner in: English (the default) or Chinese (中文).

The core path has a Chinese edition (``notebooks/zh/``), whose first cell ends with
``helpers.set_language("zh")``. From then on the checkers' feedback (the ✅/❌ line, the failing
case, the hint), the core path's closing evidence card and its widgets' titles, control labels and
dropdown labels speak Chinese; everything else (identifiers, a dropdown's values, figure labels,
printed tables) stays as in English.

There is one mechanism: a text a learner may read is written once, as a :class:`Text`, an
English ``str`` that carries its Chinese beside it (``Text("mean", "均值")``), and :func:`say`
picks the one in use. A ``Text`` *is* its English string (it compares, hashes and prints as
English), so code that does not ask for a language never sees the difference.

>>> hint = Text("divide by n", "除以 n")
>>> say(hint), hint == "divide by n"
('divide by n', True)
>>> set_language("zh")
>>> say(hint)
'除以 n'
>>> set_language("en")
"""

from __future__ import annotations

__all__ = ["LANGUAGES", "Text", "get_language", "say", "set_language"]

#: The languages the set speaks: English and Chinese.
LANGUAGES = ("en", "zh")

_language = "en"


class Text(str):
    """An English string that carries its Chinese: ``Text(en, zh)``.

    It is the English ``str`` in every way (equality, hashing, ``in``, printing); ``.zh`` holds
    the Chinese, and :func:`say` returns whichever the current language asks for.
    """

    zh: str

    def __new__(cls, en: str, zh: str) -> Text:
        text = super().__new__(cls, en)
        text.zh = zh
        return text


def set_language(language: str) -> None:
    """Speak ``language`` (``"en"`` or ``"zh"``) from now on, in this Python process.

    The Chinese edition's first cell calls ``helpers.set_language("zh")``; a kernel starts in English.
    (It returns nothing, so that the cell shows no output.)
    """
    global _language
    if language not in LANGUAGES:
        raise ValueError(f"set_language(): argument 'language' must be one of {LANGUAGES}, got {language!r}")
    _language = language


def get_language() -> str:
    """The language spoken now: ``"en"`` or ``"zh"``."""
    return _language


def say(text: str) -> str:
    """``text`` in the language spoken now: a :class:`Text`'s Chinese under ``"zh"``, else the
    English (a plain ``str`` has only its English)."""
    if _language == "zh" and isinstance(text, Text):
        return text.zh
    return str.__str__(text)
