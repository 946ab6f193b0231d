//! Cache traces: readers, writers and synthetic generators.
