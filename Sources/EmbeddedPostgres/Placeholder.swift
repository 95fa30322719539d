// EmbeddedPostgres
