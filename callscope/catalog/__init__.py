"""Catalog database: SQLAlchemy tables, Alembic migrations, id allocation, key usage, call records."""
