"""Characters a reader takes for the ASCII ones our markers are made of.

agents/loop/marking.py matches its markers (`<untrusted`, a line opening with `[`) on
what a reader sees, so a Cyrillic e or a fullwidth bracket cannot slip a forged
marker past it. Compatibility forms (fullwidth, mathematical, ligatures) are already
folded by NFKD there; this table holds the look-alikes NFKD keeps apart: the Latin,
Greek, Cyrillic, Armenian and Cherokee letters that Unicode's confusables list (TR39)
gives for each ASCII letter, after case folding, plus the symbols that pass for `<`,
`/`, `[`, `]` and `"`. Imports nothing.
"""

# every character below is here because it looks like another one
# ruff: noqa: RUF001

#: by the ASCII character they pass for; keys are what a case-folded view holds
LOOKALIKES = {
    "a": "ɑαаᎪ",
    "b": "ƅβвьᏏᏴꞵ",
    "c": "σсᏟᴄ",
    "d": "ԁᎠᏧ",
    "e": "εеҽᎬ",
    "f": "ϝքꞙ",
    "g": "ƍɡԍցᏀᏳ",
    "h": "ηнһհᎻᏂ",
    # `l`, `1` and `|` as `i` too: `I` and `l` look the same in most fonts
    "i": "ıɩɪιіӏᎥǀᏞl1|",
    "j": "ʝϳјᎫ",
    "k": "κкᏦ",
    "m": "μϻмᎷ",
    "n": "ոռ",
    "o": "οоօᴏᴑ0",
    "p": "ρрᏢ",
    "q": "ԛգզ",
    "r": "ʀгᎡᎱᏒᴦ",
    "s": "ƽѕտᏕᏚꜱ",
    "t": "τтᎢ",
    "u": "ʋυսᴜꞟ",
    "v": "νѵᏙᴠ",
    "w": "ɯѡԝաᎳᏔᴡ",
    "x": "χх",
    "y": "ɣʏγуүᎩᎽ",
    "z": "ζᏃᴢ",
    "<": "‹❮˂ᐸ〈⟨",
    "/": "∕⁄╱⟋⧸",
    "[": "❲〔〘⟦⁅【〖",
    "]": "❳〕〙⟧⁆】〗",
    '"': "“”„‟",
    # letters that show as blank space: the Hangul fillers and the braille blank
    " ": "\u115f\u1160\u2800",
}

#: `LOOKALIKES` as a `str.translate` table
FOLD = {ord(char): ascii for ascii, chars in LOOKALIKES.items() for char in chars}
