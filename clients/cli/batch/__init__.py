"""Batch work: many headless ``ai-coding run --json`` tasks, one workspace each (a Kubernetes
Indexed Job's pods, or a shell loop), and the summary of their results.

``tasks`` reads the tasks file, ``runner`` fetches a task's repository and runs it, leaving its
result in a results directory, ``results`` reads those directories back into a table.
"""
