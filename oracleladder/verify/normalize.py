"""String normalization applied before any parsing: Unicode math, combinatorial notation and
MATH-style rules (Hendrycks et al.); MATH's own `is_equiv` form for the paper grader; and the
decoding of text left in byte-level BPE symbols."""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

_THOUSANDS = re.compile(r"^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$")
_TEXT_UNITS = re.compile(r"\\(?:text|mathrm|textbf|mbox)\s*\{\s*~?\s*(?:cm|m|km|kg|g|s|h|min|degrees?|units?|dollars?|cents?|inches|feet|ft|sq\.?\s*units)\s*\}")
_MCQ_PREFIX = re.compile(r"^\(?([A-E])\)\s*")


# Unicode math as models and servers write it, mapped to the LaTeX the parser reads.
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")  # zero-width: a glyph of nothing
_ODD_SPACE = re.compile("[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_SUPERSCRIPT = re.compile("[⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻]+")
_SUPER_MAP = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻", "0123456789+-")
_VULGAR = re.compile("[\u00bc-\u00be\u2150-\u215e]")
_SQRT = re.compile(r"√\s*(\{[^{}]*\}|\([^()]*\)|\d+(?:\.\d+)?|[A-Za-z]|\\[A-Za-z]+)")
_FULLWIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F)}  # ０..９, （, ＋, ...: their ASCII forms
_SYMBOLS = {"∞": "\\infty ", "π": "\\pi ", "−": "-", "×": "\\times ", "·": "\\cdot ", "⋅": "\\cdot ",
            "÷": "/", "≤": "\\le ", "≥": "\\ge ", "≠": "\\ne ", "±": "\\pm "}
_SYMBOL = re.compile("|".join(_SYMBOLS))


def unicode_math(s: str) -> str:
    """`√2`, `½`, `x²`, `∞`, odd and zero-width spaces, full-width digits -> plain LaTeX."""
    if s.isascii():
        return s
    s = _INVISIBLE.sub("", _ODD_SPACE.sub(" ", s)).translate(_FULLWIDTH)
    s = _SUPERSCRIPT.sub(lambda m: "^{" + m.group(0).translate(_SUPER_MAP) + "}", s)
    # after a digit, `3¾` is the mixed number 3 3/4 (normalize reads "3 \\frac{3}{4}" as 15/4)
    s = _VULGAR.sub(lambda m: " \\frac{" + "}{".join(unicodedata.normalize("NFKC", m.group(0)).split("⁄")) + "}", s)
    s = _SQRT.sub(lambda m: "\\sqrt{" + (m.group(1)[1:-1] if m.group(1)[0] in "{(" else m.group(1)) + "}", s)
    return _SYMBOL.sub(lambda m: _SYMBOLS[m.group(0)], s)


# GPT-2's byte-level BPE alphabet: every byte is drawn as one printable character (a space as `Ġ`,
# a newline as `Ċ`). A broken detokenizer leaves text in that alphabet; the table is reversible.
_PRINTABLE = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
_BYTE_OF = {chr(b): b for b in _PRINTABLE}
_BYTE_OF.update({chr(256 + i): b for i, b in enumerate(b for b in range(256) if b not in _PRINTABLE)})
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_BEYOND_LATIN1 = re.compile("[^\x00-\xff]")  # the remapped bytes (`Ġ`, `Ċ`) are all beyond it
_OUTSIDE_BPE = re.compile("[^" + "".join(map(re.escape, _BYTE_OF)) + "]")
_SPECIAL_TOKEN = re.compile(r"(<\|[^|<>]*\|>|<｜[^｜<>]*｜>)")  # <|endoftext|>, <｜end of sentence｜>


def decode_byte_bpe(text: str) -> str:
    """Undo a byte-level BPE rendering, and only that: the text (special tokens aside) must use
    nothing but the BPE alphabet (so no raw space or newline), contain a remapped byte such as `Ġ`,
    and decode to valid UTF-8 without control characters. Anything else is returned unchanged."""
    parts = _SPECIAL_TOKEN.split(text)
    plain = "".join(parts[0::2])
    if not _BEYOND_LATIN1.search(plain) or _OUTSIDE_BPE.search(plain):
        return text
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(part)
            continue
        raw = bytes(_BYTE_OF[c] for c in part)
        if i == 0:  # a tail cut from a longer text may open in the middle of a UTF-8 sequence
            raw = raw.lstrip(bytes(range(0x80, 0xC0)))
        try:
            out.append(raw.decode("utf-8"))
        except UnicodeDecodeError:
            return text
    decoded = "".join(out)
    return text if _CONTROL.search(decoded) else decoded  # Latin Extended-A prose, not bytes


# Combinatorial notation of many source problems: C_n^k (choose) and A_n^k (arrangements).
_GLUED = r"(?:(?<=\\cdot)|(?<=\\times)|(?<![A-Za-z\\]))"
_ARG = r"(\{[^{}]*\}|\w)"
_COMB = re.compile(_GLUED + r"([CA])(?:_" + _ARG + r"\^" + _ARG + r"|\^" + _ARG + r"_" + _ARG + r")")
_CHOOSE = re.compile(r"\{([^{}]*)\\choose([^{}]*)\}")


def _arg(a: str) -> str:
    return a[1:-1].strip() if a.startswith("{") else a


def _comb(m: re.Match[str]) -> str:
    n, k = (m.group(2), m.group(3)) if m.group(2) else (m.group(5), m.group(4))
    n, k = _arg(n), _arg(k)
    if n.isdigit() and k.isdigit() and int(k) > int(n):
        return m.group(0)  # `C_1^2` is C_1 squared: a choose-k would be 0
    if m.group(1) == "C":
        return f" \\binom{{{n}}}{{{k}}}"
    return f" \\frac{{({n})!}}{{({n}-({k}))!}}"


def combinatorics(s: str) -> str:
    """`C_{70}^{28}`, `{n \\choose k}`, `\\dbinom` -> `\\binom{..}{..}`; `A_n^k` -> n!/(n-k)!."""
    s = s.replace("\\dbinom", "\\binom").replace("\\tbinom", "\\binom")
    s = _CHOOSE.sub(lambda m: f"\\binom{{{m.group(1).strip()}}}{{{m.group(2).strip()}}}", s)
    return _COMB.sub(_comb, s)


@lru_cache(maxsize=8192)  # golds repeat across a family's responses
def normalize(ans: str) -> str:
    """The strict and extended graders' normalization: Unicode math, combinatorics, then MATH's."""
    return math_normalize(combinatorics(unicode_math(ans)))


def math_normalize(ans: str) -> str:
    """The MATH-style steps of `normalize`."""
    s = ans.strip()
    s = s.replace("\n", " ")
    # LaTeX thin spaces go; a row break `\\` followed by a blank must stay a row break.
    s = re.sub(r"(?<!\\)\\[!,; ]", lambda m: " " if m.group(0).endswith(" ") else "", s)
    s = s.replace("\\dfrac", "\\frac").replace("\\tfrac", "\\frac")
    s = s.replace("\\left", "").replace("\\right", "")
    s = s.replace("\\displaystyle", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("°", "")
    s = s.replace("\\%", "").replace("%", "").replace("\\$", "")
    s = _TEXT_UNITS.sub("", s)
    s = re.sub(r"\\text\s*\{\s*(or|and)\s*\}", r" \1 ", s)
    s = re.sub(r"\\(?:text|mathrm|textbf|mbox)\s*\{([^{}]*)\}", r"\1", s)
    s = s.replace("\\leq", "\\le").replace("\\geq", "\\ge").replace("\\neq", "\\ne")
    # a mixed number "2 \frac{1}{4}" (space-separated, as in MATH answers) means 9/4
    s = re.sub(r"(?<![\d}^_])(\d+)\s+\\frac\{(\d+)\}\{(\d+)\}",
               lambda m: f"\\frac{{{int(m[1]) * int(m[3]) + int(m[2])}}}{{{m[3]}}}", s)
    s = s.strip().rstrip(".").strip()
    s = s.strip("$").strip()
    if s.startswith("0.") is False and re.match(r"^\.\d", s):
        s = "0" + s  # ".5" -> "0.5"
    return s


_SQRT_BARE = re.compile(r"\\sqrt(\w)")
_FRAC_BARE = re.compile(r"\\frac(\d)(\d)|\\frac(\{[^{}]*\})(\w)|\\frac(\w)(\{[^{}]*\})")
_INT_SLASH = re.compile(r"^(\d+)/(\d+)$")


def math_strip(ans: str) -> str:
    """The string form of MATH's `is_equiv` (Hendrycks et al.), which the release's cascade tries
    first, quirks included: everything from `\\text{ ` on is dropped as a unit (so the gold
    `4 \\text{ or } 2 \\frac{1}{4}` reads as 4), a short `x =` label goes, spaces go."""
    s = ans.replace("\n", "").replace("\\!", "").replace("\\\\", "\\")
    s = s.replace("tfrac", "frac").replace("dfrac", "frac").replace("\\left", "").replace("\\right", "")
    s = s.replace("^{\\circ}", "").replace("^\\circ", "").replace("\\$", "")
    s = s.split("\\text{ ")[0]
    s = s.replace("\\%", "").replace("%", "").replace(" .", " 0.").replace("{.", "{0.")
    s = "0" + s if s.startswith(".") else s
    sides = s.split("=")
    if len(sides) == 2 and len(sides[0]) <= 2:
        s = sides[1]
    s = _SQRT_BARE.sub(r"\\sqrt{\1}", s).replace(" ", "")
    s = _FRAC_BARE.sub(lambda m: "\\frac" + "".join(a if a.startswith("{") else "{" + a + "}"
                                                      for a in m.groups() if a), s)
    if s == "0.5":
        return "\\frac{1}{2}"
    m = _INT_SLASH.match(s)
    return f"\\frac{{{m[1]}}}{{{m[2]}}}" if m else s


def strip_thousands(s: str) -> str:
    """Remove thousands separators only when the whole answer is one number, so `(1,234)` stays a pair."""
    t = s.replace("{,}", ",").replace("\\,", "")
    return t.replace(",", "") if _THOUSANDS.match(t) else s


def mcq_letter(s: str) -> str | None:
    """The option letter of an answer like `C`, `(C)`, `(C) 3.15 m`, `\\text{(C)}`."""
    t = s.strip().strip("()").strip() if len(s.strip()) <= 3 else s.strip()
    if re.fullmatch(r"[A-E]", t):
        return t
    m = _MCQ_PREFIX.match(s.strip())
    return m.group(1) if m else None
