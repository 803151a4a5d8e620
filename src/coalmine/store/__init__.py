"""The run store: SQLite (WAL) plus content-addressed artifacts; the only user of sqlite3."""
