"""What a JSON schema's regular expression costs llama.cpp per token, priced before it runs.

llama.cpp follows a grammar as a set of parse stacks, one for each place in the grammar the text so
far may have reached. To judge a token it walks every stack through the token's characters, and
where a character can be read at several places it follows each of them, without merging the ones
that meet again (`llama_grammar_reject_candidates_for_stack`). A pattern whose parts can read the
same text in many ways, `((a?){20}){20}` above all (400 optional a's: "aaaa" can be any 4 of them),
makes that walk grow with the number of ways. On SmolLM2's vocabulary, judging it at one token took
about 0.8 s for `((a?){7}){7}`, 11-14 s for `{10}{10}` and over a minute for `{20}{20}`, in C, on
the thread that decodes every slot.

So a pattern is read here (the ECMA-262 subset a grammar can follow), spelled out as the
positions its characters can take (counted repetitions expanded, so nested counts multiply), and
priced: the steps llama.cpp's walk takes for the worst token of up to `TOKEN_CHARS` characters,
from every set of stacks the pattern can reach (the paths counted, as llama.cpp follows them).
`price_pattern` raises GrammarError, in words, past `MAX_POSITIONS` or `MAX_STEPS`; what it lets
through costs about what a plain `^.*$` does (benchmarks/grammar_cost_bench.py measures both).
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from prefill.engine.errors import GrammarError

__all__ = ["MAX_POSITIONS", "MAX_STEPS", "TOKEN_CHARS", "PatternPrice", "price_pattern"]

MAX_POSITIONS = 2000  # characters a pattern may spell out, its counts expanded (llama.cpp's own 2000)
# The walk's steps for one token. At the bound, a pattern judged against SmolLM2's whole vocabulary cost
# about what `^.*$` does (measured: `^(a?){13}$` at 16k steps, `^(.*,){3}.*$` at 9k); past it costs grow
# as fast as the ways multiply (`^(a?){40}$`: 0.6 s a token, `^((a?){10}){10}$`: 14 s).
MAX_STEPS = 20_000
TOKEN_CHARS = 16  # the longest token priced: a walk that grows shows it well within 16 characters
MAX_DEPTH = 64  # groups inside groups
_WALK_PAST = 256  # a stack whose quick bound is past this is walked text by text
_MAX_VECTORS = 24  # distinct texts followed at one depth of a walk; past this, merged (a bound)
_MAX_WORK = 400_000  # the estimator's own steps: a pattern it cannot price within them is refused
_MAX_EDGES = 16_000  # position-to-position links: past this the pattern reads its text too many ways
_MAX_CP = 0x10FFFF
_MAX_OPTIONAL_RUN = 16  # (a?){16} is 131k steps already: a longer run is refused before it is spelled out

Ranges = tuple[tuple[int, int], ...]  # a set of code points, as sorted inclusive (low, high) ranges


@dataclass(frozen=True)
class PatternPrice:
    """What following a pattern costs: `positions` (its characters, counts expanded) and `steps`
    (llama.cpp's walk for the worst token)."""

    positions: int
    steps: int


def price_pattern(pattern: str) -> PatternPrice:
    """The price of `pattern`, or GrammarError (naming it and saying why) when it is too costly."""
    node = _Parser(pattern).parse()
    auto = _Automaton(pattern)
    first, _, _ = auto.build(node)
    steps = auto.price(first)
    return PatternPrice(len(auto.chars), steps)


def _refuse(pattern: str, why: str) -> GrammarError:
    shown = pattern if len(pattern) <= 80 else pattern[:77] + "..."
    return GrammarError(f"the pattern /{shown}/ {why}")  # as written: a repr would double its backslashes


def _too_many_ways(pattern: str) -> GrammarError:
    return _refuse(pattern, f"can read the same text in so many ways that judging one token would take llama.cpp "
                            f"over {MAX_STEPS} steps (optional or repeated parts inside repetitions, like (a?){{20}}, "
                            "are read every way they can be)")


def _optional_run(node: Node) -> int:
    """How many copies of one optional part `node` holds in a row: 0 when it must read something;
    otherwise at least 1. (a?){n} is a run of n (a text of k a's can be read by any k of them); the
    count is low where parts differ, (a?b?){n} is n, so a run past _MAX_OPTIONAL_RUN is surely costly."""
    if isinstance(node, _Chars):
        return 0
    if isinstance(node, _Rep):
        inner = _optional_run(node.item)
        if node.low > 0 and not inner:
            return 0
        return max(1, inner * (node.high if node.high is not None else node.low + 1))
    runs = [_optional_run(child) for child in (node.items if isinstance(node, _Seq) else node.options)]
    if isinstance(node, _Seq) and not (runs and all(runs)):
        return 0  # it must read something, or it reads nothing at all (an empty group, an anchor)
    return max(runs, default=1)  # the longest run of one part (the walk prices the rest)


# --- reading the pattern ----------------------------------------------------------------------
@dataclass(frozen=True)
class _Chars:
    ranges: Ranges  # one character of these


@dataclass(frozen=True)
class _Seq:
    items: tuple[Node, ...]


@dataclass(frozen=True)
class _Alt:
    options: tuple[Node, ...]


@dataclass(frozen=True)
class _Rep:
    item: Node
    low: int
    high: int | None  # None: no limit


Node = _Chars | _Seq | _Alt | _Rep
Fragment = tuple[list[int], list[int], bool]  # first positions, last positions, may read nothing
_EMPTY: Node = _Seq(())
_DIGIT: Ranges = ((48, 57),)
_WORD: Ranges = ((48, 57), (65, 90), (95, 95), (97, 122))
_SPACE: Ranges = ((9, 13), (32, 32), (0xA0, 0xA0), (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
                  (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000), (0xFEFF, 0xFEFF))
_DOT: Ranges = ((0, 9), (11, 12), (14, _MAX_CP))  # any character but \n and \r, as the converter's dot
_CONTROL = {"n": 10, "r": 13, "t": 9, "f": 12, "v": 11, "0": 0}
_COUNTS = re.compile(r"\{ *([0-9]*) *(,)? *([0-9]*) *\}")  # {m}, {m,}, {m,n}, {,n}


def _merge(ranges: list[tuple[int, int]]) -> Ranges:
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(ranges):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], hi))
        else:
            out.append((lo, hi))
    return tuple(out)


def _complement(ranges: Ranges) -> Ranges:
    out, at = [], 0
    for lo, hi in ranges:
        if lo > at:
            out.append((at, lo - 1))
        at = hi + 1
    if at <= _MAX_CP:
        out.append((at, _MAX_CP))
    return tuple(out)


class _Parser:
    """A recursive-descent reader of the pattern: alternatives, sequences, groups, classes, escapes
    and the quantifiers ?, *, +, {m}, {m,}, {m,n} (a lazy ? after one changes nothing here)."""

    def __init__(self, pattern: str):
        self.p, self.i, self.depth = pattern, 0, 0

    def parse(self) -> Node:
        node = self._alt()
        if self.i < len(self.p):  # only an unmatched ")" stops the reader early
            raise _refuse(self.p, f"has a ')' without its '(' at {self.i}")
        return node

    def _alt(self) -> Node:
        options = [self._seq()]
        while self.i < len(self.p) and self.p[self.i] == "|":
            self.i += 1
            options.append(self._seq())
        return options[0] if len(options) == 1 else _Alt(tuple(options))

    def _seq(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.p[self.i] not in "|)":
            atom = self._atom()
            while self.i < len(self.p) and self.p[self.i] in "*+?{":
                atom = self._quantified(atom)
            items.append(atom)
        return items[0] if len(items) == 1 else _Seq(tuple(items))

    def _quantified(self, atom: Node) -> Node:
        c = self.p[self.i]
        if c == "{":
            counts = self._counts()
            if counts is None:  # not a quantifier: a literal "{"
                self.i += 1
                return _Seq((atom, self._literal(ord("{"))))
            low, high = counts
        else:
            self.i += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[c]
        if self.i < len(self.p) and self.p[self.i] == "?":
            self.i += 1  # lazy: the same text
        copies = high if high is not None else low + 1
        if copies * _optional_run(atom) > _MAX_OPTIONAL_RUN:
            raise _too_many_ways(self.p)  # at once: (a?){17} alone is past MAX_STEPS, whatever else is around it
        return _Rep(atom, low, high)

    def _counts(self) -> tuple[int, int | None] | None:
        m = _COUNTS.match(self.p, self.i)
        if m is None or not m[1] and not m[2]:  # "{", "{}", "{x}": a literal "{" (the converter's own reading)
            return None
        body, low_s, comma, high_s = m[0][1:-1], m[1].strip(), m[2], (m[3] or "").strip()
        if max(len(low_s), len(high_s)) > 6:  # a count of millions: more than any grammar holds
            raise _refuse(self.p, f"repeats a part {{{body}}} times, more than the {MAX_POSITIONS} "
                                  "characters a grammar can hold")
        self.i = m.end()
        low = int(low_s) if low_s else 0
        high = low if not comma else int(high_s) if high_s else None
        if high is not None and high < low:
            raise _refuse(self.p, f"has the repetition {{{body}}}, whose maximum is below its minimum")
        return low, high

    def _literal(self, cp: int) -> Node:
        return _Chars(((cp, cp),))

    def _atom(self) -> Node:
        p, c = self.p, self.p[self.i]
        self.i += 1
        if c == "(":
            if self.i < len(p) and p[self.i] == "?":
                raise _refuse(p, "uses '(?', which a grammar cannot follow (lookarounds, named groups)")
            self.depth += 1
            if self.depth > MAX_DEPTH:
                raise _refuse(p, f"nests groups more than {MAX_DEPTH} deep")
            node = self._alt()
            if self.i >= len(p) or p[self.i] != ")":
                raise _refuse(p, "has a '(' without its ')'")
            self.i += 1
            self.depth -= 1
            return node
        if c in "*+?":
            raise _refuse(p, f"has nothing before the {c!r} at {self.i - 1} to repeat")
        if c in "^$":
            return _EMPTY  # anchors: the grammar spans the whole string anyway
        if c == ".":
            return _Chars(_DOT)
        if c == "[":
            return _Chars(self._class())
        if c == "\\":
            return _Chars(self._escape(in_class=False))
        return self._literal(ord(c))

    def _escape(self, in_class: bool) -> Ranges:
        p = self.p
        if self.i >= len(p):
            raise _refuse(p, "ends with a lone backslash")
        c = p[self.i]
        self.i += 1
        named = {"d": _DIGIT, "w": _WORD, "s": _SPACE}
        if c.lower() in named:
            ranges = named[c.lower()]
            return _complement(ranges) if c.isupper() else ranges
        if c in _CONTROL:
            return ((_CONTROL[c], _CONTROL[c]),)
        if c in "xu":
            width = 2 if c == "x" else 4
            digits = p[self.i : self.i + width]
            if len(digits) == width and all(d in "0123456789abcdefABCDEF" for d in digits):
                self.i += width
                return ((int(digits, 16), int(digits, 16)),)
        if c in "bB" and not in_class:
            return ()  # a word boundary reads nothing; () makes an atom that matches nothing, as a bound
        return ((ord(c), ord(c)),)

    def _class(self) -> Ranges:
        p = self.p
        negate = self.i < len(p) and p[self.i] == "^"
        self.i += negate
        ranges: list[tuple[int, int]] = []
        while self.i < len(p) and p[self.i] != "]":
            if p[self.i] == "\\":
                self.i += 1
                got = self._escape(in_class=True)
            else:
                got = ((ord(p[self.i]), ord(p[self.i])),)
                self.i += 1
            if len(got) == 1 and got[0][0] == got[0][1] and self.i + 1 < len(p) and p[self.i] == "-" \
                    and p[self.i + 1] != "]":
                self.i += 1
                if p[self.i] == "\\":
                    self.i += 1
                    upper = self._escape(in_class=True)
                else:
                    upper = ((ord(p[self.i]), ord(p[self.i])),)
                    self.i += 1
                if len(upper) == 1 and upper[0][0] == upper[0][1] and upper[0][0] >= got[0][0]:
                    got = ((got[0][0], upper[0][0]),)
                else:
                    raise _refuse(p, "has a character range whose ends are out of order")
            ranges.extend(got)
        if self.i >= len(p):
            raise _refuse(p, "has a '[' without its ']'")
        self.i += 1
        merged = _merge(ranges)
        return _complement(merged) if negate else merged


# --- the positions a character can take, and the walk's price -----------------------------
class _Automaton:
    """The pattern's positions (Glushkov's construction: one per character the pattern spells out,
    counted repetitions expanded as llama.cpp expands them, an optional copy only after the one
    before it) and which may follow which."""

    def __init__(self, pattern: str):
        self.pattern = pattern
        self.chars: list[Ranges] = []  # per position
        self.follow: list[set[int]] = []
        self.edges = 0

    def _link(self, froms: list[int], tos: list[int]) -> None:
        for p in froms:
            before = len(self.follow[p])
            self.follow[p].update(tos)
            self.edges += len(self.follow[p]) - before
        if self.edges > _MAX_EDGES:
            raise _refuse(self.pattern, "can read the same text in too many ways (optional or repeated "
                                        "parts inside counted repetitions, like (a?){20}): llama.cpp would "
                                        "take seconds to judge one token")

    def build(self, node: Node) -> Fragment:
        """(first positions, last positions, whether it may read nothing) of `node`, its positions added."""
        if isinstance(node, _Chars):
            if len(self.chars) >= MAX_POSITIONS:
                raise _refuse(self.pattern, f"spells out more than {MAX_POSITIONS} characters once its "
                                            "repetitions are expanded (nested counts multiply: {20} inside "
                                            "{20} is 400), more than a grammar can hold")
            self.chars.append(node.ranges)
            self.follow.append(set())
            n = len(self.chars) - 1
            return [n], [n], False
        if isinstance(node, _Seq):
            return self._seq([functools.partial(self.build, child) for child in node.items])
        if isinstance(node, _Alt):
            first: list[int] = []
            last: list[int] = []
            empty = False
            for child in node.options:
                f, la, e = self.build(child)
                first, last, empty = first + f, last + la, empty or e
            return first, last, empty
        item, low, high = node.item, node.low, node.high
        copies: list[Callable[[], Fragment]] = [lambda: self.build(item)] * low
        if high is None:
            copies.append(lambda: self._star(item))
        elif high > low:
            copies.append(lambda: self._optional_chain(item, high - low))
        return self._seq(copies)

    def _seq(self, parts: Sequence[Callable[[], Fragment]]) -> Fragment:
        first: list[int] = []
        last: list[int] = []
        empty = True
        for make in parts:
            f, la, e = make()
            self._link(last, f)
            first = first + f if empty else first
            last = last + la if e else la
            empty = empty and e
        return first, last, empty

    def _star(self, item: Node) -> Fragment:
        first, last, _ = self.build(item)
        self._link(last, first)
        return first, last, True

    def _optional_chain(self, item: Node, n: int) -> Fragment:
        """(item (item (item)?)?)? with n copies: the k-th copy only after the one before it."""
        first, last, _ = self.build(item)
        all_last = list(last)
        for _ in range(n - 1):
            f, la, _ = self.build(item)
            self._link(last, f)
            last = la
            all_last += la
        return first, all_last, True

    # --- the price --------------------------------------------------------------------------
    def price(self, first: list[int]) -> int:
        """The most steps llama.cpp's walk takes for one token, over the sets of stacks the pattern
        can reach; GrammarError past MAX_STEPS. The paths from a set of stacks are the paths from each
        of its stacks, so a set costs at most the sum of its stacks' worst walks."""
        self._classes()
        self.work = 0
        self.worst_from: dict[int, int] = {}
        self.bounds = self._bounds()
        start = frozenset(first)
        seen, todo, worst = {start}, [start], 0
        while todo:
            stacks = todo.pop()
            worst = max(worst, sum(self._worst(p) for p in stacks))
            if worst > MAX_STEPS:
                raise _too_many_ways(self.pattern)
            for nxt in self._moves(stacks).values():
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return worst

    def _worst(self, p: int) -> int:
        """The most steps of a walk from stack `p`: the quick bound, or where that is large the walk
        itself (both bound it: the smaller is kept)."""
        if p not in self.worst_from:
            bound = self.bounds[p]
            self.worst_from[p] = bound if bound <= _WALK_PAST else min(bound, self._walk(frozenset((p,))))
        return self.worst_from[p]

    def _bounds(self) -> list[int]:
        """Per position, a quick bound on its walk: its step, then for the worst class of character the
        bounds of the positions that read it, one character shorter (the most of each, whatever text
        each wants: more than any one text gives where they want different ones)."""
        owners: list[int] = []
        starts: list[int] = []
        targets: list[int] = []
        for p, moves in enumerate(self.by_class):
            for _, qs in moves:
                owners.append(p)
                starts.append(len(targets))
                targets.extend(qs)
        weight = np.array(self.weight, dtype=np.float64)
        bound = weight.copy()
        if not targets:
            return [int(w) for w in weight]
        owner_a, start_a, target_a = np.array(owners), np.array(starts), np.array(targets)
        has = np.unique(owner_a)  # positions with a next one, each owning a run of (class, nexts) pairs
        owner_starts = np.searchsorted(owner_a, has)
        for _ in range(TOKEN_CHARS - 1):
            per_class = np.add.reduceat(bound[target_a], start_a)
            bound = weight.copy()
            bound[has] += np.maximum.reduceat(per_class, owner_starts)
            np.minimum(bound, 1e18, out=bound)  # a bound past any budget: kept finite
            self._spend(len(targets))
        return [int(b) for b in bound]

    def _classes(self) -> None:
        """The alphabet cut into classes no position tells apart; `self.of[p]`: the classes p reads."""
        cuts = sorted({b for ranges in self.chars for lo, hi in ranges for b in (lo, hi + 1)})
        signatures: dict[frozenset[int], int] = {}
        unique = {r: i for i, r in enumerate(dict.fromkeys(self.chars))}
        members = list(unique)
        for lo in cuts:
            sig = frozenset(i for i, ranges in enumerate(members) if _contains(ranges, lo))
            if sig and sig not in signatures:
                signatures[sig] = len(signatures)
        by_set: list[list[int]] = [[] for _ in members]
        for sig, cls in signatures.items():
            for i in sig:
                by_set[i].append(cls)
        self.of = [by_set[unique[r]] for r in self.chars]
        self.weight = [1 + len(f) for f in self.follow]  # a path's step: its stack advanced, then each next
        self.by_class: list[list[tuple[int, list[int]]]] = []  # per position: (class, the next positions reading it)
        for f in self.follow:
            moves: dict[int, list[int]] = {}
            for q in f:
                for cls in self.of[q]:
                    moves.setdefault(cls, []).append(q)
            self.by_class.append(list(moves.items()))

    def _moves(self, stacks: frozenset[int]) -> dict[int, frozenset[int]]:
        """Per class of character: the stacks after reading one of it (llama.cpp merges equal ones)."""
        matched: dict[int, set[int]] = {}
        for p in stacks:
            for cls in self.of[p]:
                matched.setdefault(cls, set()).update(self.follow[p])
        self._spend(sum(len(m) for m in matched.values()))
        return {cls: frozenset(m) for cls, m in matched.items()}

    def _walk(self, stacks: frozenset[int]) -> int:
        """The most steps over tokens of up to TOKEN_CHARS characters from `stacks`: each path through
        the positions is followed on its own, as llama.cpp does, and each step advances one stack."""
        by_class, weight = self.by_class, self.weight
        level: dict[int, dict[int, int]] = {}
        for p in stacks:
            for cls in self.of[p]:
                level.setdefault(cls, {})[p] = 1
        texts = [(paths, 0) for paths in level.values()]
        worst = 0
        for depth in range(TOKEN_CHARS):
            nxt: dict[frozenset[tuple[int, int]], tuple[dict[int, int], int]] = {}
            for paths, spent in texts:
                spent += sum(n * weight[p] for p, n in paths.items())
                worst = max(worst, spent)
                if worst > MAX_STEPS:
                    raise _too_many_ways(self.pattern)
                if depth == TOKEN_CHARS - 1:
                    continue
                out: dict[int, dict[int, int]] = {}
                for p, n in paths.items():
                    moves = by_class[p]
                    self._spend(len(moves))
                    for cls, qs in moves:
                        d = out.get(cls)
                        if d is None:
                            out[cls] = d = {}
                        for q in qs:
                            d[q] = d.get(q, 0) + n
                for d in out.values():
                    key = frozenset(d.items())
                    if key not in nxt or nxt[key][1] < spent:
                        nxt[key] = (d, spent)
            texts = list(nxt.values())
            if len(texts) > _MAX_VECTORS:  # the most of each: a bound on every text's paths
                merged: dict[int, int] = {}
                for paths, _ in texts:
                    for p, n in paths.items():
                        merged[p] = max(merged.get(p, 0), n)
                texts = [(merged, max(s for _, s in texts))]
            if not texts:
                break
        return worst

    def _spend(self, n: int) -> None:
        self.work += n
        if self.work > _MAX_WORK:
            raise _refuse(self.pattern, "is too intricate to price before it runs (its repeated and optional "
                                        "parts reach too many states)")


def _contains(ranges: Ranges, cp: int) -> bool:
    i = bisect.bisect_right(ranges, (cp, _MAX_CP)) - 1
    return i >= 0 and ranges[i][0] <= cp <= ranges[i][1]
