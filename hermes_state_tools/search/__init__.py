"""Full-text search: the query sanitizer (sanitize.py) and running a search (query.py)."""
