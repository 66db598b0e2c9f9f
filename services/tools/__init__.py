"""The tool service (``ai-coding serve tools``): workspace file tools, bash and jobs in bubblewrap.

main.py builds the service; servicer.py adapts gRPC to runtime.py (sessions and
dispatch) through convert.py. The tools: files.py (read/write/edit, with
filestate.py's stale-read guard and editing.py's helpers), search.py
(glob/grep), process.py and jobs.py (bash and background jobs) running in
sandbox.py's bwrap command lines. paths.py resolves and checks every path;
schemas.py holds the JSON schemas and argument validation; limits.py the
numbers. harness.py drives a real service from blocking code (tests, bench).
"""
