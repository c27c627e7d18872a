"""Writing: one batch in one write transaction (writer.py), the rows it inserts (rows.py), and the staging
files the reader process fills and the writer copies in (staging.py). The writer never reads a file."""
