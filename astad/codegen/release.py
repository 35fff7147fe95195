"""Arrays freed as long generated code goes: ``del`` of the names read for the last time.

Reverse mode's generated functions name what they keep (the backward pass
names every cotangent: ``v7_ct``, ``v7_2_ct``, ``t3_ct``), and a Python local
lives until its function returns: a backward pass of hundreds of statements
holds every cotangent it computed, thousands of small arrays, and allocating
among them costs more than the arithmetic (``straight_line_500``'s backward
pass ran ~25% slower so).  In a function that binds at least :data:`MIN_NAMES`
names at its top level, each group of lines (headed by the line of the user's
source it comes from) ends with ``del`` of the names its lines read for the last
time (and a longer group, every :data:`MAX_GROUP` statements), as a person
frees what they are done with.  Every name keeps its meaning
(forward mode's :mod:`.reuse` gives temporaries' names to new values instead; a
cotangent's name says whose cotangent it is).

Done on the generated text (a name's last mention is found as a word of it,
``\\w+``, where libcst's visitors would take a second for a 500-statement
function): a mention anywhere in a statement counts, in a string or after a dot
too, so a name is at worst freed later than it could be, never before a read (a
word is a name, a keyword or a number: ``1e5`` does not mention ``e5``).
Only names a top-level ``name = ...`` (or ``a, b = ...``) binds are freed, after
the top-level statement (a loop, an ``if``) that mentions them last; not the
residuals unpacked from their tuple (it keeps them), not in the group that
returns (the return frees everything).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

#: functions binding fewer names at their top level are printed as they are (short code reads better without `del`)
MIN_NAMES = 64

#: a ``del`` line is at most this many characters long (unless one name is longer; more go on the next)
MAX_WIDTH = 100

#: a group of more top-level statements than this (one line of the user's, a
#: recursion inlined, say) frees names after every this many too
MAX_GROUP = 16

_INDENT = "    "
#: the lines that go on a compound statement at its own indentation
_CLAUSES = ("    else:", "    elif ", "    except", "    finally:")
_BIND = re.compile(r"    ([^\W\d]\w*(?:, [^\W\d]\w*)*) (?:[-+*/@%|&^]|//|\*\*)?= (.*)")
_WORD = re.compile(r"\w+")  # a name, a keyword, a number (or a word in a string)
#: the same two, for ASCII text (the same matches there, found faster)
_BIND_ASCII = re.compile(r"    ([A-Za-z_]\w*(?:, [A-Za-z_]\w*)*) (?:[-+*/@%|&^]|//|\*\*)?= (.*)", re.ASCII)
_WORD_ASCII = re.compile(r"\w+", re.ASCII)
#: the targets of the top-level bindings of a text of several lines (``_BIND``'s, line by line), but of
#: the residuals unpacked from their tuple (``... = residuals``); searched in ``"\n" + text``: the newline
#: ahead of each line a literal the regular expression engine looks for fast (rather than ``^``).  The
#: same matches as ``_BIND``'s, found in two thirds of the time: a name's characters and the names taken
#: (``*+``) never given back (what follows them, ``, `` or a space, is no word character: giving back
#: finds no other match), ``= `` tried first (most lines are ``name = value``)
_BINDS = re.compile(r"\n    ([^\W\d]\w*+(?:, [^\W\d]\w*+)*+) (?:= |(?:[-+*/@%|&^]|//|\*\*)= )(?!residuals$)",
                    re.MULTILINE)
_BINDS_ASCII = re.compile(r"\n    ([A-Za-z_]\w*+(?:, [A-Za-z_]\w*+)*+) (?:= |(?:[-+*/@%|&^]|//|\*\*)= )(?!residuals$)",
                          re.MULTILINE | re.ASCII)
_QUOTES = ('"' * 3, "'" * 3)
#: a line of a body that is not flat (:func:`_flat_body`): nested or continued, empty, or a clause; in
#: ``"\n" + body``, searched once (not once for each kind)
_NOT_FLAT = re.compile(r"\n(?:    (?: |else:|elif |except|finally:)|\n)")
#: the end of a function's body: a line neither indented nor empty
_BODY_END = re.compile(r"\n(?!    |\n|\Z)")


def released(code: str) -> str:
    """``code`` (a generated module) with ``del`` lines in its long functions (see the module docstring)."""
    ascii_only = code.isascii()
    out: list[str] = []
    copied = pos = 0  # code[:copied] is in out; the next function is looked for from pos
    while True:
        at = _next_def(code, pos)
        if at < 0:
            break
        start = code.find("\n", at) + 1  # the body: the lines after, indented or empty
        if not start:
            break
        e = _BODY_END.search(code, start - 1)
        pos = end = len(code) if e is None else e.start()
        if end < start:
            continue
        text = code[start:end]
        new = _flat_body(text, ascii_only)
        if new is None:  # (statements over several lines: grouped line by line)
            body = text.split("\n")
            lines = _function_body(body, ascii_only, text)
            new = text if lines is body else "\n".join(lines)
        if new is not text:
            out += (code[copied:start], new)
            copied = end
    out.append(code[copied:])
    return "".join(out)


def _next_def(code: str, pos: int) -> int:
    """Where the first line from ``pos`` on that begins ``def `` begins (-1: none), found as ``\\ndef ``
    (a regular expression's ``^def `` tries every character)."""
    if pos == 0 and code.startswith("def "):
        return 0
    at = code.find("\ndef ", pos - 1 if pos else 0)
    return at + 1 if at >= 0 else -1


def _function_body(body: list[str], ascii_only: bool = False, text: str | None = None) -> list[str]:
    """A function's body lines (``text``, split at its newlines), with ``del`` lines where names are
    read for the last time (``body`` itself where none are)."""
    if text is None:
        text = "\n".join(body)
    if _string_over_lines(body, text):
        return body  # (its lines are not statements)
    findall, bindings = (_WORD_ASCII.findall, _BINDS_ASCII.findall) if ascii_only else (_WORD.findall, _BINDS.findall)
    # the names bound at the top level, in the order of the statements binding them first (the top-level
    # statements' first lines are the only lines at the top level a binding matches: a statement's other
    # lines are deeper, comments, or clauses)
    bound = _bound(bindings("\n" + text))
    if len(bound) < MIN_NAMES or _read_at_end(body, bound, findall):
        return body
    # groups of top-level statements: [first line, last line] (of the last statement: its nested or
    # continued lines too); a group starts at a top-level comment (or after MAX_GROUP statements)
    groups: list[list[int]] = []
    group_end: dict[int, int] = {}  # group -> the line before which its `del` goes
    size = 0  # statements in the group being read
    n = len(body)
    for k, line in enumerate(body):
        fifth = line[4:5]
        if fifth == "#":  # a comment: a group's head, or a line of the compound statement before it
            following = body[k + 1] if k + 1 < n else ""
            if following[4:5] == "#" and _continues(body, k) or following.startswith(_CLAUSES):
                if groups:
                    groups[-1][1] = k
            elif size:
                group_end[len(groups) - 1] = k
                size = 0
            continue
        if fifth == " " or not line.startswith(_INDENT) or (fifth in "ef" and line.startswith(_CLAUSES)):
            if groups and line:
                groups[-1][1] = k  # a nested or continued line
            continue
        if size == MAX_GROUP:  # the group ends here
            group_end[len(groups) - 1] = k
            size = 0
        if size:
            groups[-1][1] = k
        else:
            groups.append([k, k])
        size += 1
    if not groups:
        return body
    # the last group mentioning each name: the text of a group is its statements' lines, from its first
    # statement's first line to its last one's last (between them: empty lines only), so the words of
    # each group's text (in `text` itself, from the group's first character to its last: line k
    # starts at the lengths of the lines before it, and their newlines)
    ends = list(itertools.accumulate(map(len, body)))  # line k ends at ends[k] + k
    last = _last_mentions(text, [(ends[first] + first - len(body[first]), ends[end] + end) for first, end in groups],
                          ascii_only)
    freed: dict[int, list[str]] = {}
    for name in bound:  # (in the order of the statements binding them: `bound` was filled in that order)
        g = last[name]
        if g in group_end:  # (not the last group: the function returns there)
            freed.setdefault(group_end[g], []).append(name)
    out: list[str] = []
    at = 0
    for k in sorted(freed):  # the lines up to k, then k's `del` lines
        out += body[at:k]
        at = k
        _del_lines(freed[k], out)
    out += body[at:]
    return out


def _bound(found: list[str]) -> dict[str, None]:
    """The names bound by ``found``'s targets (``a`` or ``a, b``), in their order, once each."""
    if not found:
        return {}
    joined = ", ".join(found)
    if joined.count(",") == len(found) - 1:  # (most: no target a tuple; `found` itself, not split again)
        return dict.fromkeys(found)
    return dict.fromkeys(joined.split(", "))


def _del_lines(names: list[str], out: list[str]) -> None:
    """The ``del`` lines of ``names`` (each at most MAX_WIDTH long, unless one name is longer), onto ``out``."""
    text = _INDENT + "del " + ", ".join(names)
    if len(text) <= MAX_WIDTH:  # (most: one line, as the loop below makes it where every name fits)
        out.append(text)
        return
    text = ""
    for name in names:
        if text and len(text) + 2 + len(name) > MAX_WIDTH:
            out.append(text)
            text = ""
        text = text + ", " + name if text else _INDENT + "del " + name
    if text:
        out.append(text)


def _flat_body(text: str, ascii_only: bool) -> str | None:
    """:func:`_function_body` of a flat body (each line a top-level statement of one line, or a comment:
    no nested, continued or empty line but at its end, no clause), on its text: the statements between
    two comments one group (or a group of every MAX_GROUP), found without splitting the text into lines
    (the body of a long straight-line function, the common case); None for another body."""
    lean = text.rstrip("\n")
    t = "\n" + lean
    if _NOT_FLAT.search(t):
        return None
    if _string_over_lines(None, text):
        return text
    found = (_BINDS_ASCII if ascii_only else _BINDS).findall(t)
    # the words of its last line (the last statement; None: a comment, as `_read_at_end` tells them)
    end_words = _statement_words(t[t.rfind("\n") + 1:], ascii_only)
    if end_words is not None and end_words.issuperset(found):
        return text  # (each target one name, mentioned at the end: a tuple's "a, b" is no word)
    bound = _bound(found)
    if len(bound) < MIN_NAMES or end_words is not None and bound.keys() <= end_words:
        return text  # (every name read last in the group the function returns in)
    # the groups: the lines after each comment (the text's pieces split at the comments, less the comment's
    # own text), or MAX_GROUP of them at a time; (start, end) in `t`, each a newline ahead of each line
    groups: list[tuple[int, int]] = []
    pos = 0  # where the piece starts in t
    for i, piece in enumerate(t.split("\n    #")):
        at = piece.find("\n") if i else 0
        stop = pos + len(piece)
        pos = stop + 6
        if at < 0 or not piece:
            continue  # (no statement after this comment)
        at += stop - len(piece)
        if piece.count("\n") <= MAX_GROUP:  # (most: one group)
            groups.append((at, stop))
            continue
        while at < stop:  # every MAX_GROUP lines
            end = at
            for _ in range(MAX_GROUP):
                end = t.find("\n", end + 1, stop)
                if end < 0:
                    end = stop
                    break
            groups.append((at, end))
            at = end
    if not groups:
        return text
    last = _last_mentions(t, groups, ascii_only)  # a name -> the last group mentioning it
    freed: list[list[str]] = [[] for _ in groups]
    for name in bound:  # (in the order of the statements binding them: `bound` was filled in that order)
        freed[last[name]].append(name)
    if groups[-1][1] == len(t):  # the group at the end: the one the function returns in, nothing freed there
        freed.pop()
    out: list[str] = []
    at = 0
    for (_, end), names in zip(groups, freed):
        if names:
            lines: list[str] = []
            _del_lines(names, lines)
            out += (t[at:end], "\n", "\n".join(lines))
            at = end
    if not out:
        return text
    out.append(t[at:])
    return "".join(out)[1:] + text[len(lean):]


#: each ASCII character that is not in a word (``\w``) -> a space
_NOT_WORD = str.maketrans({c: " " for c in map(chr, range(128)) if not (c.isalnum() or c == "_")})


def _last_mentions(text: str, groups: list[tuple[int, int]], ascii_only: bool) -> dict[str, int]:
    """The words of ``text``'s groups (``(start, end)`` in it, beginning and ending between words), each
    -> the last group mentioning it.  ASCII text is split at its characters not in words (``_WORD_ASCII``'s
    words, found a third of the time a regular expression takes)."""
    last: dict[str, int] = {}
    words = text.translate(_NOT_WORD) if ascii_only else text
    for g in range(len(groups) - 1, -1, -1):  # (the last group first: a word's first group met is its last)
        start, end = groups[g]
        for word in words[start:end].split() if ascii_only else _WORD.findall(text, start, end):
            if word not in last:
                last[word] = g
    return last


def _string_over_lines(body: list[str] | None, text: str) -> bool:
    """Whether a string in ``text`` (``body``'s lines, split here where None) goes on over several lines: a
    line holds one triple quote, or three.  (A quote is on one line: the lines' counts add up to the text's.)"""
    if "'" not in text:  # (one character looked for: a fast scan; most bodies: no quote but their docstring's)
        first = text.find('"')
        if first < 0:
            return False
        if text.startswith(_QUOTES[0], first):  # a docstring's quotes, then no quote at all: not over lines
            close = text.find(_QUOTES[0], first + 3)
            if close >= 0 and text.find('"', close + 3) < 0 and "\n" not in text[first:close]:
                return False
    double, single = text.count(_QUOTES[0]), text.count(_QUOTES[1])
    if not double + single:
        return False
    if double == 2 and not single:  # (a docstring, say: its quotes on one line, then no other quote)
        first = text.find(_QUOTES[0])
        if "\n" not in text[first:text.rfind(_QUOTES[0])]:
            return False
    return any(line.count(_QUOTES[0]) + line.count(_QUOTES[1]) not in (0, 2)
               for line in (text.split("\n") if body is None else body) if _QUOTES[0] in line or _QUOTES[1] in line)


def _read_at_end(body: list[str], bound: dict[str, None], findall: Any) -> bool:
    """Whether the function's last top-level statement (nothing but its own lines after it: no comment)
    mentions every name in ``bound``: then each is last read in the last group, which the return
    frees (a forward pass returning its residuals), found without grouping the lines."""
    k = len(body) - 1
    while k >= 0:
        line = body[k]
        fifth = line[4:5]
        if fifth == "#":
            return False  # (a comment: what it heads, or whether it is in a compound statement, not looked at)
        if not (fifth == " " or not line.startswith(_INDENT) or (fifth in "ef" and line.startswith(_CLAUSES))):
            break  # the last statement's first line (as _function_body's loop tells them)
        k -= 1
    if k < 0:
        return False
    return bound.keys() <= set(findall("\n".join(body[k:])))


def _statement_words(line: str, ascii_only: bool) -> set[str] | None:
    """The words of a flat body's last ``line`` (``_read_at_end``'s of a body of that line alone): None
    where it is no statement's first line (a comment, say); ASCII text split at its characters not in
    words (as :func:`_last_mentions` splits it)."""
    fifth = line[4:5]
    if fifth == "#" or fifth == " " or not line.startswith(_INDENT) or (fifth in "ef" and line.startswith(_CLAUSES)):
        return None
    return set(line.translate(_NOT_WORD).split() if ascii_only else _WORD.findall(line))


def _continues(body: list[str], k: int) -> bool:
    """Whether the comment on line ``k`` is inside a compound statement (before its ``except:``, say)."""
    for j in range(k + 1, len(body)):
        if body[j][4:5] != "#":
            return body[j].startswith(_CLAUSES)
    return False
