"""A message as the cost model sees it: its content as features, in base-estimator tokens (`Parts`),
and the pseudo-messages calibration adds (the pinned overhead, a cleared result's placeholder)."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from msgspec.structs import replace

from inspector.model import (
    MediaBlock,
    Message,
    ReasoningBlock,
    Role,
    Source,
    SourceKind,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)

from ..base import compact_json, dumps_sorted
from ..heuristic import ASCII_CHARS_PER_TOKEN, HeuristicEstimator, heuristic_tokens
from .priors import PIECE_TOKENS

OVERHEAD_ID = "overhead"
OVERHEAD_TEXT = "[system prompt and tool schemas — not stored in the transcript]"
CLEARED_TEXT = "[Old tool result content cleared]"


def overhead_message() -> Message:
    """The pinned pseudo-message standing for the system prompt and tool schemas."""
    return Message(
        id=OVERHEAD_ID,
        role=Role.SYSTEM,
        blocks=(TextBlock(text=OVERHEAD_TEXT),),
        source=Source.of(SourceKind.OVERHEAD),
    )


Features = dict[str, float]
"""A sparse feature vector: feature name -> value."""


def billed_call(block: ToolCallBlock) -> ToolCallBlock:
    """The call as it is billed: an ExitPlanMode call whose arguments hold a `planFilePath` (Claude
    Code 2.1: the model writes the plan to a file and calls with none) carries the plan in the
    transcript only, for display; it is neither generated nor sent back (pooknast-da0d9633, request
    19: the context grew 558 tokens for a 436-token response and a 467-character result, while
    the plan in the call's input is 6,350 characters). Any other call is billed as it reads."""
    args = block.arguments
    if block.name == "ExitPlanMode" and type(args) is dict and "planFilePath" in args and "plan" in args:
        return replace(block, arguments={k: v for k, v in args.items() if k != "plan"})
    return block


def block_text(block: ToolCallBlock) -> str:
    args = block.arguments
    return f"{block.name} {args if isinstance(args, str) else dumps_sorted(args)}"


def _ascii_call(block: ToolCallBlock) -> tuple[int, int] | None:
    """(characters, line breaks as `_parts` counts them) of `block_text(block)` where that text is
    ASCII and its arguments a dict orjson writes as `json.dumps` does (but for the spaces after
    separators, and the order of keys: neither moves a character of a string), without writing
    it; None elsewhere (then the text is written)."""
    args = block.arguments
    name = block.name
    if type(args) is not dict or not name.isascii():
        return None
    compact = compact_json(args)
    if compact is None or compact.nbytes != compact.chars:  # (not ASCII)
        return None
    # an escaped line break is within a string: the spaces, the key order and the space after
    # the name split none; a raw one can only be in the name (json escapes them)
    lines = name.count("\\n") + name.count("\n") + compact.escaped_breaks
    return len(name) + 1 + compact.chars + compact.spaces, lines


class Parts:
    """A message's content as features, in base-estimator tokens.

    A response (an assistant message) is described by what it shows (`out_*` features: the output
    model predicts its output tokens from them) plus `final` (what a response costs when sent back
    beyond its output); any other message by the kinds of its content and its framing."""

    __slots__ = ("_output", "_visible", "human", "response", "thinking", "x")

    def __init__(self, x: Features, human: bool, thinking: bool, response: bool = False) -> None:
        self.x = x
        """Read only (shared by the predictions made from it)."""
        self.human = human
        """A user message that is not only tool results: it starts a new turn."""
        self.thinking = thinking
        self.response = response
        self._visible: Features | None = None
        self._output: Features | None = None

    @property
    def reasoning(self) -> tuple[str, str]:
        """The names of this message's reasoning features."""
        return _REASONING[self.response]

    @property
    def visible(self) -> Features:
        """A response's output features without its reasoning (read only)."""
        v = self._visible
        if v is None:
            v = self._visible = {k: n for k, n in self.x.items() if k not in _NOT_VISIBLE}
        return v

    @property
    def output(self) -> Features:
        """A response's output features: all of `x` but `final` (read only)."""
        v = self._output
        if v is None:
            v = self._output = {k: n for k, n in self.x.items() if k != "final"}
        return v


_REASONING = {True: ("out_thinking", "out_signature"), False: ("thinking", "signature")}
_FINAL_X: Features = {"final": 1.0}
"""What a response with a final output is learned from besides its output (read only)."""
_NOT_VISIBLE = frozenset(("out_thinking", "out_signature", "final"))


def _texts_of(message: Message) -> list[str]:
    out: list[str] = []
    for b in message.blocks:
        if isinstance(b, TextBlock | ReasoningBlock):
            out.append(b.text)
        elif isinstance(b, ToolCallBlock):
            out.append(block_text(billed_call(b)))
        elif isinstance(b, ToolResultBlock):
            out.append(b.content)
    return out


_PIECE = re.compile(r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+|\s+(?!\S)|\s+")
"""A BPE tokenizer's pre-tokenizer, roughly (cl100k's): a run of letters, of up to three digits or
of other non-space characters, each with the space before it; a run of whitespace."""


def _pieces_by_regex(text: str) -> int:
    """How many pieces `_PIECE` splits `text` into, by matching it (the definition `pieces` counts
    faster; `subn` counts the matches without building them)."""
    return _PIECE.subn("", text)[1]


_ASCII_SPACES = frozenset(b" \t\n\x0b\x0c\r\x1c\x1d\x1e\x1f")
"""The ASCII characters `\\s` matches (str patterns: those `str.isspace` says)."""
_WIDE_SPACE = re.compile("[\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
"""The other characters `\\s` matches; their UTF-8 starts with one of `_WIDE_SPACE_LEADS`."""
_WIDE_SPACE_E2 = re.compile(b"\xe2(?:\x80[\x80-\x8a\xa8\xa9\xaf]|\x81\x9f)")
"""The UTF-8 of the characters of `_WIDE_SPACE` that start with E2 (E2 alone is in every Read:
its line arrow is E2 86 92; E2 80 starts the dashes and quotes of prose)."""


def _wide_space_in(b: bytes) -> bool:
    """Whether UTF-8 `b` holds a character `_WIDE_SPACE` matches, by looking for the bytes of
    each (a lead byte is never another character's continuation byte, so they are found only
    where they are that character): about a quarter of the time of searching the text with
    `_WIDE_SPACE`, which a text holding any of their leads needed (a Read's dashes, say)."""
    return (
        (b"\xc2" in b and (b"\xc2\x85" in b or b"\xc2\xa0" in b))
        or _WIDE_SPACE_E2.search(b) is not None
        or (b"\xe1" in b and b"\xe1\x9a\x80" in b)
        or (b"\xe3" in b and b"\xe3\x80\x80" in b)
    )


def _is_letter(i: int) -> bool:
    return 65 <= i <= 90 or 97 <= i <= 122


_LETTER, _DIGIT, _OTHER_CHAR, _WHITE, _BREAK = 1, 2, 4, 8, 16
_CLASS = bytes(
    _WHITE | (_BREAK if i != 32 else 0)
    if i in _ASCII_SPACES
    else _LETTER
    if _is_letter(i)
    else _DIGIT
    if 48 <= i <= 57
    else _OTHER_CHAR
    for i in range(256)
)
"""Byte -> one bit per class of `_PIECE`: letter, digit, other (every byte of a non-ASCII
character: `[^\\sA-Za-z0-9]` holds it, as a whole), whitespace; and whitespace but the plain
space (the only one `_PIECE`'s ` ?` lends to the piece after it) also has the `_BREAK` bit."""
_FOUR_DIGITS = bytes((_DIGIT,)) * 4
_DIGIT_RUN = re.compile(re.escape(_FOUR_DIGITS) + b"(?:" + re.escape(_FOUR_DIGITS[:3]) + b")*")
"""In the flags of a text, four digits and the most whole threes of digits after them: a run of
L >= 4 digits matches once, from its start, 1 + 3 * ((L - 1) // 3) of its digits (the rest, under
three, cannot start another match), and those (L - 1) // 3 threes are what the run has in pieces
beyond its one. (Four digits first: a literal prefix the regex looks for quickly; a digit alone
would be tried at every digit of the text.)"""

_masks: tuple[int, int, int, int] = (0, 0, 0, 0)
"""(n, and the integers of n bytes each `_LETTER | _DIGIT | _OTHER_CHAR`, `_WHITE`, `_BREAK`):
ANDed with a shorter text's flags they keep one class (the AND of two positive
integers costs the shorter one's length); grown when a longer text comes, up to `_MASKS_KEPT`."""
_MASKS_KEPT = 1 << 20
"""The longest masks kept (three of a megabyte each); a longer text makes its own."""


def _masks_for(n: int) -> tuple[int, int, int, int]:
    global _masks
    masks = _masks
    if masks[0] < n:
        size = max(n, min(2 * masks[0], _MASKS_KEPT), 4096)
        one = int.from_bytes(b"\x01" * size, "big")
        chars = one * (_LETTER | _DIGIT | _OTHER_CHAR)
        masks = (size, chars, one * _WHITE, one * _BREAK)
        if size <= _MASKS_KEPT:
            _masks = masks
    return masks


def pieces(text: str) -> int:
    """How many pieces `_PIECE` splits `text` into, counted without the regex (the same count as
    `_pieces_by_regex`, about four times faster on code: a tool result's pieces doubled the
    heuristic calibration's time).

    Each byte of the UTF-8 becomes one flag byte of a big integer (`int.from_bytes`, once per
    text: masks pick a class out of it), so shifting by 8 bits sets a byte beside its neighbour
    and `bit_count` counts where a condition holds. The matches of `_PIECE` are: one per run of
    letters or of other characters; one per three digits of a run of digits (rounded up); and of
    a run of whitespace, one at the end of the text, else one for all but its last character
    (when there are two or more) and one for that last character unless it is a plain space
    (that one joins the piece after it). Text holding whitespace beyond ASCII is matched by the
    regex."""
    if text.isascii():
        b = text.encode("ascii")
    else:
        b = text.encode("utf-8", "surrogatepass")
        if _wide_space_in(b):
            return _pieces_by_regex(text)
    size = len(b)
    if not size:
        return 0
    _, chars, white, breaks = _masks if _masks[0] >= size else _masks_for(size)
    flags = b.translate(_CLASS)
    x = int.from_bytes(flags, "big")
    # Two counts, each the bits of a set less those of a subset of it (`a ^ (a & s)`), in lanes
    # of their own (so one `bit_count` counts all): runs of letters, of digits, of
    # other characters, and of pairs of whitespace (a whitespace and the next: a run of them per
    # run of two or more whitespace, before a non-space all but the last are one piece), each
    # counted where it starts (a flag whose previous is not the same class) ...
    w = x & white
    c = (x & chars) | (w & (w << 8))
    counted = c ^ (c & (c >> 8))
    # ... and a last character before a non-space that is not a plain space (`w << 9` sets a
    # byte's `_BREAK` bit where the next byte is whitespace)
    counted ^= (x & breaks) ^ (x & (w << 9))
    n = counted.bit_count()
    last = b[-1]
    if last in _ASCII_SPACES:  # the run at the end: one piece (not counted as before a non-space)
        n += 1 - (size > 1 and b[-2] in _ASCII_SPACES) - (last != 32)
    if _FOUR_DIGITS in flags:  # a run of 3k+1 digits or more has k pieces more than its one
        runs = _DIGIT_RUN.findall(flags)
        n += (sum(map(len, runs)) - len(runs)) // 3
    return n


def _counts_characters(size: Callable[[str], int]) -> bool:
    """Whether `size` is the character heuristic's (the base that does not see pieces)."""
    return size is heuristic_tokens or type(getattr(size, "__self__", None)) is HeuristicEstimator


def _add(x: Features, name: str, v: float) -> None:
    if v:
        x[name] = x.get(name, 0.0) + v


def parts_of(
    message: Message, sizes: Sequence[int], texts: Sequence[str] | None = None, by_pieces: bool = False
) -> Parts:
    """Parts of `message` given the base-estimator sizes of its texts (in `_texts_of` order).

    `texts`, when given, are the message's `_texts_of` (so tool calls are not serialized again);
    `by_pieces`: the sizes are the character heuristic's (`_parts`)."""
    it = iter(sizes)
    if texts is None:
        return _parts(message, lambda _text: next(it), by_pieces=by_pieces)
    blocks = [
        b
        for b in message.blocks
        if isinstance(b, TextBlock | ReasoningBlock | ToolCallBlock | ToolResultBlock)
    ]
    calls = iter([t for b, t in zip(blocks, texts, strict=True) if isinstance(b, ToolCallBlock)])
    return _parts(message, lambda _text: next(it), lambda _b: next(calls), by_pieces=by_pieces)


def _tool_names(tool: str) -> tuple[str, str]:
    """(`result:<tool>`, `results:<tool>`), made once per tool name."""
    names = _TOOL_NAMES.get(tool)
    if names is None:
        names = _TOOL_NAMES[tool] = ("result:" + tool, "results:" + tool)
    return names


_TOOL_NAMES: dict[str, tuple[str, str]] = {}
_THIRDS = ASCII_CHARS_PER_TOKEN
_USER = Role.USER
_ASSISTANT = Role.ASSISTANT

_RESULT, _MEDIA, _TEXT, _CALL, _REASONING_BLOCK, _OTHER = range(6)
_KINDS: dict[type, int] = {}
"""Block class -> what `_parts` sees it as (the first of its checks the class passes)."""


def _kind(block: object) -> int:
    """What `_parts` sees `block` as, looked up by class (each class checked once)."""
    t = type(block)
    kind = _KINDS.get(t)
    if kind is None:
        kind = _KINDS[t] = next(
            (
                i
                for i, c in enumerate((ToolResultBlock, MediaBlock, TextBlock, ToolCallBlock, ReasoningBlock))
                if isinstance(block, c)
            ),
            _OTHER,
        )
    return kind


def _parts(
    message: Message,
    size: Callable[[str], int],
    call_text: Callable[[ToolCallBlock], str] | None = None,
    thirds: bool = False,
    by_pieces: bool = False,
) -> Parts:
    """Parts of `message`, each text sized by `size` (called once per text, in `_texts_of` order;
    `call_text`, when given, gives a tool call's text in place of `block_text`, in the same turn).
    `thirds`: `size` is `heuristic_tokens` (then ASCII texts are sized here, without the call).
    `by_pieces` (implied where `size` is the heuristic's): a tool result also gets the
    `tool_result_pieces` feature (see `priors.PIECE_TOKENS`)."""
    by_pieces = by_pieces or thirds or _counts_characters(size)
    x: Features = {}
    get = x.get
    response = message.role is _ASSISTANT
    thinking = False
    blocks = 0
    results = 0
    others = 0  # blocks that are neither tool results nor media
    kinds = _KINDS
    for b in message.blocks:
        blocks += 1
        kind = kinds.get(type(b))
        if kind is None:
            kind = _kind(b)
        if kind == _RESULT:
            assert isinstance(b, ToolResultBlock)
            results += 1
            content = b.content
            n = -(-len(content) // _THIRDS) if thirds and content.isascii() else size(content)
            tool_names = _TOOL_NAMES.get(b.tool_name or "?") or _tool_names(b.tool_name or "?")
            if n:
                x["tool_result"] = get("tool_result", 0.0) + n
                x[tool_names[0]] = get(tool_names[0], 0.0) + n
            if content:
                x["tool_result_chars"] = get("tool_result_chars", 0.0) + len(content)
                lines = content.count("\n")
                if lines:
                    x["tool_result_lines"] = get("tool_result_lines", 0.0) + lines
                if by_pieces:
                    # how far the pieces' count puts the result from its characters' estimate
                    dev = PIECE_TOKENS * pieces(content) - n
                    if dev:
                        x["tool_result_pieces"] = get("tool_result_pieces", 0.0) + dev
            x[tool_names[1]] = get(tool_names[1], 0.0) + 1
            x["results"] = get("results", 0.0) + 1
            if b.is_error:
                x["error_results"] = get("error_results", 0.0) + 1
            if b.media:
                x["media"] = get("media", 0.0) + b.media
            continue
        if kind == _MEDIA:
            x["media"] = get("media", 0.0) + 1
            continue
        others += 1
        if kind == _TEXT:
            assert isinstance(b, TextBlock)
            text = b.text
            n = -(-len(text) // _THIRDS) if thirds and text.isascii() else size(text)
            if n:
                name = "out_text" if response else "text"
                x[name] = get(name, 0.0) + n
        elif kind == _CALL:
            assert isinstance(b, ToolCallBlock)
            if b.name == "ExitPlanMode":
                b = billed_call(b)
            shape = _ascii_call(b) if thirds and call_text is None else None
            if shape is not None:
                chars, lines = shape
                n = -(-chars // _THIRDS)
            else:
                text = block_text(b) if call_text is None else call_text(b)
                n = -(-len(text) // _THIRDS) if thirds and text.isascii() else size(text)
                chars = len(text)
                lines = text.count("\\n") + text.count("\n")
            if response:
                if n:
                    x["out_call"] = get("out_call", 0.0) + n
                x["out_calls"] = get("out_calls", 0.0) + 1
                args = b.arguments
                params = len(args) if isinstance(args, dict) else 1
                if params:
                    x["out_params"] = get("out_params", 0.0) + params
                if lines:
                    x["out_call_lines"] = get("out_call_lines", 0.0) + lines
            else:
                if n:
                    x["tool_call"] = get("tool_call", 0.0) + n
                if chars:
                    x["tool_call_chars"] = get("tool_call_chars", 0.0) + chars
                if lines:
                    x["tool_call_lines"] = get("tool_call_lines", 0.0) + lines
        elif kind == _REASONING_BLOCK:
            assert isinstance(b, ReasoningBlock)
            thinking = True
            think_name, sig_name = _REASONING[response]
            text = b.text
            n = -(-len(text) // _THIRDS) if thirds and text.isascii() else size(text)
            if n:
                x[think_name] = get(think_name, 0.0) + n
            if (b.signed or b.redacted) and b.signature_chars:
                x[sig_name] = get(sig_name, 0.0) + b.signature_chars
    if response:
        x["out_blocks"] = float(blocks)
        x["out_message"] = 1.0
        x["final"] = 1.0
    else:
        x["block"] = float(blocks)
        x["message"] = 1.0
    # `not message.is_tool_result`: not only tool results (and media) with at least one result
    human = message.role is _USER and (others > 0 or results == 0)
    return Parts(x, human, thinking, response)
