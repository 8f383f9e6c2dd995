"""TopicBuckets: an example method plugin for the Memory Workbench (docs/plugin-checklist.md)."""
