"""The tool service's fixed limits (the spec's numbers; not configurable on purpose)."""

READ_MAX_BYTES = 10 * 1024 * 1024
"""read refuses files above 10 MB."""
WRITE_MAX_BYTES = READ_MAX_BYTES
"""write and edit refuse a result above 10 MB: a file the agent writes it must be able to read back."""
READ_DEFAULT_LIMIT = 2000
"""Lines returned by one read when no limit is given."""
READ_LINE_MAX_CHARS = 2000
"""A longer line is cut in read output (with a marker)."""
BINARY_SNIFF_BYTES = 8192
"""A NUL byte in the first 8 KB marks a file as binary (what git and ripgrep do)."""

BASH_DEFAULT_TIMEOUT = 60.0
BASH_MAX_TIMEOUT = 600.0
OUTPUT_CAP_CHARS = 50_000
"""bash output kept for the model: head and tail halves around a cut marker."""
CHUNK_INTERVAL_SECONDS = 0.15
"""At most one streamed chunk per interval per call."""
CHUNK_MAX_CHARS = 8192
"""One streamed chunk carries at most this much text."""
STREAM_CAP_CHARS = 200_000
"""Streaming stops (with a note) after this much text; the result still has head and tail."""
KILL_GRACE_SECONDS = 2.0
"""After the main process ends, how long to wait for the pipes to close before killing the group."""

GREP_LINE_MAX_CHARS = 300
GREP_DEFAULT_MAX_HITS = 200
GREP_MAX_HITS = 2000
GLOB_DEFAULT_MAX = 500
GLOB_MAX = 5000
FILE_TOOL_TIMEOUT = 60.0
DIFF_MAX_CHARS = 4000
EDIT_CANDIDATES = 3

JOB_BUFFER_CHARS = 100_000
"""A background job keeps the last 100,000 characters of its output."""
JOB_MAX_PER_SESSION = 8
JOB_OUTPUT_MAX_CHARS = 20_000
"""One job_output call returns at most this much new text."""
