"""Claude Code session transcripts (`~/.claude/projects/<cwd>/<session>.jsonl`).

How a file becomes a ledger (docs/DESIGN.md §4, docs/notes/claude-code-transcripts.md §2-§5):
- Lines form a tree through `uuid`/`parentUuid`; order comes from that tree, not from timestamps.
  Every line with a uuid is a node (progress lines too: conversation lines can hang off them).
- The active branch is the chain from the newest conversation line back to a root. Where the
  chain meets a `compact_boundary` (a root), it goes on through `logicalParentUuid` (or the
  preserved segment) into the history before the compaction.
- Lines beside the chain are parallel tool traffic, not a fork, when they repeat a response on the
  chain (same `message.id`) or answer tool calls made on it; anything else beside the chain is a
  branch a rewind abandoned, reported but not mixed in.
- One API response is several `assistant` lines sharing `message.id`: their blocks are merged
  into one message and the largest `output_tokens` is kept. A request's context size is
  input + cache_creation + cache_read.
- `compact_boundary` starts a new ledger segment: the `isCompactSummary` message plus any
  preserved messages, then what follows. `microcompact_boundary` is recorded as an event.
- Non-conversation lines (progress, file-history-snapshot, queue-operation, system subtypes
  other than the two boundaries, and any type this reader does not know) are counted, skipped.
- Tool results are read from `message.content` (what the model saw), never `toolUseResult`.
- Each line is read once, as it arrives: lines of the usual shape by msgspec's typed decoder
  (`lines`, which skips undecoded what the ledger never reads), any other line the long way
  (`records`, `ClaudeCodeReader._take_long`: orjson, checks, load issues); both make the same
  node, which holds what its message says (blocks, usage, ids). Nesting depth is checked on what
  is kept.
- Subagents: `<session>/subagents/agent-*.jsonl` (2.1), `agent-*.jsonl` beside the session with
  the same sessionId (2.0), or inline `isSidechain` lines (1.0). `agent-acompact-*` files are a
  compaction's own call: linked to its event, not listed as subagents.

The modules, from the bottom up:
- `lines`: the usual shape of a line, decoded and checked in one pass by msgspec.
- `records`: a line's node and the reader's state; the long way a line is read.
- `ledger`: the groups of lines that make messages, and the requests made of them.
- `agents`: subagent files and compaction calls (and the hook output only they kept).
- `tree`: the active branch (across compactions, fresh contexts, broken lines), the lines a
  rewind abandoned or that hang off nothing, inline (1.0) sidechain runs.
- `builder`: the nodes made into a Transcript (members of the ledger, segments, events, requests).
- `extend`: a followed file's next transcript, made by extending the one before.
- `reader`: the incremental reader (`ClaudeCodeReader`), for a whole file and a followed one.
- `entry`: `load_claude_code`, JSON arrays of records, and `ClaudeCodeFormat` (detection).
"""

from __future__ import annotations

from .agents import clear_caches
from .entry import ClaudeCodeFormat, feed_array, load_claude_code
from .reader import ClaudeCodeReader
from .records import FORMAT, KNOWN_TYPES

__all__ = [
    "FORMAT",
    "KNOWN_TYPES",
    "ClaudeCodeFormat",
    "ClaudeCodeReader",
    "clear_caches",
    "feed_array",
    "load_claude_code",
]
