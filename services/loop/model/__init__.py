"""The loop's model engine: provider table, settings, streamed client, usage."""
