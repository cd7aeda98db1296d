"""Wikitext to plain text, sentences and word tokens (the text side of ``wikipedia.py``).

``strip_markup`` drops comments, ``<ref>``s (both forms) and other tags whose content is not prose
(``<math>``, ``<gallery>``, ``<syntaxhighlight>``...), templates ``{{...}}`` and tables ``{|...|}``
(nested in any order), file/image/category/media links (with their captions and the links inside
them), interlanguage links (a lower-case language prefix and no label), headings (a heading line
becomes a paragraph break), ``----``, magic words (``__TOC__``), bold/italic quotes, list markers,
the remaining HTML tags (their text is kept) and entities (``&nbsp;`` becomes a space), and by
default the level-2 sections that hold lists more than prose (``REFERENCE_SECTIONS``: See also,
References, External links...). A template that stands for one character (``{{mdash}}``,
``{{nbsp}}``...) becomes that character; every other template is dropped.
``[[target|label]]`` gives label, ``[[target]]`` target (``[[Paris (band)|]]``: Paris),
``[http://x label]`` label, an unlabelled external link nothing; bare URLs are kept. An opener
never closed (``{{``, ``[[``) is dropped and the text after it kept. Each line of the result is one
paragraph (a list item is one too), white space collapsed, with no empty line.

``split_sentences`` splits each line after ``.``, ``!`` or ``?`` (and any closing quote or bracket)
followed by white space and a capital, a digit, a quote or an opening bracket, except after an
abbreviation: a word of ``ABBREVIATIONS`` (``Mr.``, ``Dr.``, ``No.``...), a single letter (an
initial) or letters joined by periods (``e.g.``, ``i.e.``, ``U.S.``). ``tokenize`` is GluonNLP's
``BERTBasicTokenizer(lower=True)``, the word tokenizer ``text.py`` builds BERT vocabularies with:
lower case, accents stripped, each punctuation mark a token.
"""
import html
import re

STRIPPER_VERSION = "gluon_suite-wikitext-1"   # change it whenever strip_markup's output changes

# ---------------------------------------------------------------------------------- wikitext to text

_DROPPED_TAGS = ("(?:ref|references|math|chem|ce|gallery|imagemap|timeline|score|graph|syntaxhighlight"
                 "|source|templatedata|mapframe|maplink)")
_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)
_SELF_CLOSED = re.compile(rf"<{_DROPPED_TAGS}\b[^<>]*/>", re.I)
_WITH_CONTENT = re.compile(rf"<({_DROPPED_TAGS})\b[^<>]*>.*?</\1\s*>", re.I | re.S)
_BRACES = re.compile(r"\{\{|\}\}|^[ \t]*\{\||^[ \t]*\|\}(?!\})", re.M)
_BRACKETS = re.compile(r"\[\[|\]\]")
_EXTERNAL = re.compile(r"\[(?:(?:https?|ftp|ftps|irc|news|mailto|gopher):|//)[^\s\]]*\s*([^\]]*)\]", re.I)
_TAG = re.compile(r"</?([A-Za-z][A-Za-z0-9]*)\b(?:\s[^<>]*)?/?>")
_BREAKING_TAGS = {"br", "p", "div", "li", "hr", "tr", "td", "th", "dd", "dt", "blockquote"}
_HEADING = re.compile(r"^[ \t]*=+.*=+[ \t]*$", re.M)
_RULE_OR_MAGIC = re.compile(r"^[ \t]*-{4,}[ \t]*$|__[A-Z]+__", re.M)
_QUOTES = re.compile(r"'''''|'''|''")
_LIST_MARK = re.compile(r"^[ \t]*[*#:;]+[ \t]*", re.M)
_SECTION = re.compile(r"^[ \t]*==[ \t]*([^=].*?)[ \t]*==[ \t]*$", re.M)
_HIDDEN_LINKS = {"file", "image", "category", "media"}
# templates that stand for a character and nothing else; every other template is dropped
_CHARACTER_TEMPLATES = {"nbsp": " ", "mdash": "\u2014", "mdashb": "\u2014", "ndash": "\u2013",
                        "snd": " \u2013 ", "spaced ndash": " \u2013 ", "dash": " \u2013 ", "'": "'"}
REFERENCE_SECTIONS = frozenset({
    "see also", "references", "notes", "footnotes", "citations", "sources", "further reading",
    "external links", "bibliography", "notes and references", "references and notes", "works cited"})
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[a-z]+)*|simple")


def _nested(text, pattern, openers, render):
    """``text`` with every balanced opener...closer span of ``pattern``'s tokens replaced by
    ``render(opener, inner)``, innermost first (``inner`` already rendered). An opener never closed
    and a closer never opened are dropped, the text around them kept."""
    stack, pos = [[]], 0
    for m in pattern.finditer(text):
        stack[-1].append(text[pos:m.start()])
        pos = m.end()
        if m.group().strip() in openers:
            stack.append([m.group().strip()])
        elif len(stack) > 1:
            opener, *inner = stack.pop()
            stack[-1].append(render(opener, "".join(inner)))
    stack[-1].append(text[pos:])
    while len(stack) > 1:                     # unclosed openers: keep what followed them
        unclosed = stack.pop()
        stack[-1].extend(unclosed[1:])
    return "".join(stack[0])


def _template(opener, inner):
    return _CHARACTER_TEMPLATES.get(inner.strip().lower(), "") if opener == "{{" else ""


def _drop_sections(text, names):
    """``text`` without the level-2 sections (heading to the next level-2 heading) named in ``names``."""
    out, pos, dropping = [], 0, False
    for m in _SECTION.finditer(text):
        if not dropping:
            out.append(text[pos:m.start()])
        dropping, pos = m.group(1).strip().lower() in names, m.start()
    if not dropping:
        out.append(text[pos:])
    return "".join(out)


def _link(opener, inner):
    target, bar, label = inner.partition("|")
    target = target.strip()
    if target.startswith(":"):                 # [[:Category:X]] is a visible link to that page
        target = target[1:].strip()
    elif ":" in target:
        prefix = target.partition(":")[0].strip()
        if prefix.lower() in _HIDDEN_LINKS or (not bar and _LANGUAGE.fullmatch(prefix)):
            return ""
    if bar and label.strip():
        return label
    if bar:                                     # the pipe trick: [[Paris (band)|]] shows "Paris"
        return re.sub(r"\s*\([^()]*\)$", "", target.rpartition(":")[2] if ":" in target else target)
    return target


def _tag(m):
    return " " if m.group(1).lower() in _BREAKING_TAGS else ""


def strip_markup(wikitext, drop_sections=REFERENCE_SECTIONS):
    """The plain text of one page's wikitext (module docstring: what is dropped and what is kept):
    one paragraph per line, white space collapsed, no empty lines. The level-2 sections named in
    ``drop_sections`` (lower case; default: See also, References, External links... lists more
    than prose) are left out whole."""
    text = _COMMENT.sub("", wikitext)
    text = _SELF_CLOSED.sub("", text)
    text = _WITH_CONTENT.sub("", text)
    text = _nested(text, _BRACES, ("{{", "{|"), _template)
    text = _drop_sections(text, frozenset(drop_sections or ()))
    text = _nested(text, _BRACKETS, ("[[",), _link)
    text = _EXTERNAL.sub(lambda m: m.group(1), text)
    text = _TAG.sub(_tag, text)
    text = _HEADING.sub("", text)
    text = _RULE_OR_MAGIC.sub("", text)
    text = _QUOTES.sub("", text)
    text = _LIST_MARK.sub("", text)
    text = html.unescape(text).replace("\xa0", " ")
    lines = []
    for line in text.splitlines():
        line = re.sub(r"\(\s*(?:[,;:]\s*)+", "(", " ".join(line.split()))
        line = re.sub(r"\s*\(\s*\)", "", line)
        line = re.sub(r"\s+([,.;:!?])", r"\1", line).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- sentences and tokens

_BOUNDARY = re.compile(r"[.!?]+[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")
ABBREVIATIONS = frozenset(
    "mr mrs ms dr prof st jr sr mt ft gen col lt sgt capt rev hon gov sen rep pres vs no nos vol "
    "pp fig ch sec art op inc ltd co corp dept univ approx ca cf al est jan feb mar apr jun jul aug "
    "sep sept oct nov dec".split())


def _abbreviation(line, end):
    """Whether the word that ends with the period at ``line[end]`` is an abbreviation."""
    word = line[:end].rpartition(" ")[2].lstrip("\"'([").lower()
    return (word in ABBREVIATIONS or len(word) == 1 and word.isalpha()
            or re.fullmatch(r"(?:[a-z]\.)+[a-z]", word) is not None)


def split_sentences(text):
    """Sentences of ``text``: each line split by the module docstring's rule."""
    out = []
    for line in text.splitlines():
        start = 0
        for m in _BOUNDARY.finditer(line):
            if m.group()[:2].rstrip() == "." and _abbreviation(line, m.start()):
                continue
            out.append(line[start:m.end()].strip())
            start = m.end()
        out.append(line[start:].strip())
    return [s for s in out if s]


_TOKENIZER = []


def tokenize(sentence):
    """Lower-cased word tokens of ``sentence`` (GluonNLP's ``BERTBasicTokenizer(lower=True)``)."""
    if not _TOKENIZER:
        import gluonnlp as nlp
        _TOKENIZER.append(nlp.data.BERTBasicTokenizer(lower=True))
    return _TOKENIZER[0](sentence)
