"""timeweave's dbt package (macros/*.sql), shipped as package data so the Python doors can render the same plan file."""
