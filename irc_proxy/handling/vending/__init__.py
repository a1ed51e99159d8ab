"""Credentials handed to clients: vended storage credentials and signed requests."""
