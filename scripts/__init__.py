"""Entry points for make and CI."""
