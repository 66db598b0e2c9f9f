"""The checkpoint store: snapshots of a workspace before every step that can change it.

A private, content-addressed object store per workspace under the data dir (never inside the
workspace nor its ``.git``): file contents are blobs, each directory is a tree object, so a
checkpoint writes only what changed since the last one (a stat cache decides which files to
read again). A restore runs from a journal, so a kill leaves the workspace before or after.
"""
