"""The database file as a whole: opening it (opening.py), backups, the SQL dump, and the `SessionDB` facade."""
