"""Planning: files grouped into units (every copy of one session), each planned against the database into a
frozen Prepared, and the plans grouped into write batches."""
