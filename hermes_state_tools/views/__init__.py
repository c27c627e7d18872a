"""Read-only views of a database for people and scripts: status, session browsing, export."""
